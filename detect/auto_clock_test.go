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

// TestAutoJitteredTimes: timestamps that wander by a few seconds about
// their due times, as those taken when a scrape ran rather than when
// it was due, are read on the grid (see onGrid). A noiseless daily
// square wave, 10 by night and 50 from 09:00 to 18:00, sampled every 5
// minutes or every hour, each time moved by up to a fiftieth, a
// twentieth or a tenth of the interval either way: ten seeds' days 3 to
// 14 (5 minutes) and 7 to 40 (hourly) raise no alert. Before, the
// samples due at 09:00 and 18:00 fell into the hour before on some days
// and not on others: 67 and 53 alerts at 5 minutes, 4 and 4 hourly.
// Moved by a tenth, the warm-up's least gap was a fifth short of the
// interval, no grid was found, and the 5-minute series paged twice; the
// interval is now the warm-up's median gap (see warmUp.median). A
// detector restored half-way judges the rest as the one that ran on,
// its grid fitted again from the interval.
func TestAutoJitteredTimes(t *testing.T) {
	const t0 = int64(1_600_041_600_000) // 2020-09-14 00:00 UTC
	for _, step := range []int64{5 * 60_000, 3_600_000} {
		days := map[int64]int{5 * 60_000: 14, 3_600_000: 40}[step]
		n := int(int64(days) * dayMs / step)
		for _, share := range []float64{0.02, 0.05, 0.1} {
			alerts := 0
			for seed := range uint64(10) {
				rng := rand.New(rand.NewPCG(seed, 9))
				d := NewAuto(DefaultAutoConfig())
				var restored *Auto
				for i := range n {
					ts := t0 + int64(i)*step
					x := 10.0
					if h := ts / 3_600_000 % 24; h >= 9 && h < 18 {
						x = 50
					}
					// Whole seconds, as exports write them.
					ts += 1000 * int64(math.Round((rng.Float64()*2-1)*share*float64(step)/1000))
					v := d.Observe(ts, x)
					if i >= n/7 && v.Score >= d.cfg.Threshold {
						alerts++
					}
					if i == n/2 {
						require.Equal(t, step, d.grid, "the grid, times moved by up to %v", share)
						snap, err := d.MarshalBinary()
						require.NoError(t, err)
						restored = NewAuto(DefaultAutoConfig())
						require.NoError(t, restored.UnmarshalBinary(snap))
						require.Equal(t, d.grid, restored.grid, "grid fitted on restore")
					} else if restored != nil {
						require.Equal(t, v, restored.Observe(ts, x), "restored, row %d", i)
					}
				}
			}
			t.Logf("every %d s, times moved by up to %v of it: %d alerts", step/1000, share, alerts)
			require.Zero(t, alerts, "every %d s, times moved by up to %v of it", step/1000, share)
		}
	}
}

// TestAutoOnGrid: how onGrid reads a time on a 5-minute grid (ms after
// midnight; the previous sample read at prev).
func TestAutoOnGrid(t *testing.T) {
	const m = 60_000
	a := NewAuto(DefaultAutoConfig())
	a.grid = 5 * m
	for _, tc := range []struct {
		prev, ts, want int64
		why            string
	}{
		{10 * m, 15*m + 6_000, 15 * m, "6 s after a round point"},
		{10 * m, 15*m - 37_000, 15 * m, "within an eighth (37.5 s) before one"},
		{10 * m, 15*m - 38_000, 15*m - 38_000, "beyond an eighth of round and of prev + 5 minutes"},
		{9 * m, 14*m + 20_000, 14 * m, "on its own grid (4 past), 20 s late"},
		{9 * m, 19*m - 30_000, 19 * m, "two intervals on its own grid, 30 s early"},
		{9 * m, 13 * m, 13 * m, "a re-phase: four minutes on, read as it comes"},
		{9 * m, 10 * m, 10 * m, "one minute on: a finer interval, as it comes"},
	} {
		a.prevTs = tc.prev
		require.Equal(t, tc.want, a.onGrid(tc.ts), tc.why)
	}
}

// TestWarmUpInterval: the interval is the median gap of the warm-up,
// through missed samples and wandering times, and auto measures the
// same one as WarmUpInterval, which `seismo bench nab` uses to count
// series timestamped by row number.
func TestWarmUpInterval(t *testing.T) {
	const step = 300_000
	times := func(f func(i int) int64) []int64 {
		ts := make([]int64, 0, 40)
		for i := range 40 {
			ts = append(ts, int64(i)*step+f(i))
		}
		return ts
	}
	regular := times(func(int) int64 { return 0 })
	require.Equal(t, int64(step), WarmUpInterval(regular, 30))
	var missed []int64 // every third sample missing: gaps of one and two intervals
	for i, ts := range regular {
		if i%3 != 2 {
			missed = append(missed, ts)
		}
	}
	require.Equal(t, int64(step), WarmUpInterval(missed, 30))
	rng := rand.New(rand.NewPCG(5, 5))
	wander := times(func(int) int64 { return int64((rng.Float64()*2 - 1) * 0.1 * step) })
	got := WarmUpInterval(wander, 30)
	require.InDelta(t, step, got, 0.1*step, "times moved by up to a tenth")
	least := int64(math.MaxInt64)
	for i := 1; i <= 30; i++ {
		least = min(least, wander[i]-wander[i-1])
	}
	require.Less(t, least, int64(0.9*step), "the least gap is more than a tenth short")
	d := NewAuto(DefaultAutoConfig())
	for i, ts := range wander {
		d.Observe(1_600_000_000_000+ts, float64(i%7))
	}
	require.Equal(t, got, d.interval, "auto's own")
	require.Equal(t, int64(step), d.grid)
	require.Zero(t, WarmUpInterval(regular[:1], 30), "no gap")
}
