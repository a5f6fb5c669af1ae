package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// offsetGauge is two weeks of a 1-minute gauge on a daily cycle (50 ± 10,
// noise 1) with a constant added, and a rise of 6 for two hours on day
// 10 (at), as a disk's used bytes or a temperature in kelvin carry an
// offset many times the range they move in.
func offsetGauge(seed uint64, offset float64) (xs []float64, at int) {
	const perDay = 1440
	rng := rand.New(rand.NewPCG(seed, 77))
	at = 10*perDay + rng.IntN(perDay)
	xs = make([]float64, 14*perDay)
	for i := range xs {
		x := 50 + 10*math.Sin(2*math.Pi*float64(i)/perDay) + rng.NormFloat64()
		if i >= at && i < at+120 {
			x += 6
		}
		xs[i] = x + offset
	}
	return xs, at
}

// TestAutoOffsetGauge: a constant added to a gauge changes nothing. With
// the floor at a thousandth of the level (scaleFloor), a gauge at 10⁵
// moving within ±15 had a floor of 100: its noise and its incidents lay
// within one spread, and none of ten incidents paged (at 10⁴, 10 pages
// outside them against 15). The floor is now at most a hundredth of the
// range seen (rangeFloor), below such a gauge's noise, and the pages are
// the plain gauge's at every offset.
func TestAutoOffsetGauge(t *testing.T) {
	const perDay, minuteMs = 1440, 60_000
	cfg := DefaultAutoConfig()
	run := func(offset float64) (pages, caught int) {
		for seed := range uint64(10) {
			xs, at := offsetGauge(seed, offset)
			d := NewAuto(cfg)
			paged := false
			for i, x := range xs {
				v := d.Observe(int64(i)*minuteMs, x)
				if v.Score < cfg.Threshold || d.quiet != cfg.Quiet || i < perDay {
					continue // not an alert, or on the first day
				}
				if i >= at && i < at+120 {
					paged = true
				} else {
					pages++
				}
			}
			if paged {
				caught++
			}
		}
		return pages, caught
	}
	plain, caught := run(0)
	t.Logf("offset 0: %d pages outside the incidents, %d of 10 incidents paged", plain, caught)
	require.Equal(t, 10, caught, "incidents paged on the plain gauge")
	for _, offset := range []float64{1e3, 1e5, 1e7} {
		pages, caught := run(offset)
		t.Logf("offset %g: %d pages outside the incidents, %d of 10 incidents paged", offset, pages, caught)
		require.Equal(t, 10, caught, "incidents paged at offset %g", offset)
		require.InDelta(t, plain, pages, 2, "pages outside the incidents at offset %g", offset)
	}
}

// TestAutoFlatFloatNoise: a series that has never moved does not page
// on a difference in its last digit, at any magnitude: the floor keeps a
// billionth of the level (floorReach) where the range is 0, and at 0 at
// least 10⁻¹⁵, above what the difference of two values near 1 leaves.
// A real move of such a series still pages, down to a nanosecond's worth
// of seconds.
func TestAutoFlatFloatNoise(t *testing.T) {
	const minuteMs = 60_000
	cfg := DefaultAutoConfig()
	for _, level := range []float64{0, 4e-8, 0.3, 100, 4e11} {
		d := NewAuto(cfg)
		for i := range 3000 {
			x := level
			if i%500 == 499 { // one ulp off, as a sum's rounding leaves it
				x = math.Nextafter(level, math.Inf(1))
				if level == 0 {
					x = 0.1 + 0.2 - 0.3 // 5.6e-17
				}
			}
			v := d.Observe(int64(i)*minuteMs, x)
			require.Less(t, v.Score, cfg.Threshold, "level %g, sample %d", level, i)
		}
		move := level * 0.01
		if level == 0 {
			move = 1e-9
		}
		v := d.Observe(3000*minuteMs, level+move)
		require.GreaterOrEqual(t, v.Score, cfg.Threshold, "level %g: a move of %g", level, move)
	}
}

// TestAutoWholeNumberGauge: a gauge of whole numbers (50 ± 10 on a
// daily cycle, noise 1, rounded) is no count. Judged as counts, the
// time of day's spread was floored at Poisson noise (√50, seven times
// the gauge's), its likelihood learnt next to no surprise, and it paged
// 30 times outside the incidents in ten seeds' two weeks, 19 of them by
// the time of day. As a gauge (see Auto.gauge) it pages as the same
// series of measurements does, and every incident still pages. Poisson
// counts at the same level stay counts throughout.
func TestAutoWholeNumberGauge(t *testing.T) {
	const perDay, minuteMs = 1440, 60_000
	cfg := DefaultAutoConfig()
	pages, byDay, caught := 0, 0, 0
	for seed := range uint64(10) {
		xs, at := offsetGauge(seed, 0)
		d := NewAuto(cfg)
		paged := false
		for i, x := range xs {
			v := d.Observe(int64(i)*minuteMs, math.Round(x))
			if v.Score < cfg.Threshold || d.quiet != cfg.Quiet || i < perDay {
				continue
			}
			switch {
			case i >= at && i < at+120:
				paged = true
			case v.Evidence == EvidenceTimeOfDay:
				byDay++
				pages++
			default:
				pages++
			}
		}
		require.False(t, d.fraction, "seed %d: whole numbers stay on the lattice of counts", seed)
		require.True(t, d.gauge(d.level.Loc()), "seed %d: judged as a gauge", seed)
		if paged {
			caught++
		}
	}
	t.Logf("%d pages outside the incidents (%d by the time of day), %d of 10 incidents paged", pages, byDay, caught)
	require.Equal(t, 10, caught, "incidents paged")
	require.LessOrEqual(t, pages, 24, "pages outside the incidents")
	require.LessOrEqual(t, byDay, 13, "pages by the time of day")

	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 78))
		d := NewAuto(cfg)
		for i := range 3 * perDay {
			lambda := 50 * (1 + 0.2*math.Sin(2*math.Pi*float64(i)/perDay))
			x := math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
			d.Observe(int64(i)*minuteMs, x)
			if i > cfg.WarmUp {
				require.False(t, d.gauge(d.level.Loc()), "seed %d, sample %d: Poisson counts read as a gauge", seed, i)
			}
		}
	}
}
