package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoRecordAtUsualHour: on a steady daily cycle (5-minute samples,
// ±30 %, 2 % noise) a daily peak that beats the record by a hair lies
// where that hour has been before and is not news; a surge at the same
// hour beats the record and the hour's usual value, and is.
func TestAutoRecordAtUsualHour(t *testing.T) {
	const step = 5 * 60_000
	perDay := dayMs / step
	rng := rand.New(rand.NewPCG(2, 3))
	xs := make([]float64, 14*perDay)
	for i := range xs {
		xs[i] = 100 * (1 + 0.3*daySine(int64(i)*step)) * (1 + 0.02*rng.NormFloat64())
	}
	cfg := DefaultAutoConfig()
	require.Less(t, maxScoreAt(cfg, xs, step, 4*perDay, len(xs)-1), cfg.Threshold, "noise records at the daily peak")

	peak := 12*perDay + perDay/4 // the cycle's peak on day 12
	for i := peak; i < peak+6; i++ {
		xs[i] *= 1.25
	}
	require.GreaterOrEqual(t, maxScoreAt(cfg, xs, step, peak, peak+6), cfg.Threshold, "a surge at the peak hour")
}
