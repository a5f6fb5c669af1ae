package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCycleSearch: a daily cycle in samples is found at its period, the
// first time the samples cover three of it; series without one (noise,
// a random walk, a trend, a cycle of a period no interval gives) are
// searched to the end and given none. (One near a day's samples is
// taken for one: a 300-sample cycle is found at 288.)
func TestCycleSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	const from = 31 // the warm-up and the sample after it
	search := func(gen func(i int) float64) (period, at int) {
		c := &cycleSearch{}
		for i := range from {
			c.buf = append(c.buf, gen(i))
		}
		c.from = from
		for i := from; i < from+3*1440+10; i++ {
			if p := c.add(gen(i)); p != 0 {
				return p, len(c.buf) - from
			}
		}
		return 0, 0
	}
	daily := func(period int, noise float64) func(int) float64 {
		return func(i int) float64 {
			ph := 2 * math.Pi * float64(i) / float64(period)
			return 100 + 30*math.Sin(ph) + 10*math.Sin(2*ph+1) + noise*rng.NormFloat64()
		}
	}
	for _, p := range cyclePeriods {
		got, at := search(daily(p, 5))
		require.Equal(t, p, got, "a cycle of %d samples", p)
		require.Equal(t, 3*p, at)
	}
	// Counts on a daily cycle with bursts, hourly: found.
	got, _ := search(func(i int) float64 {
		lambda := 20 * (1 + 0.6*math.Sin(2*math.Pi*float64(i)/24))
		if rng.IntN(50) == 0 {
			lambda *= 4
		}
		return math.Round(lambda + math.Sqrt(lambda)*rng.NormFloat64())
	})
	require.Equal(t, 24, got)

	walk := 0.0
	for name, gen := range map[string]func(int) float64{
		"white noise":        func(int) float64 { return rng.NormFloat64() },
		"a random walk":      func(int) float64 { walk += rng.NormFloat64(); return walk },
		"a trend":            func(i int) float64 { return float64(i) + rng.NormFloat64() },
		"a 200-sample cycle": daily(200, 5),
		"a constant":         func(int) float64 { return 7 },
	} {
		got, at := search(gen)
		require.Equal(t, -1, got, name)
		require.Equal(t, 3*1440, at, name)
	}
}

// TestAutoCycle: a series timestamped by row number with a daily cycle
// of 24 samples (hourly data) is given a clock with days of 24 samples
// once three of them have been seen. Its time of day then judges it: a
// value of the cycle's peak at its trough pages as a time-of-day
// anomaly, which without the clock lies within the series' range and
// goes unseen. A snapshot after the clock was given keeps it; one
// taken during the search does not keep the search.
func TestAutoCycle(t *testing.T) {
	const n, incident = 24 * 30, 24*25 + 18 // the trough of day 25
	rng := rand.New(rand.NewPCG(5, 1))
	values := make([]float64, n)
	for i := range values {
		values[i] = 100 + 40*math.Sin(2*math.Pi*float64(i)/24) + 2*rng.NormFloat64()
	}
	values[incident] = 135 // about the peak's value, at the trough (about 60)
	cfg := DefaultAutoConfig()

	run := func(ts func(i int) int64) (paged bool, ev Evidence, a *Auto) {
		a = NewAuto(cfg)
		var restored *Auto
		for i, x := range values {
			v := a.Observe(ts(i), x)
			if restored != nil {
				require.Equal(t, v, restored.Observe(ts(i), x), "row %d after the restore", i)
			}
			if i == incident {
				paged, ev = v.Score >= cfg.Threshold, v.Evidence
			}
			if i == 24*10 {
				b, err := a.MarshalBinary()
				require.NoError(t, err)
				restored = NewAuto(cfg)
				require.NoError(t, restored.UnmarshalBinary(b))
			}
		}
		return paged, ev, a
	}
	paged, ev, a := run(func(i int) int64 { return int64(i+1) * 1000 })
	// A snapshot taken during the search keeps none of its samples: the
	// series restored from it is not searched again.
	mid := NewAuto(cfg)
	for i, x := range values[:60] {
		mid.Observe(int64(i+1)*1000, x)
	}
	b, err := mid.MarshalBinary()
	require.NoError(t, err)
	restored := NewAuto(cfg)
	require.NoError(t, restored.UnmarshalBinary(b))
	for i, x := range values[60:] {
		restored.Observe(int64(i+61)*1000, x)
	}
	require.Zero(t, restored.synthStep)
	require.True(t, restored.noClock)

	require.Equal(t, int64(dayMs/24), a.synthStep, "days of 24 samples")
	require.True(t, paged, "the peak's value at the trough pages")
	require.Equal(t, EvidenceTimeOfDay, ev)

	// The same with its real hourly clock pages as well: the cycle's
	// clock gives what the real one gives.
	start := int64(1_600_000_000_000)
	paged, _, _ = run(func(i int) int64 { return start + int64(i)*dayMs/24 })
	require.True(t, paged)
}
