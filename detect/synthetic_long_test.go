package detect_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/seismo-agent/seismo/detect/nab"
	"github.com/stretchr/testify/require"
)

// TestSyntheticLongSeries: held-out cloud-service KPIs run to months of
// 1-minute samples, longer than any NAB file (22,695 rows) or family
// (30,000). Twelve series of 100,000 rows (69 days) of kpi_minute's
// curve, weekends and noise, with 16 incidents each spread over them
// (dips of 20-30 % for 5-29 minutes, surges of 20-35 % for 1-5), are
// scored at auto's own threshold. Its memories (the records' bars and
// the noise they must beat, the likelihoods' long runs, the slices)
// must not dull with age: the second halves find as many incidents as
// the first halves (within 2 of 96), with no more false alarms (within
// 3), and auto stays far ahead of zscore (docs/detectors.md, "Generalising to unseen metrics:
// what was measured").
func TestSyntheticLongSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("1.2 million samples per detector")
	}
	const n, k = 100_000, 16
	var series []synthSeries
	for i := range 12 {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		level := math.Pow(10, 1+3*rng.Float64())
		amp := 0.5 + 0.3*rng.Float64()
		noise := 0.02 + 0.03*rng.Float64()
		s := synthSeries{onsets: onsets(rng, n, k)}
		var inc []incident
		for range s.onsets {
			if rng.IntN(2) == 0 {
				inc = append(inc, incident{0.8 - 0.1*rng.Float64(), 5 + rng.IntN(25)})
			} else {
				inc = append(inc, incident{1.2 + 0.15*rng.Float64(), 1 + rng.IntN(5)})
			}
		}
		s.drawKPI(rng, n, minute, level, amp, noise, inc)
		s.label()
		series = append(series, s)
	}
	type halves struct{ tp, fn, fp [2]int }
	run := func(kind string) (nab.Outcome, halves) {
		cfg, err := nab.KindConfig(kind)
		require.NoError(t, err)
		newDet, threshold, err := nab.Factory(cfg)
		require.NoError(t, err)
		var ss []nab.Series
		var h halves
		for _, s := range series {
			d, err := newDet()
			require.NoError(t, err)
			scores := make([]float64, n)
			nab.ScoreSeries(d, s.times, s.values, scores)
			ss = append(ss, nab.Series{Windows: s.windows, Scores: scores})
			window := make([]int, n)
			for r := range window {
				window[r] = -1
			}
			for w, win := range s.windows {
				for r := win.First; r <= win.Last; r++ {
					window[r] = w
				}
			}
			found := make([]bool, len(s.windows))
			for r := nab.Probation(n); r < n; r++ {
				switch {
				case scores[r] < threshold:
				case window[r] < 0:
					h.fp[r*2/n]++
				default:
					found[window[r]] = true
				}
			}
			for w, f := range found {
				if half := s.windows[w].First * 2 / n; f {
					h.tp[half]++
				} else {
					h.fn[half]++
				}
			}
		}
		return nab.Score(ss, nab.Standard, threshold), h
	}
	auto, h := run("auto")
	zscore, _ := run("zscore")
	t.Logf("auto %.1f (first half TP %d FN %d FP %d, second half TP %d FN %d FP %d), zscore %.1f, at their own thresholds",
		auto.Normalized, h.tp[0], h.fn[0], h.fp[0], h.tp[1], h.fn[1], h.fp[1], zscore.Normalized)
	require.GreaterOrEqual(t, h.tp[1], h.tp[0]-2, "the second half's incidents found")
	require.LessOrEqual(t, h.fp[1], h.fp[0]+3, "the second half's false alarms")
	require.GreaterOrEqual(t, auto.Normalized, zscore.Normalized+40, "auto against zscore")
}
