package detect

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLattice: the lattice auto finds for a series' values, and whether
// it models them as counts.
func TestLattice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		m      float64 // the steps per unit it ends on
		counts bool    // whether the count model is on
		off    bool    // whether it gave up on any lattice
	}{
		{"whole numbers", []float64{0, 3, 1, 7, 2}, 1, true, false},
		{"whole numbers with a float sum's rounding", []float64{3, 0.1 + 0.2 + 0.7 + 1, 4}, 1, true, false},
		{"per second over a minute", []float64{0, 7.0 / 60, 0.5, 1.0 / 60, 2}, 60, true, false},
		{"normalised by a range of 31, printed to six decimals", []float64{0.032258, 0.451613, 0.064516, 1}, 31, true, false},
		{"the first value a half, then eighths", []float64{0.5, 0.125, 0.375}, 8, true, false},
		{"a share printed to three decimals", []float64{0.134, 0.136, 0.2, 0.251}, 1000, false, false},
		{"tenths", []float64{1.5, 2.5, 3.1}, 10, false, false},
		{"a measurement", []float64{0.7853981633974483, 0.1234567, 3.3}, 1, false, true},
		{"a lattice finer than counts", []float64{1.0 / 1009, 5.0 / 1009}, 1, false, true},
		{"near a count of 1/31 only to its four decimals' rounding", []float64{0.3227}, 1, false, true},
		{"nanoseconds in seconds, within a billionth of 0", []float64{4.2e-11, 3.9e-11, 4.4e-11}, 1, false, true},
		{"0 and counts", []float64{0, 0, 2, 0}, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuto(DefaultAutoConfig())
			for i, x := range tc.values {
				a.Observe(int64(i)*60_000, x)
			}
			require.Equal(t, tc.off, a.offLattice, "off any lattice")
			require.Equal(t, !tc.counts, a.fraction, "count model off")
			if !tc.off {
				require.Equal(t, tc.m, a.perQuantum)
				for _, x := range tc.values {
					require.True(t, a.onLattice(x), "%v on the lattice of 1/%v", x, a.perQuantum)
				}
			}
		})
	}
}

// TestAutoCountsInAnotherUnit: the same counts exported per second over
// a minute (multiples of 1/60) get the same verdicts as the counts
// themselves, scaled: the count model's Poisson floors are in the
// counts' unit. Without the lattice, the rates were measurements, and
// sparse counts normalised or per second lost up to 6 points on the
// synthetic families (docs/detectors.md, "Counts in another unit").
func TestAutoCountsInAnotherUnit(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 60))
		counts, rates := NewAuto(DefaultAutoConfig()), NewAuto(DefaultAutoConfig())
		alerts, differ := 0, 0
		for i := range 3 * 1440 {
			ts := int64(i) * 60_000
			lambda := 0.3 * (1 + 0.5*math.Sin(2*math.Pi*float64(i)/1440))
			if i >= 2*1440+600 && i < 2*1440+615 { // an outage's errors
				lambda += 4
			}
			x := poissonCount(rng, lambda)
			vc, vr := counts.Observe(ts, x), rates.Observe(ts, x/60)
			if vc.Score >= counts.cfg.Threshold {
				alerts++
			}
			if vc.State != vr.State || math.Abs(vc.Score-vr.Score) > 1e-9 ||
				math.Abs(vc.Expected/60-vr.Expected) > 1e-9*math.Max(1, math.Abs(vr.Expected)) {
				differ++
			}
		}
		require.Positive(t, alerts, "seed %d: the outage pages", seed)
		require.Zero(t, differ, "seed %d: samples whose verdict differs between counts and the same per second", seed)
		require.False(t, rates.fraction, "seed %d: the rates are counts", seed)
	}
}

// TestAutoLatticeSnapshot: a restored detector keeps the lattice its
// values were found on, and so the count model and its floors.
func TestAutoLatticeSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 60))
	ts := make([]int64, 4000)
	vs := make([]float64, len(ts))
	for i := range ts {
		ts[i] = int64(i) * 60_000
		vs[i] = poissonCount(rng, 0.5) / 60
	}
	roundTripMidStream(t, ts, vs)
	a := NewAuto(DefaultAutoConfig())
	for i := range 1000 {
		a.Observe(ts[i], vs[i])
	}
	require.Equal(t, 60.0, a.perQuantum)
	snap, err := a.MarshalBinary()
	require.NoError(t, err)
	b := NewAuto(DefaultAutoConfig())
	require.NoError(t, b.UnmarshalBinary(snap))
	require.Equal(t, [2]float64{a.perQuantum, a.latticeTol}, [2]float64{b.perQuantum, b.latticeTol})
	require.False(t, b.fraction)
}

// FuzzLattice feeds arbitrary values to the lattice: it must end, keep
// a whole number of steps per unit within its bound, and, while it holds
// one, hold every value seen (each a multiple of 1/m to its tolerance).
func FuzzLattice(f *testing.F) {
	f.Add(0.5, 0.125, 7.0/60, 3.0)
	f.Add(0.032258, 0.451613, 1.0, 0.0)
	f.Add(0.134, 0.2, 1e-310, -2.5)
	f.Add(math.Pi, 1e300, -0.0, 5e-324)
	f.Fuzz(func(t *testing.T, x1, x2, x3, x4 float64) {
		a := NewAuto(DefaultAutoConfig())
		var seen []float64
		for i, x := range []float64{x1, x2, x3, x4} {
			a.Observe(int64(i)*60_000, x)
			if finite(x) {
				seen = append(seen, x)
			}
			m := a.perQuantum
			require.True(t, m >= 1 && m <= maxPerQuantum && m == math.Trunc(m), "steps per unit %v", m)
			require.Equal(t, 1/m, a.quantum)
			if a.offLattice {
				require.True(t, a.fraction)
				continue
			}
			for _, v := range seen {
				require.True(t, a.onLattice(v), "%v off the lattice of 1/%v (tolerance %v) after %v", v, m, a.latticeTol, seen)
			}
		}

		// Each value held for two samples, so that each change leaves a
		// repeated value: the step off a lattice stays a finite
		// multiple of the changes' precision, and a snapshot restores it.
		h := NewAuto(DefaultAutoConfig())
		for i, x := range []float64{x1, x1, x2, x2, x3, x3, x4, x4, x1, x1, x3, x3} {
			h.Observe(int64(i)*60_000, x)
			c := h.chg
			require.True(t, finite(c.q) && c.q >= 0 && finite(c.prec) && c.prec >= 0, "step %v, precision %v", c.q, c.prec)
			require.True(t, c.q == 0 || 2*c.prec <= latticeSlack*c.q, "step %v finer than its precision %v tells", c.q, c.prec)
		}
		snap, err := h.MarshalBinary()
		require.NoError(t, err)
		r := NewAuto(DefaultAutoConfig())
		require.NoError(t, r.UnmarshalBinary(snap))
		require.Equal(t, h.chg, r.chg)
	})
}

// steppingGauge is a gauge written to two decimals, such as a disk's
// fill as a share or a load average, that steps by 0.02 one minute in
// every minutes on average and otherwise repeats its value: a random
// walk held near 0.5, n minutes long.
func steppingGauge(seed uint64, every, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, uint64(every)))
	xs := make([]float64, n)
	v := 25 // in steps of 0.02
	for i := range xs {
		if rng.IntN(every) == 0 {
			if rng.Float64() < 0.5-0.05*float64(v-25) {
				v++
			} else {
				v--
			}
		}
		xs[i] = float64(v) / 50
	}
	return xs
}

// TestAutoReadingResolution: a gauge written to a lattice of decimals
// that steps seldom, by one step, does not page each step (see
// Auto.resolution), and a move of several steps on it still pages at
// once. Before, sixteen such gauges of two weeks raised 572 alerts
// (spikes, the changes' likelihood, and the start of each hour whose
// slice had not seen the new value); now 78, most of them in the first
// days, before a gauge has spanned two steps. A share that has taken
// only two values one step apart is a state, not a rounding: the share
// of two targets up, falling from 1 to 0.5 for half an hour three times
// in ten days, pages each time (with the floor on it, the third time
// did not).
func TestAutoReadingResolution(t *testing.T) {
	const n = 14 * 1440
	for _, tc := range []struct {
		name string
		unit func(x float64) float64 // the gauge in its unit
		most int                     // alerts a gauge in two weeks, at most
	}{
		{"at two decimals", func(x float64) float64 { return x }, 6},
		// In whole units, around 25: a pool's connections, a count of
		// replicas. Before, 573 alerts.
		{"in whole units", func(x float64) float64 { return math.Round(x * 50) }, 6},
		// And around 5, below the 20 units from which the changes'
		// spread tells a gauge from counts: a count of replicas or
		// workers, which repeats its value as counts cannot. Before,
		// 410 alerts.
		{"in whole units around 5", func(x float64) float64 { return math.Round(x*50) - 20 }, 6},
		// Off every lattice refineLattice finds, where the resolution is
		// the step the changes agree on (see stepLattice): a count in
		// hundredths normalised by a range of 1,234 of them and printed
		// to six decimals, as server-metric data sets are published
		// (before, 722 alerts on twenty such gauges of `bench nab`), and
		// a step that is no fraction of a unit, with an offset. Before,
		// 573 and 572 alerts. The step is learnt from four changes,
		// which on these gauges take a day or more.
		{"normalised by a range of 1,234 steps", func(x float64) float64 { return math.Round((x*50-3)/1234*1e6) / 1e6 }, 7},
		{"stepping by 0.0200123456789 from 0.000987654321", func(x float64) float64 { return x*50*0.0200123456789 + 0.000987654321 }, 7},
	} {
		total := 0
		for _, every := range []int{200, 500, 1000, 2000} {
			for seed := range uint64(4) {
				xs := steppingGauge(seed, every, n)
				for i := range xs {
					xs[i] = tc.unit(xs[i])
				}
				rows, _, _ := alertsOf(t, 60_000, xs)
				total += len(rows)
			}
		}
		t.Logf("16 gauges of two weeks %s: %d alerts", tc.name, total)
		require.LessOrEqual(t, total, 16*tc.most, "%s: about a step a day is no incident: at most %d alerts a gauge in two weeks", tc.name, tc.most)
	}

	// A temperature to a tenth of a degree, around 45 and stepping as
	// the gauges above, that begins to climb by a tenth every three
	// minutes on the ninth day (a cooling failure). Before, it paged at
	// the first tenth, 3 minutes in, after 21 to 31 false alarms; now
	// after three or four tenths, 8 to 12 minutes in, after 2 to 4.
	for seed := range uint64(6) {
		xs := steppingGauge(seed, 500, 10*1440)
		from := 8*1440 + 600
		for i := range xs {
			k := 0
			if i >= from {
				k = min((i-from)/3, 40)
				xs[i] = xs[from-1]
			}
			xs[i] = math.Round((xs[i]*5+45)*10)/10 + 0.1*float64(k)
		}
		rows, _, _ := alertsOf(t, 60_000, xs)
		at := slices.IndexFunc(rows, func(r int) bool { return r >= from })
		require.GreaterOrEqual(t, at, 0, "seed %d: the climb pages", seed)
		require.LessOrEqual(t, rows[at]-from, 15, "seed %d: within 15 minutes", seed)
		require.LessOrEqual(t, at, 6, "seed %d: false alarms before the climb", seed)
	}

	// The share of two (or ten) targets up: 1, but for three falls to
	// 0.5 (0.9) for half an hour.
	for _, low := range []float64{0.5, 0.9} {
		xs := make([]float64, 10*1440)
		for i := range xs {
			xs[i] = 1
		}
		falls := []int{2*1440 + 600, 5*1440 + 300, 8*1440 + 900}
		for _, at := range falls {
			for i := at; i < at+30; i++ {
				xs[i] = low
			}
		}
		rows, _, _ := alertsOf(t, 60_000, xs)
		require.Equal(t, falls, rows, "1 to %v: each fall pages", low)
	}

	// A runaway: 0.2 (ten steps) above its value, for an hour, on the
	// tenth day; and the same normalised as above, off any lattice.
	for seed := range uint64(4) {
		for _, normalised := range []bool{false, true} {
			xs := steppingGauge(seed, 500, n)
			from := 9*1440 + 600
			for i := from; i < from+60; i++ {
				xs[i] = xs[from-1] + 0.2
			}
			if normalised {
				for i := range xs {
					xs[i] = math.Round((xs[i]*50-3)/1234*1e6) / 1e6
				}
			}
			rows, _, _ := alertsOf(t, 60_000, xs)
			require.Condition(t, func() bool {
				for _, r := range rows {
					if r >= from && r <= from+2 {
						return true
					}
				}
				return false
			}, "seed %d (normalised: %v): the runaway pages within two minutes (alerts at %v)", seed, normalised, rows)
		}
	}

	// The floor: a step of the lattice over √6 once the series has
	// moved, where the lattice is one of decimals; none on whole
	// numbers, nor before a first move.
	a := NewAuto(DefaultAutoConfig())
	for i := range 100 {
		a.Observe(int64(i)*60_000, 0.5)
	}
	require.Zero(t, a.res, "not moved yet: 0.5 alone lies on halves")
	a.Observe(100*60_000, 0.52)
	require.Zero(t, a.res, "two values one step apart: a state")
	a.Observe(101*60_000, 0.48)
	require.InDelta(t, 0.02/math.Sqrt(6), a.res, 1e-12)
	snap, err := a.MarshalBinary()
	require.NoError(t, err)
	b := NewAuto(DefaultAutoConfig())
	require.NoError(t, b.UnmarshalBinary(snap))
	require.Equal(t, a.res, b.res, "derived again on restore")
	w := NewAuto(DefaultAutoConfig())
	for i := range 100 {
		w.Observe(int64(i)*60_000, float64(8-i%2))
	}
	require.Zero(t, w.res, "whole numbers are exact")

	// Off any lattice, the floor is the step four changes in a row
	// agree on, each from a repeated value, once the series has
	// spanned two steps.
	const q, off = 0.0200123456789, 0.000987654321
	o := NewAuto(DefaultAutoConfig())
	i := 0
	hold := func(k int) {
		for range 30 {
			o.Observe(int64(i)*60_000, off+float64(k)*q)
			i++
		}
	}
	for _, k := range []int{25, 26, 25, 24} { // three changes
		hold(k)
	}
	require.True(t, o.offLattice)
	require.Zero(t, o.res, "three changes prove no step")
	hold(26) // two steps at once: a multiple of the step
	require.InDelta(t, q/math.Sqrt(6), o.res, 1e-12)
	snap, err = o.MarshalBinary()
	require.NoError(t, err)
	r := NewAuto(DefaultAutoConfig())
	require.NoError(t, r.UnmarshalBinary(snap))
	require.Equal(t, o.chg, r.chg, "restored")
	require.Equal(t, o.res, r.res, "derived again on restore")
	hold(26)
	hold(25)
	require.InDelta(t, q/math.Sqrt(6), o.res, 1e-12)
	hold(25)
	o.Observe(int64(i)*60_000, off+25.37*q) // a change that is no multiple
	require.Zero(t, o.res, "the count starts again")

	// A measurement off any lattice that holds its value now and then
	// (a latency that is the last request's): its changes agree on no
	// step.
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewAuto(DefaultAutoConfig())
	x := 0.25
	for i := range 20_000 {
		if rng.IntN(3) == 0 {
			x = 0.2 + rng.Float64()*0.1
		}
		m.Observe(int64(i)*60_000, x)
		require.Zero(t, m.chg.step(), "sample %d: no step", i)
	}
}
