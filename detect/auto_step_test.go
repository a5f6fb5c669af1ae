package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoStepWayBack: a one-sample excursion makes two changes, out and
// back, and the step likelihood counted both, doubling a lone outlier's
// evidence. After an unusual change (stepBack spreads) the next is now
// measured from two samples back as well, whichever is smaller, so the
// way back counts for nothing while a move that goes on counts as
// before. Over two weeks of 1-minute noise in 20 series each, with
// records off (they are TestAutoRecordsOnNoise's), alerts fell from 17
// to 12 on Gaussian noise, 19 to 8 on Poisson counts and 36 to 32 on
// lognormal noise.
func TestAutoStepWayBack(t *testing.T) {
	cfg := DefaultAutoConfig()
	cfg.ExtremeTolerance = -1
	alerts := 0
	for _, kind := range plainNoises {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 13))
			d := NewAuto(cfg)
			for i := range 14 * 1440 {
				v := d.Observe(int64(i)*60_000, kind.draw(rng))
				if v.Score >= cfg.Threshold && d.quiet == cfg.Quiet { // an alert starts
					alerts++
				}
			}
		}
	}
	require.LessOrEqual(t, alerts, 60, "alerts on noise without records (72 before)")

	// The mechanism, on the step likelihood's recent average: the way
	// back from an outlier adds nothing, a move that goes on adds.
	rng := rand.New(rand.NewPCG(1, 13))
	d := NewAuto(cfg)
	i := 0
	feed := func(x float64) float64 {
		d.Observe(int64(i)*60_000, x)
		i++
		return d.stepLk.short.mean
	}
	for range 2000 {
		feed(100 + rng.NormFloat64())
	}
	out := feed(104.5)
	require.LessOrEqual(t, feed(100), out, "the way back from an outlier")
	for range 200 {
		feed(100 + rng.NormFloat64())
	}
	out = feed(104.5)
	require.Greater(t, feed(109), out, "a move that goes on")
}
