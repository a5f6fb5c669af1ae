package detect_test

import (
	"math"
	"math/rand/v2"
)

// A tenth probe, for two of the signals the built-in pack reads that no
// family had in the form a user's Prometheus gives them: a 99th
// percentile worked out by histogram_quantile from a latency histogram,
// and a container's CPU under a quota. Scored before any change for it
// (docs/detectors.md, "A tenth probe: percentiles and quotas").
func init() { families = append(families, probeFamilies10...) }

var probeFamilies10 = []family{
	{
		// histogram_quantile(0.99, rate(..._bucket[w])) over Prometheus's
		// default buckets (5 ms to 10 s), scraped every 15 s (w = 1m) or
		// every minute (w = 5m), for 3 to 7 days. Requests come at 30 to
		// 3,000 a minute with a daily cycle of ±60 %; their latency is
		// log-normal, median 20 to 200 ms, σ 0.4 to 0.7, so the
		// percentile moves within a bucket by interpolation and jumps
		// between buckets, and is noisier at night. A window with no
		// request has no percentile (NaN). Incidents: a slow dependency
		// (latency ×2 to ×4 for 10 to 40 minutes), a short stall (×3
		// for 2 to 4 minutes), or 3 to 10 % of requests timing out at
		// 5 s for 5 to 20 minutes. A third of the series are all-normal.
		name: "p99_histogram",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{15_000, minute}[i%2]
			win := []int{4, 5}[i%2] // steps in the rate window
			days := []int{3, 5, 7}[i%3]
			n := int(int64(days) * day / step)
			k := []int{2, 0, 3}[i%3]
			s := synthSeries{onsets: onsets(rng, n, k)}
			perMin := math.Pow(10, 1.5+2*rng.Float64())
			median := 0.02 + 0.18*rng.Float64()
			sigma := 0.4 + 0.3*rng.Float64()
			type fault struct {
				kind, steps int
				slower      float64 // the slow dependency's factor
			}
			var faults []fault
			for range s.onsets {
				kind := rng.IntN(3)
				mins := []int{10 + rng.IntN(31), 2 + rng.IntN(3), 5 + rng.IntN(16)}[kind]
				faults = append(faults, fault{kind, max(int(int64(mins)*minute/step), 1), 2 + 2*rng.Float64()})
			}
			timeout := 0.03 + 0.07*rng.Float64()
			ring := make([][12]float64, win)
			for j := range n {
				ts := t0 + int64(j)*step
				reqs := count(rng, perMin*float64(step)/float64(minute)*(1+0.6*daily(ts)))
				med, slow := median, 0.0
				for m, o := range s.onsets {
					if j < o || j >= o+faults[m].steps {
						continue
					}
					switch faults[m].kind {
					case 0:
						med *= faults[m].slower
					case 1:
						med *= 3
					default:
						slow = timeout
					}
				}
				ring[j%win] = histCounts(rng, reqs, med, sigma, slow)
				s.times, s.values = append(s.times, ts), append(s.values, histQuantile(0.99, ring))
			}
			return s
		},
	},
	{
		// A container's CPU in cores, the rate of its usage counter over a
		// minute, under a CFS quota of 1 to 4 cores, every 15 s or every
		// minute for 3 to 10 days. Demand follows the day (±50 % around
		// 30 to 70 % of the quota) with 5 % noise; beyond the quota the
		// container is throttled and its usage sits just under the quota,
		// which half the series reach at their daily peak. Incidents: a
		// busy loop pins it at the quota for 10 to 60 minutes, or the
		// process wedges (threads blocked, CPU falls to a tenth) for 10
		// to 30 minutes. A third of the series are all-normal.
		name: "cpu_quota",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{15_000, minute}[i%2]
			days := []int{3, 7, 5, 10}[i%4]
			n := int(int64(days) * day / step)
			k := []int{2, 0, 3}[i%3]
			s := synthSeries{onsets: onsets(rng, n, k)}
			quota := float64(1 + rng.IntN(4))
			mean := quota * (0.3 + 0.4*rng.Float64())
			if i%4 < 2 { // half the series reach the quota at their peak
				mean = quota / (1.5 - 0.3*rng.Float64())
			}
			var inc []incident
			for range s.onsets {
				if rng.IntN(2) == 0 {
					inc = append(inc, incident{100, int(int64(10+rng.IntN(51)) * minute / step)}) // busy: demand far beyond the quota
				} else {
					inc = append(inc, incident{0.1, int(int64(10+rng.IntN(21)) * minute / step)}) // wedged
				}
			}
			for j := range n {
				ts := t0 + int64(j)*step
				demand := withIncidents(mean*(1+0.5*daily(ts)), j, s.onsets, inc)
				demand *= 1 + 0.05*rng.NormFloat64()
				used := math.Min(demand, quota*(1-0.005*rng.Float64())) // throttled just under the quota
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, used))
			}
			return s
		},
	},
}

// histBounds are the Prometheus client libraries' default histogram
// buckets' upper bounds, in seconds, the last +Inf.
var histBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, math.Inf(1)}

// histCounts draws one scrape interval's bucket counts (not cumulative)
// for reqs requests of log-normal latency (median med, σ sigma), of which
// a share slow take 5 s (a timeout).
func histCounts(rng *rand.Rand, reqs, med, sigma, slow float64) [12]float64 {
	var c [12]float64
	prev := 0.0
	for b, ub := range histBounds {
		cdf := 1.0
		if !math.IsInf(ub, 1) {
			cdf = 0.5 * math.Erfc(-math.Log(ub/med)/(sigma*math.Sqrt2))
		}
		c[b] = count(rng, reqs*(1-slow)*(cdf-prev))
		prev = cdf
	}
	c[9] += count(rng, reqs*slow) // 5 s lies in the (2.5, 5] bucket
	return c
}

// histQuantile is PromQL's histogram_quantile over the sum of the
// windows' bucket counts: linear interpolation within the bucket that
// holds the rank, the highest finite bound if that is the +Inf bucket,
// NaN without observations.
func histQuantile(q float64, windows [][12]float64) float64 {
	var c [12]float64
	total := 0.0
	for _, w := range windows {
		for b := range c {
			c[b] += w[b]
			total += w[b]
		}
	}
	if total == 0 {
		return math.NaN()
	}
	rank, below := q*total, 0.0
	for b, n := range c {
		if below+n >= rank && n > 0 {
			if math.IsInf(histBounds[b], 1) {
				return histBounds[b-1]
			}
			lo := 0.0
			if b > 0 {
				lo = histBounds[b-1]
			}
			return lo + (histBounds[b]-lo)*(rank-below)/n
		}
		below += n
	}
	return histBounds[len(histBounds)-2]
}
