package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// deepCycle is a 5-minute gauge on a deep daily cycle (50 ± 30, from 20
// at night to 80 by day, noise 2 %) for three weeks, every value from
// day 5 at 14:00 on times factor, and one incident a day from day 11 on:
// two hours at 12 above or below the cycle (before the factor), at a
// random time. Halved, its nights lie within the level's spreads, as
// NAB's art_daily files do with `--probe step=0.5`. It returns the rows
// each incident starts at and the row of the change.
func deepCycle(seed uint64, factor float64) (xs []float64, incidents []int, change int) {
	const perDay = 288
	rng := rand.New(rand.NewPCG(seed, 43))
	xs = make([]float64, 21*perDay)
	change = 5*perDay + 14*12
	for day := 11; day < 21; day++ {
		incidents = append(incidents, day*perDay+rng.IntN(perDay-24))
	}
	for i := range xs {
		x := 50 + 30*math.Sin(2*math.Pi*float64(i)/perDay)
		for k, at := range incidents {
			if i >= at && i < at+24 {
				x += float64(1-2*(k%2)) * 12
			}
		}
		if i >= change {
			x *= factor
		}
		xs[i] = x * (1 + 0.02*rng.NormFloat64())
	}
	return xs, incidents, change
}

// TestAutoHalvedDailyCycleIsARegime: a deep daily cycle halved or
// doubled for good becomes a new regime on its time of day alone (see
// hourBeyond), and its later incidents page. Ten seeds: as it is 94 of
// 100 incidents paged; halved 73 and doubled 76, where before (runs
// begun only beyond the level's spreads, and judged in hourSpread's)
// there was no regime and 27 and 42 paged: each slice's variance had
// learnt the change as spread. Such a run is no Shifted move.
func TestAutoHalvedDailyCycleIsARegime(t *testing.T) {
	const step = 300_000
	cfg := DefaultAutoConfig()
	run := func(factor float64) (caught, pages, regimes, shifted int) {
		for seed := range uint64(10) {
			xs, incidents, change := deepCycle(seed, factor)
			c, p := pagedAfter(cfg, xs, incidents, change)
			caught, pages = caught+c, pages+p
			d := NewAuto(cfg)
			for i, x := range xs {
				if d.Observe(int64(i)*step, x).Shifted && d.reg.hourOnly {
					shifted++
				}
			}
			regimes += d.reg.begun
		}
		return caught, pages, regimes, shifted
	}
	caught, pages, regimes, _ := run(1)
	t.Logf("as it is: %d of 100 incidents paged, %d pages outside them, %d regimes", caught, pages, regimes)
	require.GreaterOrEqual(t, caught, 85, "incidents paged as it is")
	require.Zero(t, regimes, "regimes as it is")
	for _, factor := range []float64{0.5, 2} {
		c, p, r, sh := run(factor)
		t.Logf("times %g from day 5: %d of 100 incidents paged, %d pages outside them, %d regimes", factor, c, p, r)
		require.GreaterOrEqual(t, c, 65, "incidents paged, times %g", factor)
		require.LessOrEqual(t, p, pages+2, "pages outside the incidents, times %g", factor)
		require.GreaterOrEqual(t, r, 10, "regimes, times %g: one a seed", factor)
		require.Zero(t, sh, "samples of a run begun on the hour alone called Shifted, times %g", factor)
	}
}

// TestAutoWeekendIsNoRegime: weekends at half or 70 % of a weekday's
// traffic, on a daily cycle, lie beyond every hour's spreads from
// Saturday to Monday, but a run begun on the time of day alone must
// last three days (hourRunFor) and a weekend is two: no regime, and no
// more pages than before runs could begin so (ten seeds of six weeks at
// 5 and 10 minutes, at half and 70 %: 5, 4, 0 and 0 alerts, as now).
// With a day, as for a run the level sees: 10, 7, 10 and 6 regimes, and
// 4, 7, 1 and 3 alerts.
func TestAutoWeekendIsNoRegime(t *testing.T) {
	const dayMs0 = 86_400_000
	for _, step := range []int64{300_000, 600_000} {
		for _, wk := range []float64{0.5, 0.7} {
			regimes, alerts := 0, 0
			for seed := range uint64(10) {
				rng := rand.New(rand.NewPCG(seed, 77))
				d := NewAuto(DefaultAutoConfig())
				n := int(42 * dayMs0 / step)
				t0 := int64(1_700_006_400_000)
				inEpisode := false
				for j := range n {
					ts := t0 + int64(j)*step
					x := 100 * (1 + 0.4*math.Sin(2*math.Pi*(float64(ts%dayMs0)/dayMs0-0.35)))
					if dow := (ts/dayMs0 + 4) % 7; dow == 0 || dow == 6 { // 1970-01-01 was a Thursday
						x *= wk
					}
					x += 0.05 * x * rng.NormFloat64()
					v := d.Observe(ts, x)
					if v.Score >= 0.6 && !inEpisode && j > n/6 {
						alerts++
					}
					inEpisode = v.State == StateAnomalous
				}
				regimes += d.reg.begun
			}
			t.Logf("every %d minutes, weekends at %g: %d regimes, %d alerts", step/60_000, wk, regimes, alerts)
			require.Zero(t, regimes, "every %d minutes, weekends at %g", step/60_000, wk)
			require.LessOrEqual(t, alerts, 6, "every %d minutes, weekends at %g", step/60_000, wk)
		}
	}
}

// TestAutoHourRunSnapshot: a run begun on the time of day alone keeps
// that in a snapshot (format 42): a detector restored halfway through
// it judges the rest of the series as the one that ran on, Shifted
// included.
func TestAutoHourRunSnapshot(t *testing.T) {
	const step = 300_000
	xs, _, change := deepCycle(3, 0.5)
	ran := NewAuto(DefaultAutoConfig())
	var restored *Auto
	for i, x := range xs {
		want := ran.Observe(int64(i)*step, x)
		if restored != nil {
			require.Equal(t, want, restored.Observe(int64(i)*step, x), "sample %d", i)
		}
		if restored == nil && i > change && ran.reg.hourOnly && ran.reg.n >= 100 {
			b, err := ran.MarshalBinary()
			require.NoError(t, err)
			restored = NewAuto(DefaultAutoConfig())
			require.NoError(t, restored.UnmarshalBinary(b))
			require.True(t, restored.reg.hourOnly)
		}
	}
	require.NotNil(t, restored, "no run begun on the hour alone lasted 100 samples")
	require.Positive(t, ran.reg.begun)
}
