package detect_test

import (
	"math"
	"math/rand/v2"
)

// A fifth probe, drawn after a replay of a periodic series whose period
// is not a day (a batch job every ten and a half hours) raised false
// alarms from the time of day's baselines; scored before any change for
// it (docs/detectors.md, "Probes").
func init() { families = append(families, probeFamilies5...) }

var probeFamilies5 = []family{
	{
		// Series with a cycle that is not daily: batch jobs, tides of
		// work every few hours, a cache's refill. Periods of 4.5 to 15.5
		// hours, swinging by 20-50 % of the level, at 1, 5 or 10 minutes
		// over one to six weeks' worth of rows; half are request counts,
		// half latencies with multiplicative noise. Incidents: a drop to
		// 40 % for 3-20 samples, a surge of 1.8-2.5x for 1-10 samples, or
		// a lasting step up by half. A quarter of the series are
		// all-normal.
		name: "odd_cycles",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{minute, fiveMins, 10 * minute}[i%3]
			n := []int{2000, 4000, 1500, 3000}[i%4]
			period := []float64{4.5, 7, 9.5, 10.5, 13, 15.5}[rng.IntN(6)] * (1 + 0.05*rng.Float64()) * float64(hour)
			amp := 0.2 + 0.3*rng.Float64()
			level := math.Pow(10, 1+2.5*rng.Float64())
			phase := rng.Float64() * 2 * math.Pi
			counts := i%2 == 0
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			var inc []incident
			for range s.onsets {
				switch rng.IntN(3) {
				case 0:
					inc = append(inc, incident{0.4, 3 + rng.IntN(18)})
				case 1:
					inc = append(inc, incident{1.8 + 0.7*rng.Float64(), 1 + rng.IntN(10)})
				default:
					inc = append(inc, incident{1.5, n})
				}
			}
			for j := range n {
				ts := t0 + int64(j)*step
				x := level * (1 + amp*math.Sin(2*math.Pi*float64(ts-t0)/period+phase))
				x = withIncidents(x, j, s.onsets, inc)
				if counts {
					x = jitteredCount(rng, x)
				} else {
					x *= math.Exp(0.05 * rng.NormFloat64())
				}
				s.times, s.values = append(s.times, ts), append(s.values, x)
			}
			return s
		},
	},
}
