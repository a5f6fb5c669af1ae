package detect_test

import (
	"math"
	"math/rand/v2"
)

// A seventh probe, drawn for the server-machine metrics a held-out set
// is made of; scored before any change for it (docs/detectors.md, "A
// seventh probe: server metrics").
func init() { families = append(families, probeFamilies7...) }

var probeFamilies7 = []family{
	{
		// Server metrics at 1-minute resolution over 10 to 20 days, three
		// kinds in turn: a utilisation in percent with two decimals, noisy
		// around a slowly wandering level and a weak daily rhythm; a
		// memory share that creeps up and drops back at each restart (a
		// sawtooth of a few days) with little noise; a network or disk
		// rate, heavy-tailed bursts over a daily rhythm. Incidents last 10
		// to 120 minutes: the metric runs at 1.5-3x (a busy loop, a
		// retry storm) or, for the rates, falls to a fifth.
		name: "server_minute",
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{14400, 28800, 20000}[i%3]
			kind := i % 3
			k := []int{2, 3, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			var inc []incident
			for range s.onsets {
				f := 1.5 + 1.5*rng.Float64()
				if kind == 2 && rng.IntN(2) == 0 {
					f = 0.2
				}
				inc = append(inc, incident{f, 10 + rng.IntN(111)})
			}
			level := 5 + 30*rng.Float64()
			walk, mem := 0.0, 0.3+0.2*rng.Float64()
			period := (2 + 3*rng.Float64()) * float64(day/minute)
			for j := range n {
				ts := t0 + int64(j)*minute
				var x float64
				switch kind {
				case 0:
					walk += 0.002 * rng.NormFloat64()
					walk *= 0.999
					x = level * math.Exp(walk) * (1 + 0.15*daily(ts))
					x = withIncidents(x, j, s.onsets, inc)
					x = math.Round(100*math.Min(100, x*(1+0.1*rng.NormFloat64()))) / 100
				case 1:
					ph := math.Mod(float64(j), period) / period
					x = 100 * (mem + 0.3*ph)
					x = withIncidents(x, j, s.onsets, inc)
					x = math.Round(100*math.Min(100, x+0.2*rng.NormFloat64())) / 100
				default:
					x = 1000 * level * (1 + 0.4*daily(ts))
					if rng.IntN(200) == 0 {
						x *= 2 + 3*rng.Float64()
					}
					x = withIncidents(x, j, s.onsets, inc)
					x = math.Max(0, math.Round(x*math.Exp(0.2*rng.NormFloat64())))
				}
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
			}
			return s
		},
	},
}
