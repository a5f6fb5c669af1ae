package detect_test

import (
	"math"
	"math/rand/v2"
)

// A ninth probe, drawn for metrics an agent beside a service samples
// that no family had: a worker pool's queue length (scraped every 15 s
// or every minute), a runtime's GC pauses and a disk filling up between
// log rotations. Scored before any change for it (docs/detectors.md,
// "A ninth probe: queues, pauses and disks").
func init() { families = append(families, probeFamilies9...) }

var probeFamilies9 = []family{
	{
		// A worker pool's queue length: arrivals with a daily cycle, served
		// at a fixed capacity, so the queue is mostly empty and forms at
		// the busy hours (utilisation peaks at 0.6 to 0.9). Three to ten
		// days at 15 s or 1 minute. Incidents: the consumers stall for 2
		// to 20 minutes (the queue climbs by the arrivals), serve at 70 %
		// of the arrival rate for 30 to 90 minutes (a slow dependency),
		// or arrivals surge to 2.5 times the busy hours' rate for 10 to
		// 30 minutes. Each fault builds a queue at any hour. A third of
		// the series are all-normal.
		name: "queue_depth",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{15_000, minute}[i%2]
			days := []int{3, 7, 5, 10}[i%4]
			n := int(int64(days) * day / step)
			k := []int{2, 0, 3}[i%3]
			s := synthSeries{onsets: onsets(rng, n, k)}
			perMin := 20 + 400*rng.Float64() // arrivals per minute at the daily mean
			peak := 0.6 + 0.3*rng.Float64()  // utilisation at the daily peak
			arrive := perMin * float64(step) / float64(minute)
			capacity := arrive * 1.6 / peak // served per step
			type fault struct {
				kind, steps int
			}
			var faults []fault
			for range s.onsets {
				var d int64
				kind := rng.IntN(3)
				switch kind {
				case 0: // stall
					d = int64(2+rng.IntN(19)) * minute
				case 1: // slow
					d = int64(30+rng.IntN(61)) * minute
				default: // surge
					d = int64(10+rng.IntN(21)) * minute
				}
				faults = append(faults, fault{kind, max(int(d/step), 1)})
			}
			q := 0.0
			for j := range n {
				ts := t0 + int64(j)*step
				lambda, mu := arrive*(1+0.6*daily(ts)), capacity
				for m, o := range s.onsets {
					if j < o || j >= o+faults[m].steps {
						continue
					}
					switch faults[m].kind {
					case 0:
						mu = 0
					case 1:
						mu = 0.7 * lambda
					default:
						lambda = 2.5 * 1.6 * arrive // the daily peak's rate is 1.6 arrive
					}
				}
				q = math.Max(0, q+count(rng, lambda)-count(rng, mu))
				s.times, s.values = append(s.times, ts), append(s.values, q)
			}
			return s
		},
	},
	{
		// GC pause time per minute (ms): log-normal around a median of 5
		// to 80 ms with a mild daily rhythm, and a full collection of 5
		// to 15 times the median every one to three hours, which is the
		// runtime's routine. Seven to fourteen days at 1 minute.
		// Incidents: the heap thrashes (pauses 4 to 8 times longer for 15
		// to 60 minutes), or one stop-the-world pause of 50 to 100 times
		// the median.
		name: "gc_pauses",
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{10080, 20160, 14400}[i%3]
			k := []int{2, 3, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			med := 5 + 75*rng.Float64()
			var inc []incident
			for range s.onsets {
				if rng.IntN(3) == 0 {
					inc = append(inc, incident{50 + 50*rng.Float64(), 1})
				} else {
					inc = append(inc, incident{4 + 4*rng.Float64(), 15 + rng.IntN(46)})
				}
			}
			nextFull := 60 + rng.IntN(121)
			for j := range n {
				ts := t0 + int64(j)*minute
				x := med * (1 + 0.2*daily(ts)) * math.Exp(0.5*rng.NormFloat64())
				if j == nextFull {
					x *= 5 + 10*rng.Float64()
					nextFull += 60 + rng.IntN(121)
				}
				x = withIncidents(x, j, s.onsets, inc)
				s.times, s.values = append(s.times, ts), append(s.values, math.Round(x*10)/10)
			}
			return s
		},
	},
	{
		// A filesystem's used share (%): it grows by 0.3 to 2 points a
		// day with a little noise and drops back at a fixed hour each
		// night, when logs rotate (by most of the day's growth). Two to
		// four weeks at 5 minutes or 1 minute, two decimals. Incidents: a
		// runaway writer fills 3 to 10 points within one to three hours
		// (the space stays used until the next rotation), or a dump of 5
		// to 10 points lands at once.
		name: "disk_fill",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, minute}[i%2]
			days := []int{14, 21, 28}[i%3]
			n := int(int64(days) * day / step)
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			used := 20 + 40*rng.Float64()
			rate := (0.3 + 1.7*rng.Float64()) * float64(step) / float64(day) // per step
			rotateAt := int64(rng.IntN(24)) * hour
			keep := 0.1 + 0.2*rng.Float64() // share of a day's growth rotation keeps
			type fill struct {
				points float64
				steps  int
			}
			var fills []fill
			for range s.onsets {
				pts := 3 + 7*rng.Float64()
				steps := 1
				if rng.IntN(2) == 0 {
					steps = max(int(int64(1+rng.IntN(3))*hour/step), 1)
				} else {
					pts = 5 + 5*rng.Float64()
				}
				fills = append(fills, fill{pts, steps})
			}
			// The day's routine growth and what incidents wrote since the
			// last rotation, which frees all of the latter.
			grown, extra := 0.0, 0.0
			for j := range n {
				ts := t0 + int64(j)*step
				if j > 0 && (ts-rotateAt)%day < step {
					used -= (1-keep)*grown + extra
					grown, extra = 0, 0
				}
				g := rate * (1 + 0.5*daily(ts))
				grown += g
				for m, o := range s.onsets {
					if j >= o && j < o+fills[m].steps {
						d := fills[m].points / float64(fills[m].steps)
						extra += d
						g += d
					}
				}
				used += g
				x := math.Min(100, used+0.02*rng.NormFloat64())
				s.times, s.values = append(s.times, ts), append(s.values, math.Round(x*100)/100)
			}
			return s
		},
	},
}
