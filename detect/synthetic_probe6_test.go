package detect_test

import (
	"math"
	"math/rand/v2"
)

// A sixth probe, drawn for the cloud-service KPIs a held-out set is
// made of (1-minute series over weeks with a strong daily curve and a
// weekly one); scored before any change for it (docs/detectors.md,
// "The day's shape between slices").
func init() { families = append(families, probeFamilies6...) }

var probeFamilies6 = []family{
	{
		// Service KPIs at 1-minute resolution over 8 to 21 days: a daily
		// curve of two harmonics swinging by 50-80 % of the level (its
		// morning ramp moves it by a fifth within an hour), weekends 15 %
		// lower, multiplicative noise of 2-5 %. Incidents: a dip of 15-25 %
		// for 5-29 minutes or a surge of 15-30 % for 1-5 minutes, a few
		// times the noise. A quarter of the series are all-normal.
		name: "kpi_minute",
		gen: func(rng *rand.Rand, i int) synthSeries {
			return kpiSeries(rng, i, minute, []int{20000, 30000, 12000}, [2]int{5, 25}, 5)
		},
	},
	{
		// kpi_minute at 5-minute resolution, drawn after the day's
		// profile learnt the week and its spike path, as a check at
		// another resolution (docs/detectors.md, "A spike for the day's
		// profile"): 8 to 21 days, the same curve, weekends and noise;
		// dips of 15-25 % for one to six samples, surges of 15-30 % for
		// one or two.
		name: "kpi_5min",
		gen: func(rng *rand.Rand, i int) synthSeries {
			return kpiSeries(rng, i, fiveMins, []int{4000, 6000, 2500}, [2]int{1, 6}, 2)
		},
	},
}

// kpiSeries draws series i of a KPI family at the given step: lengths[i%3]
// rows; dips lasting dip[0] plus up to dip[1]-1 more rows, surges 1 to
// surge rows.
func kpiSeries(rng *rand.Rand, i int, step int64, lengths []int, dip [2]int, surge int) synthSeries {
	n := lengths[i%3]
	level := math.Pow(10, 1+3*rng.Float64())
	amp := 0.5 + 0.3*rng.Float64()
	noise := 0.02 + 0.03*rng.Float64()
	k := []int{3, 5, 0, 4}[i%4]
	s := synthSeries{onsets: onsets(rng, n, k)}
	var inc []incident
	for range s.onsets {
		if rng.IntN(2) == 0 {
			inc = append(inc, incident{0.85 - 0.1*rng.Float64(), dip[0] + rng.IntN(dip[1])})
		} else {
			inc = append(inc, incident{1.15 + 0.15*rng.Float64(), 1 + rng.IntN(surge)})
		}
	}
	s.drawKPI(rng, n, step, level, amp, noise, inc)
	return s
}

// drawKPI appends n rows at step of a KPI's curve: a daily curve of two
// harmonics swinging by amp of the level, weekends 15 % lower, the
// incidents at s's onsets, and multiplicative noise.
func (s *synthSeries) drawKPI(rng *rand.Rand, n int, step int64, level, amp, noise float64, inc []incident) {
	for j := range n {
		ts := t0 + int64(j)*step
		ph := 2 * math.Pi * float64(ts%day) / float64(day)
		x := level * (1 + amp*(0.7*math.Sin(ph-2.2)+0.3*math.Sin(2*ph-1)))
		if (ts/day)%7 >= 5 {
			x *= 0.85
		}
		x = withIncidents(x, j, s.onsets, inc)
		x *= 1 + noise*rng.NormFloat64()
		s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
	}
}
