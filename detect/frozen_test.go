package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// alertsOf runs a default auto over xs, one sample every step ms, and
// returns the rows that alerted (scored the threshold or more outside an
// episode: within one, a score is the sample's own and no new alert),
// each alert's evidence, and every verdict.
func alertsOf(t *testing.T, step int64, xs []float64) (rows []int, evs []Evidence, vs []Verdict) {
	t.Helper()
	cfg := DefaultAutoConfig()
	d := NewAuto(cfg)
	vs = make([]Verdict, len(xs))
	for i, x := range xs {
		vs[i] = d.Observe(int64(i)*step, x)
		if vs[i].Score >= cfg.Threshold && (i == 0 || !vs[i-1].Episode) {
			rows, evs = append(rows, i), append(evs, vs[i].Evidence)
		}
	}
	return rows, evs, vs
}

// cycle is a daily cycle around 100 (±30 %) with 3 % noise, sampled
// every step ms for days days.
func cycle(seed uint64, step int64, days int) []float64 {
	perDay := int(dayMs / step)
	rng := rand.New(rand.NewPCG(seed, 11))
	xs := make([]float64, days*perDay)
	for i := range xs {
		xs[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/float64(perDay))) * (1 + 0.03*rng.NormFloat64())
	}
	return xs
}

// TestAutoFrozenValue: a value that stops moving pages once, as frozen,
// within the calm that ends an episode (Calm samples) or 10 minutes,
// whichever is longer, and a few samples more,
// and its episode lasts as long as the freeze does. A daily cycle frozen
// for three hours on its fourth day, at 15 s, a minute and 5 minutes,
// three seeds each. Before frozen, such a freeze paged twice at 15 s and
// never at a minute.
func TestAutoFrozenValue(t *testing.T) {
	cfg := DefaultAutoConfig()
	for _, step := range []int64{15_000, 60_000, 300_000} {
		perDay := int(dayMs / step)
		for seed := uint64(1); seed <= 3; seed++ {
			xs := cycle(seed, step, 5)
			// Frozen at 10:00 on the fourth day, for three hours.
			from := 3*perDay + perDay*10/24
			until := from + int(3*3600_000/step)
			for i := from; i < until; i++ {
				xs[i] = xs[from-1]
			}
			rows, evs, vs := alertsOf(t, step, xs)
			var in []int
			for k, r := range rows {
				if r >= from && r < until {
					in = append(in, r)
					require.Equal(t, EvidenceFrozen, evs[k], "step %d seed %d: the freeze's alert at row %d", step, seed, r)
				}
			}
			require.Len(t, in, 1, "step %d seed %d: alerts within the freeze %v", step, seed, in)
			least := max(cfg.Calm, int(frozenSpan/step))
			require.LessOrEqual(t, in[0]-from, least+2, "step %d seed %d: paged %d samples into the freeze", step, seed, in[0]-from)
			for i := in[0]; i < until; i++ {
				require.True(t, vs[i].Episode, "step %d seed %d: the episode ended at row %d, within the freeze", step, seed, i)
				require.Equal(t, StateAnomalous, vs[i].State, "step %d seed %d: row %d of the freeze", step, seed, i)
			}
			var after []int
			for _, r := range rows {
				if r >= until {
					after = append(after, r)
				}
			}
			end := until
			for end < len(vs) && vs[end].Episode {
				end++
			}
			t.Logf("step %d seed %d: paged %d samples in; episode ends %d samples after; later alerts %v", step, seed, in[0]-from, end-until, after)
		}
	}
}

// TestAutoFrozenOff: with frozen_runs 0 no run is judged, and the
// freeze of TestAutoFrozenValue scores nothing as frozen.
func TestAutoFrozenOff(t *testing.T) {
	cfg := DefaultAutoConfig()
	cfg.FrozenRuns = 0
	require.NoError(t, cfg.Validate())
	xs := cycle(1, 60_000, 5)
	from := 3*1440 + 600
	for i := from; i < from+180; i++ {
		xs[i] = xs[from-1]
	}
	for _, runs := range []float64{0, frozenRecs} {
		cfg.FrozenRuns = runs
		d := NewAuto(cfg)
		frozen := false
		for i, x := range xs {
			v := d.Observe(int64(i)*60_000, x)
			frozen = frozen || v.Score > 0 && v.Evidence == EvidenceFrozen
		}
		require.Equal(t, runs > 0, frozen, "frozen_runs %v", runs)
	}
}

// TestAutoFrozenLookAlikes: series whose values repeat as a matter of
// course are no freeze. Over a week each, none of them scores as frozen,
// within an episode or out of one.
// Frozen for six hours from 07:00 on the sixth day (near the top of
// the cycles), each pages as frozen,
// but for those whose values stay put for hours as a matter of course:
// the worker count (it repeats 199 samples in 200, so a run is news only
// after a day), the client count (its runs at night last hours, and the
// bar is four times the longest) and the gauge held every night (its
// runs of six hours set the bar at a day).
func TestAutoFrozenLookAlikes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const week = 7
	cases := []struct {
		name  string
		step  int64
		xs    func() []float64
		pages bool // whether a freeze of six hours pages
	}{
		{"scraped four times per update", 15_000, func() []float64 {
			xs := cycle(2, 15_000, week)
			for i := range xs {
				xs[i] = xs[i-i%4]
			}
			return xs
		}, true},
		{"scraped twenty times per update", 15_000, func() []float64 {
			xs := cycle(3, 15_000, week)
			for i := range xs {
				xs[i] = xs[i-i%20]
			}
			return xs
		}, true},
		{"updates at uneven times", 15_000, func() []float64 {
			xs := cycle(4, 15_000, week)
			for i := 1; i < len(xs); i++ {
				if rng.IntN(6) != 0 { // a new value one scrape in six, on average
					xs[i] = xs[i-1]
				}
			}
			return xs
		}, true},
		{"small counts, 0 at night", 60_000, func() []float64 {
			xs := make([]float64, week*1440)
			for i := range xs {
				mean := 3 * math.Max(0, math.Sin(2*math.Pi*float64(i)/1440))
				xs[i] = poissonCount(rng, mean)
			}
			return xs
		}, true},
		{"a worker count that dips", 60_000, func() []float64 {
			xs := make([]float64, week*1440)
			for i := range xs {
				xs[i] = 8
				if rng.IntN(200) == 0 {
					xs[i] = 7
				}
			}
			return xs
		}, false},
		{"whole numbers with little noise", 60_000, func() []float64 {
			xs := make([]float64, week*1440)
			for i := range xs {
				xs[i] = math.Round(50 + 0.6*rng.NormFloat64())
			}
			return xs
		}, true},
		{"a client count that steps seldom, more seldom at night", 15_000, func() []float64 {
			xs := make([]float64, week*5760)
			x := 40.0
			for i := range xs {
				odds := 20 // a step one sample in 20 by day, in 200 at night
				if m := i % 5760; m < 1440 || m >= 5040 {
					odds = 200
				}
				if rng.IntN(odds) == 0 {
					x = max(1, x+float64(2*rng.IntN(2)-1))
				}
				xs[i] = x
			}
			return xs
		}, false},
		{"a target that goes away, served 5 minutes more", 15_000, func() []float64 {
			// Gone at noon on the third day, and back 45 minutes on: a
			// store with no staleness marker answers with its last value
			// for the 5-minute lookback, 20 evaluations, then nothing.
			xs := cycle(8, 15_000, week)
			at := 2*5760 + 2880
			for k := 1; k <= 180; k++ {
				xs[at+k] = math.NaN()
				if k <= 20 {
					xs[at+k] = xs[at]
				}
			}
			return xs
		}, true},
		{"a CPU share pinned at 100 % for an hour", 60_000, func() []float64 {
			// Saturated at its ceiling on the fourth day: an incident that
			// pages, but as the value it is at, not as a freeze.
			xs := cycle(9, 60_000, week)
			for i := range xs {
				xs[i] /= 2
				if i >= 3*1440+600 && i < 3*1440+660 {
					xs[i] = 100
				}
			}
			return xs
		}, true},
		{"a gauge that steps every few hours", 60_000, func() []float64 {
			// A quantised share that steps by 0.02 one minute in 500, on
			// average: a day holds two or three runs, and the longest of
			// them says little of how long the next may be.
			steps := rand.New(rand.NewPCG(3, 3))
			xs := make([]float64, week*1440)
			x := 0.3
			for i := range xs {
				if steps.Float64() < 0.002 {
					d := 0.02
					if steps.Float64() < 0.5 {
						d = -d
					}
					x = math.Round(math.Min(1, math.Max(0, x+d))*100) / 100
				}
				xs[i] = x
			}
			return xs
		}, false},
		{"held each night", 60_000, func() []float64 {
			xs := cycle(6, 60_000, week)
			for i := range xs {
				if m := i % 1440; m < 360 {
					xs[i] = 70 // a gauge that keeps its value from midnight to 06:00
				}
			}
			return xs
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := c.xs()
			_, _, vs := alertsOf(t, c.step, xs)
			for i, v := range vs {
				// Within an episode too: a rule's explanation would name it.
				require.False(t, v.Score > 0 && v.Evidence == EvidenceFrozen, "scored as frozen at row %d (%v) of %d", i, xs[i], len(xs))
			}
			perDay := int(dayMs / c.step)
			from := 5*perDay + perDay*7/24
			last := from - 1
			for math.IsNaN(xs[last]) {
				last--
			}
			for i := from; i < from+perDay/4; i++ {
				xs[i] = xs[last]
			}
			_, _, vs = alertsOf(t, c.step, xs)
			frozen := -1
			for i, v := range vs {
				if v.Score > 0 && v.Evidence == EvidenceFrozen && frozen < 0 {
					frozen = i
				}
			}
			if c.pages {
				require.GreaterOrEqual(t, frozen, from, "frozen at %v for six hours: no page", xs[from])
				t.Logf("frozen at %v: paged %d samples in", xs[from], frozen-from)
			} else {
				require.Less(t, frozen, 0, "frozen at %v for six hours: paged at row %d", xs[from], frozen)
			}
		})
	}
}

// TestAutoFrozenSnapshot: the run of repeats and the longest runs are
// kept in snapshots. A detector restored within a run, before it is a
// freeze and while it is one, judges the rest as the one that ran on.
// One restored from a snapshot made before runs were counted (format 34;
// here the same detector's runs forgotten as that decoder forgets them)
// judges no freeze within a day of the snapshot's latest sample.
func TestAutoFrozenSnapshot(t *testing.T) {
	const step = 60_000
	cfg := DefaultAutoConfig()
	xs := cycle(7, step, 5)
	from := 3*1440 + 600
	for i := from; i < from+180; i++ {
		xs[i] = xs[from-1]
	}
	for _, cut := range []int{from + 10, from + 60} {
		d := NewAuto(cfg)
		for i := range cut {
			d.Observe(int64(i)*step, xs[i])
		}
		require.Equal(t, cut >= from+cfg.Calm, d.frz.on, "cut at %d: frozen", cut-from)
		r := restoredAuto(t, d, cfg)
		for i := cut; i < len(xs); i++ {
			require.Equal(t, d.Observe(int64(i)*step, xs[i]), r.Observe(int64(i)*step, xs[i]), "cut at %d: row %d", cut-from, i)
		}
	}

	d := NewAuto(cfg)
	for i := range from - 60 {
		d.Observe(int64(i)*step, xs[i])
	}
	d.frz = frozen{since: d.prevTs} // as UnmarshalBinary reads format 34
	for i := from - 60; i < from+180; i++ {
		require.NotEqual(t, EvidenceFrozen, d.Observe(int64(i)*step, xs[i]).Evidence, "row %d: frozen within a day of the upgrade", i)
	}
	rows, evs, _ := alertsOf(t, step, xs)
	require.Contains(t, evs, EvidenceFrozen, "ran through: no freeze paged (alerts at %v)", rows)
}
