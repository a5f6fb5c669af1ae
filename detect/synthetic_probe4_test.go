package detect_test

import (
	"math"
	"math/rand/v2"
)

// A fourth batch of probes, drawn after the level learnt its trend and
// scored before any change for them (docs/detectors.md, "Probes"). The
// two weekly families before it step to the weekend level at the same
// instant of the day as t0 (12:26 UTC), mid-afternoon traffic halving in
// one sample; real traffic changes at night, in the users' own time zone,
// where weekdays and weekends are both quiet. This batch draws traffic
// that way: a base load and a daytime activity that weekends scale down.
func init() { families = append(families, probeFamilies4...) }

var probeFamilies4 = []family{
	{
		// API request rates per step over two to eight weeks, at 5 or 10
		// minutes or an hour: base load plus daytime activity (07:00-23:00
		// in one of six time zones), weekends at 30-80 % of the weekday
		// activity, a slow trend in some. Incidents: a partial outage (20-
		// 60 % for one to six hours), a surge (1.8-3x for one to three
		// hours) or a full stop of ten minutes to an hour. A third of the
		// series are all-normal.
		name: "business_hours",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, 10 * minute, hour}[i%3]
			weeks := []int{2, 4, 8, 3}[i%4]
			n := int(int64(weeks) * 7 * day / step)
			tz := []int64{-8, -5, 0, 1, 8, 9}[rng.IntN(6)] * hour
			level := math.Pow(10, 0.5+3*rng.Float64())
			base := 0.15 + 0.25*rng.Float64()
			wk := 0.3 + 0.5*rng.Float64()
			g := 0.0
			if rng.IntN(2) == 0 {
				g = -0.1 + 0.4*rng.Float64()
			}
			k := []int{1, 0, 2}[i%3]
			s := synthSeries{onsets: onsets(rng, n, k)}
			var inc []incident
			for range s.onsets {
				var f float64
				var d int64
				switch rng.IntN(3) {
				case 0: // partial outage
					f, d = 0.2+0.4*rng.Float64(), int64(1+rng.IntN(6))*hour
				case 1: // surge
					f, d = 1.8+1.2*rng.Float64(), int64(1+rng.IntN(3))*hour
				default: // full stop
					f, d = 0, int64(10+rng.IntN(51))*minute
				}
				inc = append(inc, incident{f, max(int(d/step), 1)})
			}
			for j := range n {
				ts := t0 + int64(j)*step
				local := ts + tz
				h := float64(local%day) / float64(hour)
				act := 0.0
				if h > 7 && h < 23 {
					act = math.Pow(math.Sin(math.Pi*(h-7)/16), 1.5)
				}
				// The Unix epoch was a Thursday: day 0 of the week below
				// is Sunday.
				if d := (local/day + 4) % 7; d == 0 || d == 6 {
					act *= wk
				}
				lambda := level * (1 + g*float64(j)/float64(n)) * (base + (1-base)*act)
				lambda = withIncidents(lambda, j, s.onsets, inc)
				s.times, s.values = append(s.times, ts), append(s.values, jitteredCount(rng, lambda))
			}
			return s
		},
	},
}
