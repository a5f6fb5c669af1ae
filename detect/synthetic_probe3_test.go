package detect_test

import (
	"math"
	"math/rand/v2"
)

// A third batch of probes, drawn after the rule that a record where its
// time of day usually is (relative to the level) is no news, and scored
// before any change for them (docs/detectors.md, "Probes"): ingress rates
// with daily and weekly rhythms and a slow trend, dependency latencies
// with harmless deploy shifts, and crash rates per thousand sessions.
func init() { families = append(families, probeFamilies3...) }

var probeFamilies3 = []family{
	{
		// Ingress rates over one to nine weeks: a daily cycle, quieter
		// weekends and a slow trend; incidents are drops and surges of one
		// to six hours; a third of the series all-normal.
		name: "weekly_growth",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour}[i%2]
			n := []int{2000, 4000, 8000}[i%3]
			if step == hour {
				n = []int{500, 1000, 1500}[i%3]
			}
			level := math.Pow(10, 1+3*rng.Float64())
			g := -0.2 + 0.7*rng.Float64()
			amp := 0.3 + 0.2*rng.Float64()
			wk := 0.6 + 0.3*rng.Float64()
			k := []int{0, 1, 2, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			var inc []incident
			for range s.onsets {
				hours := 1 + rng.IntN(6)
				f := 0.3 + 0.3*rng.Float64()
				if rng.IntN(2) == 0 {
					f, hours = 1.6+0.9*rng.Float64(), 1+rng.IntN(3)
				}
				inc = append(inc, incident{f, max(int(int64(hours)*hour/step), 2)})
			}
			for j := range n {
				ts := t0 + int64(j)*step
				lambda := level * (1 + g*float64(j)/float64(n)) * (1 + amp*daily(ts)) * weekly(ts, wk)
				lambda = withIncidents(lambda, j, s.onsets, inc)
				s.times, s.values = append(s.times, ts), append(s.values, jitteredCount(rng, lambda))
			}
			return s
		},
	},
	{
		// Dependency latencies (ms, log-normal) at a 5-minute step with a
		// small daily cycle and a harmless deploy every one to three days
		// that moves the median by up to 10 % for good; an incident moves
		// it 1.5-3x, for good or until a fix six to 48 hours later.
		name: "latency_deploys",
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{2000, 4000, 6000}[i%3]
			med := math.Pow(10, 1+1.5*rng.Float64())
			sigma := 0.1 + 0.2*rng.Float64()
			k := []int{1, 0, 2, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			fix := make([]int, len(s.onsets))
			factor := make([]float64, len(s.onsets))
			for m := range s.onsets {
				factor[m] = 1.5 + 1.5*rng.Float64()
				fix[m] = n // for good
				if rng.IntN(2) == 0 {
					fix[m] = s.onsets[m] + int((6+rng.Int64N(43))*hour/fiveMins)
				}
			}
			deploy, next := 1.0, 288+rng.IntN(2*288)
			for j := range n {
				ts := t0 + int64(j)*fiveMins
				if j == next {
					deploy *= 0.9 + 0.2*rng.Float64()
					next += 288 + rng.IntN(2*288)
				}
				f := deploy * (1 + 0.1*daily(ts))
				for m, o := range s.onsets {
					if j >= o && j < fix[m] {
						f *= factor[m]
					}
				}
				x := med * f * math.Exp(sigma*rng.NormFloat64())
				s.times, s.values = append(s.times, ts), append(s.values, x)
			}
			return s
		},
	},
	{
		// Crashes per thousand sessions, hourly or every five minutes:
		// sessions follow a daily cycle (few at night, so the rate is
		// noisy and often 0 then); an incident multiplies the crash
		// probability four to ten times for two to twelve steps.
		name: "crash_rate",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour}[i%2]
			n := []int{1500, 3000, 800}[i%3]
			sessions := math.Pow(10, 2.5+2*rng.Float64())
			p := (0.1 + 1.9*rng.Float64()) / 1000
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			dur := make([]int, len(s.onsets))
			mult := make([]float64, len(s.onsets))
			for m := range s.onsets {
				dur[m], mult[m] = 2+rng.IntN(11), 4+6*rng.Float64()
			}
			for j := range n {
				ts := t0 + int64(j)*step
				sess := math.Max(1, count(rng, sessions*(1+0.8*daily(ts))))
				q := p
				for m, o := range s.onsets {
					if j >= o && j < o+dur[m] {
						q *= mult[m]
					}
				}
				crashes := count(rng, sess*q)
				s.times, s.values = append(s.times, ts), append(s.values, 1000*crashes/sess)
			}
			return s
		},
	},
}
