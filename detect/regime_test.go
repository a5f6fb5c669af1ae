package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// lastingChange is a 5-minute gauge on a daily cycle (100 ± 20, noise
// 2) for two weeks, every value from day 5 at 14:00 on times factor, and
// one incident a day from day 8 on: two hours at 10 of the new regime's
// noise above or below the cycle, at a random time. It returns the rows
// each incident starts at and the row of the change.
func lastingChange(seed uint64, factor float64) (xs []float64, incidents []int, change int) {
	const perDay = 288
	rng := rand.New(rand.NewPCG(seed, 31))
	xs = make([]float64, 14*perDay)
	change = 5*perDay + 14*12
	for day := 8; day < 14; day++ {
		incidents = append(incidents, day*perDay+rng.IntN(perDay-24))
	}
	for i := range xs {
		x := 100 + 20*math.Sin(2*math.Pi*float64(i)/perDay) + 2*rng.NormFloat64()
		for k, at := range incidents {
			if i >= at && i < at+24 {
				x += float64(1-2*(k%2)) * 20
			}
		}
		if i >= change {
			x *= factor
		}
		xs[i] = x
	}
	return xs, incidents, change
}

// pagedAfter runs a fresh detector of config cfg over xs, 5-minute
// samples, and reports how many of the incidents (24 samples from each
// start) it alerted in and how many alerts came outside them, from a
// day after the change at row change on (the change's own are not
// counted).
func pagedAfter(cfg AutoConfig, xs []float64, incidents []int, change int) (caught, pages int) {
	return pagedAfterHook(cfg, xs, incidents, change, nil)
}

// pagedAfterHook is pagedAfter with before, when not nil, called with
// the detector before each sample.
func pagedAfterHook(cfg AutoConfig, xs []float64, incidents []int, change int, before func(*Auto)) (caught, pages int) {
	const step, perDay = 300_000, 288
	d := NewAuto(cfg)
	hit := make([]bool, len(incidents))
	for i, x := range xs {
		if before != nil {
			before(d)
		}
		v := d.Observe(int64(i)*step, x)
		if v.Score < cfg.Threshold || d.quiet != cfg.Quiet || i < change+perDay {
			continue // no alert, or the change's own
		}
		in := false
		for k, at := range incidents {
			if i >= at && i < at+24 {
				hit[k], in = true, true
			}
		}
		if !in {
			pages++
		}
	}
	for _, h := range hit {
		if h {
			caught++
		}
	}
	return caught, pages
}

// TestAutoLastingChange: a series that doubles or halves for good pages
// its later incidents as the same series without the change does (ten
// seeds: 57 of 60 incidents and no page outside them as it is; 56 or 55
// and none doubled or halved; 57 and none with a constant of 10,000
// added, where the ratio of the levels gave 41 and 14 doubled). Before
// regimes the estimates kept the change as spread for days: doubled, 30
// of 60 and 3 pages outside them; halved, 15 and 5.
func TestAutoLastingChange(t *testing.T) {
	cfg := DefaultAutoConfig()
	run := func(factor, offset float64) (caught, pages int) {
		for seed := range uint64(10) {
			xs, incidents, change := lastingChange(seed, factor)
			for i := range xs {
				xs[i] += offset
			}
			c, p := pagedAfter(cfg, xs, incidents, change)
			caught, pages = caught+c, pages+p
		}
		return caught, pages
	}
	caught, pages := run(1, 0)
	t.Logf("as it is: %d of 60 incidents paged, %d pages outside them", caught, pages)
	require.GreaterOrEqual(t, caught, 54, "incidents paged as it is")
	// And with a constant of 10,000 added (a gauge with an offset, as
	// bytes or kelvins have): the cycle doubles or halves, the constant
	// does not, so the ratio of the levels (1.01 or 0.995) says nothing
	// of the move; the line through what the run did against what the
	// estimates expected does (see regime.fit).
	for _, offset := range []float64{0, 10_000} {
		for _, factor := range []float64{2, 0.5} {
			c, p := run(factor, offset)
			t.Logf("times %g from day 5, %g added: %d of 60 incidents paged, %d pages outside them", factor, offset, c, p)
			require.GreaterOrEqual(t, c, caught-3, "incidents paged, times %g, %g added", factor, offset)
			require.LessOrEqual(t, p, pages+2, "pages outside the incidents, times %g, %g added", factor, offset)
		}
	}
}

// TestAutoRegimeKeepsItsNoise: a gauge whose level falls for good by
// far more than its noise (a memory share after a restart, as a series
// normalised by its range shows it: 100 with noise 2, 70 lower from day
// 5 on) pages its later incidents as the same series without the fall
// does. The new regime's ratio (about 0.3) is no change of its noise:
// the spreads shrink only as far as the step's spread, learnt over the
// run, has (see regimeStep). With every spread times the ratio, the
// noise paged 41 times outside the incidents over ten seeds, and 5 of
// the 60 incidents went unseen; now 4 and none; without the fall, 1
// and none.
func TestAutoRegimeKeepsItsNoise(t *testing.T) {
	const perDay = 288
	cfg := DefaultAutoConfig()
	run := func(fall float64) (caught, pages int) {
		for seed := range uint64(10) {
			rng := rand.New(rand.NewPCG(seed, 41))
			xs := make([]float64, 14*perDay)
			change := 5*perDay + 14*12
			var incidents []int
			for day := 8; day < 14; day++ {
				incidents = append(incidents, day*perDay+rng.IntN(perDay-24))
			}
			for i := range xs {
				x := 100 + 2*rng.NormFloat64()
				for k, at := range incidents {
					if i >= at && i < at+24 {
						x += float64(1-2*(k%2)) * 20
					}
				}
				if i >= change {
					x -= fall
				}
				xs[i] = x
			}
			c, p := pagedAfter(cfg, xs, incidents, change)
			caught, pages = caught+c, pages+p
		}
		return caught, pages
	}
	caught, pages := run(0)
	t.Logf("as it is: %d of 60 incidents paged, %d pages outside them", caught, pages)
	c, p := run(70)
	t.Logf("70 lower from day 5: %d of 60 incidents paged, %d pages outside them", c, p)
	require.GreaterOrEqual(t, c, caught-3, "incidents paged")
	// Nine weeks of series after the fall: fewer than one page a week.
	// The new regime's bars come from its run's day, a short history
	// that noise soon beats, and a record beyond them must lie beyond
	// noise's reach (Auto.hiRun): with the band's shortcut, 9 pages.
	require.Less(t, p, 9, "pages outside the incidents")
}

// TestAutoRegimeKeepsItsExtremes: the records' bars after a new regime
// are at least the run's own extremes. A series at 40 that falls to
// about 0.5 for good and bursts to 12 every two hours meets its bursts
// in the run's day; moved from the old regime, the highest value was
// 40 × the ratio, about 0.6, and each burst after the regime was a
// record again (NAB's grok_asg_anomaly: two false alarms).
func TestAutoRegimeKeepsItsExtremes(t *testing.T) {
	const step, perDay = 300_000, 288
	rng := rand.New(rand.NewPCG(7, 7))
	d := NewAuto(DefaultAutoConfig())
	change := 4 * perDay
	runHi, begun := 0.0, false
	for i := range 8 * perDay {
		x := 40 + rng.NormFloat64()
		if i >= change {
			x = 0.5 * rng.Float64()
			if i%24 == 5 { // not on the regime's sample, a day after the change
				x = 11 + 2*rng.Float64()
			}
			if !begun {
				runHi = max(runHi, x)
			}
		}
		n := d.reg.begun
		v := d.Observe(int64(i)*step, x)
		if d.reg.begun > n {
			begun = true
			require.GreaterOrEqual(t, d.hi, runHi, "row %d: the highest value", i)
			require.Less(t, d.hi, 40.0)
			require.True(t, d.hiRun, "a run's extreme")
			r := restoredAuto(t, d, d.cfg)
			require.Equal(t, d.hiRun, r.hiRun, "restored")
			require.Equal(t, d.hi, r.hi, "restored")
		} else if begun {
			require.False(t, v.Evidence == EvidenceRecord && v.Score >= d.cfg.Threshold, "row %d: a burst as large as the run's is no record", i)
		}
	}
	require.True(t, begun, "a new regime")
}

// TestAutoRegimeSnapshot: a run towards a new regime is kept in
// snapshots with the estimates saved at its start; a detector restored
// within the run judges the rest as the one that ran on, and the
// regime begins at the same sample in both.
func TestAutoRegimeSnapshot(t *testing.T) {
	const step = 300_000
	cfg := DefaultAutoConfig()
	xs, _, change := lastingChange(1, 2)
	cut := change + regimeRun/2
	d := NewAuto(cfg)
	for i := range cut {
		d.Observe(int64(i)*step, xs[i])
	}
	require.NotZero(t, d.reg.side, "a run under way at the cut")
	r := restoredAuto(t, d, cfg)
	began := false
	for i := cut; i < len(xs); i++ {
		require.Equal(t, d.Observe(int64(i)*step, xs[i]), r.Observe(int64(i)*step, xs[i]), "row %d", i)
		require.Equal(t, d.level, r.level, "row %d", i)
		began = began || d.reg.side == 0
	}
	require.True(t, began, "the run ended")
	require.InDelta(t, 2, r.level.Loc()/autoLevelAfter(t, cfg, xs[:change], step), 0.3, "the level doubled")
}

// restoredAuto is a detector of config cfg restored from d's snapshot,
// whose own snapshot is the same bytes.
func restoredAuto(t *testing.T, d *Auto, cfg AutoConfig) *Auto {
	t.Helper()
	snap, err := d.MarshalBinary()
	require.NoError(t, err)
	r := NewAuto(cfg)
	require.NoError(t, r.UnmarshalBinary(snap))
	again, err := r.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, snap, again, "snapshot after restoring")
	return r
}

// autoLevelAfter is the level of a fresh detector after xs.
func autoLevelAfter(t *testing.T, cfg AutoConfig, xs []float64, step int64) float64 {
	t.Helper()
	d := NewAuto(cfg)
	for i, x := range xs {
		d.Observe(int64(i)*step, x)
	}
	return d.level.Loc()
}

// TestAutoRegimeNeedsADay: a doubling that lasts 20 hours is an
// incident, and no regime begins; one that lasts 30 hours is a new
// regime a day after it began, and the way back another, a day after
// it.
func TestAutoRegimeNeedsADay(t *testing.T) {
	const step, perDay = 300_000, 288
	cfg := DefaultAutoConfig()
	begun := func(hours int) (at []int) {
		xs, _, change := lastingChange(2, 1)
		for i := change; i < change+hours*12; i++ {
			xs[i] *= 2
		}
		d := NewAuto(cfg)
		for i, x := range xs {
			n := d.reg.begun
			d.Observe(int64(i)*step, x)
			if d.reg.begun > n {
				at = append(at, i)
			}
		}
		return at
	}
	require.Empty(t, begun(20), "20 hours")
	_, _, change := lastingChange(2, 1)
	at := begun(30)
	require.Len(t, at, 2, "30 hours: regimes at %v", at)
	require.InDelta(t, change+perDay, at[0], 2, "the first, a day after the change")
	require.InDelta(t, change+30*12+perDay, at[1], 2, "the second, a day after the way back")
}

// TestAutoShifted: Verdict.Shifted is true while a run beyond the
// estimates from before it is under way, and only then. Doubled for
// good, it holds from the change until the run becomes a new regime a
// day later; a doubling of two hours holds while it lasts; on the
// series as it is, never. A rule keeps an alert on such a move firing
// while Shifted holds (rules, TestAutoLastingShiftIsOneIncident).
func TestAutoShifted(t *testing.T) {
	const step, perDay = 300_000, 288
	shifted := func(hours int) (first, last, n int) {
		xs, _, change := lastingChange(3, 1)
		for i := change; i < change+hours*12 && i < len(xs); i++ {
			xs[i] *= 2
		}
		d := NewAuto(DefaultAutoConfig())
		first, last = -1, -1
		for i, x := range xs[:change+2*perDay] {
			if d.Observe(int64(i)*step, x).Shifted {
				if first < 0 {
					first = i
				}
				last = i
				n++
			}
		}
		return first - change, last - change, n
	}
	first, last, n := shifted(0)
	require.Zero(t, n, "as it is: shifted at %d to %d", first, last)
	first, last, n = shifted(2)
	require.Equal(t, 0, first, "two hours: from the change")
	require.Equal(t, 2*12-1, last, "two hours: to its last sample")
	require.Equal(t, 2*12, n)
	first, last, n = shifted(100)
	require.Equal(t, 0, first, "for good: from the change")
	require.InDelta(t, perDay, last, 2, "for good: until the new regime a day on")
	require.Equal(t, last+1, n, "for good: throughout")
}

// TestAutoRegimeRestoredMidRun: a snapshot of format 39, which kept no
// line through the run's samples, restored halfway through a run on a
// gauge with 10,000 added whose daily cycle halves for good. The
// samples before the restore count at the run's means (from its sums),
// and the line is drawn from those after it: the later incidents page
// as on a detector that ran through (ten seeds). Counted at 0 instead,
// the restored run paged 19 of 60 incidents and 15 times outside them.
func TestAutoRegimeRestoredMidRun(t *testing.T) {
	cfg := DefaultAutoConfig()
	var caught, pages, ranCaught, ranPages int
	for seed := range uint64(10) {
		xs, incidents, change := lastingChange(seed, 0.5)
		for i := range xs {
			xs[i] += 10_000
		}
		c, p := pagedAfter(cfg, xs, incidents, change)
		ranCaught, ranPages = ranCaught+c, ranPages+p
		restored := false
		c, p = pagedAfterHook(cfg, xs, incidents, change, func(a *Auto) {
			if restored || a.reg.n != 50 {
				return
			}
			restored = true
			// The run as format 39 wrote it, read back as format 39.
			r := &a.reg
			w := &encoder{}
			w.u8(uint8(r.side))
			w.u64(uint64(r.n))
			w.f64(r.sum)
			w.f64(r.exp)
			w.f64(r.lo)
			w.f64(r.hi)
			w.i64(r.from)
			r.before.encode(w)
			// Format 39's estimates end before the spike path's two
			// counts that format 43 added.
			w.b = w.b[:len(w.b)-2*8]
			d := &decoder{b: w.b, version: 39}
			a.decodeRegime(d)
			require.NoError(t, d.finish())
		})
		require.True(t, restored, "seed %d: no run of 50 samples to restore within", seed)
		caught, pages = caught+c, pages+p
	}
	t.Logf("ran through: %d of 60 incidents paged, %d pages outside them; restored mid-run: %d, %d", ranCaught, ranPages, caught, pages)
	require.GreaterOrEqual(t, caught, ranCaught-3, "incidents paged after the restore")
	require.LessOrEqual(t, pages, ranPages+2, "pages outside the incidents after the restore")
}
