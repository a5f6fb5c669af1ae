package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoRowNumbers: a series whose timestamps are its row numbers,
// 1, 2, 3, ... read as Unix seconds, as data sets without times are
// published, has no clock (see fitClock). auto judges it without the
// time of day and without fitting its windows to a one-second interval;
// a new high pages once the warm-up is over, not a day of timestamps
// later: the rise below pages 29 samples in, at the first peak of the
// cycle it lifts above the old ones, where a day's wait (86,400 samples
// of a second) would never end. The same values a second apart in 2020
// keep the clock (and never page). The cycle, of 200 samples, is no
// day at any common interval, so no clock is found for it either (see
// cycle.go).
func TestAutoRowNumbers(t *testing.T) {
	const n, incident = 3000, 2000
	rng := rand.New(rand.NewPCG(7, 7))
	values := make([]float64, n)
	for i := range values {
		values[i] = 100 + 10*math.Sin(2*math.Pi*float64(i)/200) + rng.NormFloat64()
		if i >= incident { // a rise of 12 over 100 samples that stays
			values[i] += 12 * min(float64(i-incident+1)/100, 1)
		}
	}
	cfg := DefaultAutoConfig()

	rows := NewAuto(cfg)
	var restored *Auto
	paged := -1
	for i, x := range values {
		ts := int64(i+1) * 1000
		v := rows.Observe(ts, x)
		require.NotEqual(t, EvidenceTimeOfDay, v.Evidence, "row %d", i)
		if paged < 0 && v.Score >= cfg.Threshold && i >= incident {
			paged = i
		}
		if restored != nil {
			require.Equal(t, v, restored.Observe(ts, x), "row %d after the restore", i)
		}
		if i == 1000 {
			b, err := rows.MarshalBinary()
			require.NoError(t, err)
			restored = NewAuto(cfg)
			require.NoError(t, restored.UnmarshalBinary(b))
		}
	}
	require.GreaterOrEqual(t, paged, incident)
	require.Less(t, paged, incident+100, "the first peak of the cycle above the old ones pages")

	clock := NewAuto(cfg)
	start := int64(1_600_000_000_000) // 2020-09-13
	for i, x := range values[:100] {
		clock.Observe(start+int64(i)*1000, x)
	}
	require.False(t, clock.noClock)
	require.Equal(t, int64(maxSliceScale), clock.sliceScale(), "a real one-second interval is fitted")
}

// intervalChange runs ten seeds of Poisson counts of about 200 on a
// daily cycle over ten days, sampled first apart for three days and
// then apart for the rest, with an outage of five minutes at 1.5 times
// the count on day 8. It returns the pages outside the outage from day
// 5 and the outages paged. With check, a detector restored from a
// snapshot taken while the run of new gaps is under way judges the
// rest as the one that ran on.
func intervalChange(t *testing.T, first, then int64, check bool) (pages, paged int) {
	t.Helper()
	const day = 86400_000
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 3))
		d := NewAuto(DefaultAutoConfig())
		var r *Auto
		outage := int64(7*day + rng.IntN(day/60_000)*60_000)
		was, got := false, false
		for ts := int64(0); ts < 10*day; {
			lambda := 200 * (1 + 0.6*math.Sin(2*math.Pi*float64(ts)/day))
			in := ts >= outage && ts < outage+300_000
			if in {
				lambda *= 1.5
			}
			x := math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
			v := d.Observe(ts, x)
			if r != nil {
				require.Equal(t, v, r.Observe(ts, x), "seed %d at %d ms", seed, ts)
			}
			if v.Score >= 0.6 && !was && ts >= 4*day {
				switch {
				case in:
					got = true
				case ts < outage || ts >= outage+900_000:
					pages++
				}
			}
			was = v.State == StateAnomalous
			if ts < 3*day {
				ts += first
			} else {
				ts += then
			}
			if check && seed == 0 && ts == 3*day+10*then {
				require.Equal(t, 9, d.ivRun, "nine gaps at the new interval so far")
				snap, err := d.MarshalBinary()
				require.NoError(t, err)
				r = NewAuto(DefaultAutoConfig())
				require.NoError(t, r.UnmarshalBinary(snap))
			}
			if check && seed == 0 && ts == 4*day {
				require.Equal(t, then, d.interval, "refitted")
				r = nil
			}
		}
		if got {
			paged++
		}
	}
	return pages, paged
}

// TestAutoIntervalChange: a rule group's interval changed on a reload,
// from a minute to 15 s and back, while the detector keeps what it
// learnt. Fitted to the warm-up's interval for good, the first paged 62
// times over ten seeds' six days (3 for a series at 15 s from the
// start); now it refits after WarmUp gaps at the new interval. The
// second, refitted without rescaling the likelihoods' long runs, paged
// 121 times. Both still page every outage, and a restored detector
// carries on a run of new gaps.
func TestAutoIntervalChange(t *testing.T) {
	for _, c := range []struct{ first, then int64 }{{60_000, 15_000}, {15_000, 60_000}} {
		pages, paged := intervalChange(t, c.first, c.then, true)
		t.Logf("%d s then %d s: %d pages, %d of 10 outages paged", c.first/1000, c.then/1000, pages, paged)
		require.LessOrEqual(t, pages, 10, "%d s then %d s: pages outside the outage", c.first/1000, c.then/1000)
		require.Equal(t, 10, paged, "%d s then %d s: outages paged", c.first/1000, c.then/1000)
	}
}
