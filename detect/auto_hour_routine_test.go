package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoHourRoutine: a series that steps out of its bounds for a
// sample once a day, at a random minute of the same busy hour (a queue
// that forms only then, a percentile that crosses a histogram's bucket
// bound only at the busy hour's traffic), paged every day: at one a day
// its crossings never exceeded SpikeRate of all its samples. They do
// exceed it of the hour's samples, and after the first two they are the
// hour's routine (hourRoutine): the spike path pages them no more. The
// same step at another hour, where none came before, still pages.
func TestAutoHourRoutine(t *testing.T) {
	const days = 10
	for seed := range uint64(5) {
		a := NewAuto(DefaultAutoConfig())
		rng := rand.New(rand.NewPCG(seed, 21))
		busyPages, spikePages, otherPaged := 0, 0, false
		other := 8*1440 + 3*60 + 17 // 03:17 on day 8
		prev := StateNormal
		for d := range days {
			spike := d*1440 + 14*60 + rng.IntN(60) // within 14:00-15:00
			for m := range 1440 {
				i := d*1440 + m
				x := 100 + 5*rng.NormFloat64()
				if i == spike || i == other {
					x *= 3
				}
				v := a.Observe(int64(i)*60_000, x)
				alert := v.Score >= 0.6 && prev != StateAnomalous
				prev = v.State
				switch {
				case alert && i == spike:
					busyPages++
					if v.Evidence == EvidenceSpike {
						spikePages++
					}
				case alert && i == other:
					otherPaged = true
				}
			}
		}
		// The first two days page as spikes; the likelihoods, which
		// judge the run of samples around the step, may page a day or
		// two more before they learn it.
		require.LessOrEqual(t, spikePages, 2, "seed %d: the busy hour's daily step paged as a spike %d of %d days", seed, spikePages, days)
		require.LessOrEqual(t, busyPages, days/2, "seed %d: the busy hour's daily step paged %d of %d days", seed, busyPages, days)
		require.True(t, otherPaged, "seed %d: the step at another hour did not page", seed)
	}
}
