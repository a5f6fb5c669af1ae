package detect_test

import (
	"math"
	"math/rand/v2"
)

// Probes: six families drawn after auto's defaults were fixed, and scored
// before any change was made for them, as a check on data the detector
// was not shaped on (docs/detectors.md, "Probes"): request rates that
// grow, HTTP 503 counts that are almost always 0, latencies in whole
// milliseconds, noise that grows without a change of level, hourly rates
// over one to three weeks with a weekly rhythm, and a nightly batch job
// whose spike is normal. Three more (many incidents per series) were
// drawn after those six and scored before the change that reports a
// score below the threshold only at an excursion's peak.
func init() { families = append(families, probeFamilies...) }

var probeFamilies = []family{
	{
		// Ingress rates that grow (or shrink) steadily by 50-200 % over the
		// series, with a daily cycle; incidents are drops or spikes.
		name: "growth",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour}[i%2]
			n := []int{500, 1500, 3000}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			g := []float64{0.5, 1, 2, -0.4}[i%4]
			k := []int{1, 0, 2, 1, 0, 1}[i%6]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				x := level * (1 + g*float64(j)/float64(n)) * (1 + 0.3*daily(ts))
				for m, o := range s.onsets {
					if j >= o && j < o+3+m*6 {
						x *= []float64{0.5, 1.8}[(i+m)%2]
					}
				}
				x += 0.04 * x * rng.NormFloat64()
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, math.Round(x)))
			}
			return s
		},
	},
	{
		// HTTP 503 counts: nearly always 0, now and then a stray 1; an
		// incident is a burst of several to tens for one to five steps.
		name: "rare_counts",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour, minute}[i%3]
			n := []int{600, 2000, 5000, 1000}[i%4]
			base := []float64{0.005, 0.02, 0.08}[i%3]
			k := []int{1, 0, 2, 0}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				lambda := base * (1 + 0.8*daily(ts))
				for m, o := range s.onsets {
					if j >= o && j < o+1+(i+m)%3*2 {
						lambda += 3 + float64(rng.IntN(30))
					}
				}
				v := poisson(rng, lambda)
				if rng.IntN(300) == 0 {
					v += 1
				}
				s.times, s.values = append(s.times, ts), append(s.values, v)
			}
			return s
		},
	},
	{
		// Latency in whole milliseconds, a few ms, so values repeat;
		// incidents are 2-3x for 5-15 samples.
		name: "quantised_latency",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{minute, fiveMins}[i%2]
			n := []int{1000, 3000, 6000}[i%3]
			med := 2 + 4*rng.Float64()
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				f := 1.0
				for m, o := range s.onsets {
					if j >= o && j < o+5+m*10 {
						f = []float64{3, 2}[(i+m)%2]
					}
				}
				x := med * f * math.Exp(0.2*rng.NormFloat64()+0.1*daily(ts))
				s.times, s.values = append(s.times, ts), append(s.values, math.Round(x))
			}
			return s
		},
	},
	{
		// Noise that grows eightfold (a flapping dependency) for 20-30
		// samples without a change of level.
		name: "variance_change",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{minute, fiveMins}[i%2]
			n := []int{1500, 3000, 800}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			k := []int{1, 0, 1, 2}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				sd := 0.03
				for m, o := range s.onsets {
					if j >= o && j < o+20+m*10 {
						sd = 0.25
					}
				}
				x := level * (1 + 0.2*daily(ts)) * (1 + sd*rng.NormFloat64())
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
			}
			return s
		},
	},
	{
		// Hourly rates over one to three weeks with a daily and a weekly
		// rhythm (weekends at 60-90 %); incidents are drops and surges.
		name:   "hourly_short",
		behind: "seed 1: 60.7 against 62.3 optimised, 8 windows found against 9, zscore at a threshold of 0.13 with 21 false alarms; below 0.6 auto alerts on the first weekend, new to a detector without a weekly baseline (in 10 of 12 series at 0.23); ahead at the own thresholds (60.7 against 15.7) and over seeds 1-6, 7-12 and 13-18",
		floor:  [2]float64{51, 25},
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{168, 336, 504}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			wk := 0.6 + 0.3*rng.Float64()
			k := []int{1, 0, 1, 2}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*hour
				x := level * (1 + 0.5*daily(ts)) * weekly(ts, wk)
				for m, o := range s.onsets {
					if j >= o && j < o+2+m*3 {
						x *= []float64{0.3, 2}[(i+m)%2]
					}
				}
				x += 0.05 * x * rng.NormFloat64()
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, math.Round(x)))
			}
			return s
		},
	},
	{
		// A nightly batch job: three times the rate for the first ten to
		// thirty minutes of every day is normal; incidents are surges and
		// drops at other times.
		name: "cron_spikes",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, 15 * minute}[i%2]
			n := []int{2000, 4000, 1000}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				x := level * (1 + 0.2*daily(ts))
				if ts%day < step*2 { // the job at midnight
					x *= 3
				}
				for m, o := range s.onsets {
					if j >= o && j < o+2+m*6 {
						x *= []float64{2.5, 0.4}[(i+m)%2]
					}
				}
				x += 0.05 * x * rng.NormFloat64()
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
			}
			return s
		},
	},
	// Three more, drawn after the six above: many incidents per series,
	// as in sets labelled point by point.
	{
		// Many labelled point anomalies per series (spikes and dips of one
		// to three samples), as in sets labelled point by point.
		name: "many_points",
		gen:  manyPoints(false),
	},
	{
		// The same with a heavier-tailed noise (t-like): some benign
		// excursions.
		name: "many_points_heavy",
		gen:  manyPoints(true),
	},
	{
		// Many short level incidents (an outage of a few to twenty samples)
		// in sparse counts.
		name:   "many_bursts_counts",
		behind: "bursts that recur every 60-130 samples, up to 18 long (a fifth of the rows in some series), become usual to auto: its likelihood learns them, and the spike baseline's spread, swollen by one burst, hides the next; zscore forgets them within its half-life (seed 1, fixed threshold: auto finds 24 of 45, zscore 31)",
		floor:  [2]float64{64, 34},
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour}[i%2]
			n := []int{1000, 2000, 600}[i%3]
			base := []float64{0.2, 1, 5, 20}[i%4]
			k := []int{5, 3, 0, 7}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				lambda := base * (1 + 0.5*daily(ts))
				for _, o := range s.onsets {
					if j >= o && j < o+3+i%4*5 {
						lambda = lambda*3 + 3
					}
				}
				s.times, s.values = append(s.times, ts), append(s.values, count(rng, lambda))
			}
			return s
		},
	},
}

// manyPoints draws series with many point anomalies (spikes and dips of
// one to three samples) over a daily cycle; with heavy, one noise sample
// in 50 is three times as large.
func manyPoints(heavy bool) func(rng *rand.Rand, i int) synthSeries {
	return func(rng *rand.Rand, i int) synthSeries {
		step := []int64{fiveMins, hour, minute}[i%3]
		n := []int{1000, 1500, 3000, 700}[i%4]
		level := math.Pow(10, 1+3*rng.Float64())
		k := []int{4, 6, 8, 0, 5, 3}[i%6]
		s := synthSeries{onsets: onsets(rng, n, k)}
		for j := range n {
			ts := t0 + int64(j)*step
			x := level * (1 + 0.3*daily(ts))
			for m, o := range s.onsets {
				if j >= o && j < o+1+(i+m)%3 {
					x *= []float64{1.6, 0.5, 2.2, 0.7}[(i+m)%4]
				}
			}
			e := rng.NormFloat64()
			if heavy && rng.IntN(50) == 0 {
				e *= 3
			}
			x += 0.05 * level * e
			s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
		}
		return s
	}
}
