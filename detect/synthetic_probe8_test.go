package detect_test

import (
	"math"
	"math/rand/v2"
)

// An eighth family, drawn for the mostly constant counters and gauges a
// server exports beside its busy metrics. Unlike the probes it was drawn
// before the change it measures and tuned on (docs/detectors.md,
// "Departures from a repeated value").
func init() { families = append(families, probeFamilies8...) }

var probeFamilies8 = []family{
	{
		// Mostly constant server metrics at 1-minute resolution over 6 to
		// 12 days, which move for one or two samples every few hours
		// as a matter of course, two kinds in turn: a counter of rare
		// events (swap-ins, retransmits, OOM kills), 0 but for a blip of
		// a few every 4 to 12 hours; a gauge (worker processes, open
		// connections to a pool) at a whole number that dips or rises by
		// one or two for a sample as often. An incident keeps the metric
		// moving for 10 to 60 minutes: the counter at several times its
		// blips' size, the gauge at a level it does not hold otherwise.
		name: "server_blips",
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{8640, 17280, 12000}[i%3]
			kind := i % 2
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			gap := 240 + rng.IntN(480) // the blips' mean spacing in samples
			size := float64(1 + rng.IntN(20))
			base := float64(4 + rng.IntN(60))
			next := rng.IntN(gap)
			for j := range n {
				ts := t0 + int64(j)*minute
				x := 0.0
				if kind == 1 {
					x = base
				}
				if j == next || j == next+1 && rng.IntN(3) == 0 {
					if kind == 0 {
						x = math.Max(1, math.Round(size*(0.7+0.6*rng.Float64())))
					} else {
						x += float64((1 + rng.IntN(2)) * (1 - 2*rng.IntN(2)))
					}
				}
				if j == next+1 {
					next += gap/2 + rng.IntN(gap)
				}
				for _, o := range s.onsets {
					if j >= o && j < o+10+(o%51) {
						if kind == 0 {
							x = math.Round(size * (3 + 3*rng.Float64()))
						} else {
							x = base + math.Round(base*(0.3+0.3*rng.Float64()))
						}
					}
				}
				s.times, s.values = append(s.times, ts), append(s.values, x)
			}
			return s
		},
	},
}
