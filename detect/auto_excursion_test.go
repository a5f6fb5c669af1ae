package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoBelowThresholdOncePerExcursion: below the threshold a score is
// reported only at its excursion's peak so far, so that a lower threshold
// sees each excursion once as it rises, not on every sample of its
// plateau; after a calm spell the next excursion is reported again.
// Recurring bursts on a count series are what makes sub-threshold
// excursions: the likelihood learns them, so later bursts score below the
// threshold.
func TestAutoBelowThresholdOncePerExcursion(t *testing.T) {
	cfg := DefaultAutoConfig()
	a := NewAuto(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	var peak float64 // the detector's excursion peak before the sample
	reported, plateau, excursions := 0, 0, 0
	for i := range 5000 {
		lambda := 20.0
		if i%110 >= 100 { // ten samples at three times the rate
			lambda = 60
		}
		x := math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
		v := a.Observe(int64(i)*60_000, x)
		if v.State == StateNormal && v.Score > 0 {
			require.Less(t, v.Score, cfg.Threshold)
			require.Greater(t, v.Score, peak, "row %d: a score below the peak of its excursion was reported", i)
			reported++
		}
		if v.State == StateNormal && v.Score == 0 && a.runPeak > 0 && a.runPeak == peak {
			plateau++ // within an excursion, not its peak: not reported
		}
		if a.runPeak < peak {
			excursions++ // calm again: the next excursion starts afresh
		}
		peak = a.runPeak
	}
	require.Greater(t, reported, 20, "sub-threshold excursions are reported")
	require.Greater(t, plateau, reported, "most samples of an excursion are not its peak")
	require.Greater(t, excursions, 20, "excursions end after a calm spell")
}
