package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// wanderingDays draws days 5-minute samples of a metric with a daily
// cycle (100 ± 10) that also wanders over hours, as a machine's
// temperature does with its load: a slow random component (correlated
// over about three hours, spread 15) and a little noise (1). Within an
// hour's visit the samples lie near each other; from one day to the
// next the same hour lies some 20 apart.
func wanderingDays(seed uint64, days int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	const perDay = 288
	phi := math.Exp(-1.0 / 36) // a correlation time of 36 samples, three hours
	w := 0.0
	xs := make([]float64, days*perDay)
	for i := range xs {
		w = phi*w + 15*math.Sqrt(1-phi*phi)*rng.NormFloat64()
		xs[i] = 100 + 10*math.Sin(2*math.Pi*float64(i%perDay)/perDay) + w + rng.NormFloat64()
	}
	return xs
}

// TestAutoHourSpikeWaitsThreeDays: on a daily cycle whose hours differ
// from day to day by more than the noise within a visit, a slice's
// spread learnt from one or two visits is the noise's, and the first
// sample of the next visit lay many of those spreads from the slice's
// mean. The hour's spike now waits until every slice has seen three
// earlier days (hourSpikeAfter). Ten seeds, days 2 and 3: 49 pages
// with the hour's spike from the second day, 11 now, as many as over
// days 4 to 8. A one-sample dip of 60 still pages once the wait is
// over.
func TestAutoHourSpikeWaitsThreeDays(t *testing.T) {
	const perDay = 288
	cfg := DefaultAutoConfig()
	pages := 0
	for seed := range uint64(10) {
		xs := wanderingDays(seed, 4)
		pages += alertsAt(cfg, xs, 300_000, perDay, 3*perDay-1)
	}
	t.Logf("pages on days 2 and 3 of ten series: %d", pages)
	require.LessOrEqual(t, pages, 20)

	caught := 0
	for seed := range uint64(10) {
		xs := wanderingDays(seed, 8)
		at := 6*perDay + perDay/4 // 06:00 on the seventh day, the cycle's peak
		xs[at] -= 60
		if alertsAt(cfg, xs, 300_000, at, at) > 0 {
			caught++
		}
	}
	t.Logf("one-sample dips caught: %d of 10", caught)
	require.Equal(t, 10, caught)
}
