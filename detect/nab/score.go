package nab

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Profile is a NAB application profile: the weights of a true positive, a
// false positive and a false negative.
type Profile struct {
	Name       string
	TP, FP, FN float64
}

// The three NAB profiles.
var (
	Standard = Profile{Name: "standard", TP: 1, FP: 0.11, FN: 1}
	LowFP    = Profile{Name: "reward_low_FP_rate", TP: 1, FP: 0.22, FN: 1}
	LowFN    = Profile{Name: "reward_low_FN_rate", TP: 1, FP: 0.11, FN: 2}
)

// Profiles returns the three profiles in scoreboard order.
func Profiles() []Profile { return []Profile{Standard, LowFP, LowFN} }

// NeverDetect is the threshold candidate that means "no row is a detection".
const NeverDetect = 1.1

// ScaledSigmoid is NAB's sigma(y) = 2/(1+exp(5y)) - 1, with sigma(y) = -1 for
// y > 3. It is near 1 well before a window's end, 0 at the end and negative
// after it.
func ScaledSigmoid(y float64) float64 {
	if y > 3 {
		return -1
	}
	return 2/(1+math.Exp(5*y)) - 1
}

// Series is one scored file: its windows and the detector's score per row.
// The first Probation(len(Scores)) rows are never scored.
type Series struct {
	Windows []Window
	Scores  []float64
}

// Outcome is the score of a detector over a set of series for one profile
// at one threshold.
type Outcome struct {
	Profile   Profile
	Threshold float64
	// Raw is the total raw score S; Normalized is 100*(S-Snull)/(Sperfect-Snull).
	Raw, Normalized float64
	// TP and FN count windows; FP counts rows detected outside every window.
	TP, FP, FN int
}

func (o Outcome) String() string {
	return fmt.Sprintf("%-18s %6.2f  (threshold %.6g, raw %.3f, TP %d, FN %d, FP %d)",
		o.Profile.Name, o.Normalized, o.Threshold, o.Raw, o.TP, o.FN, o.FP)
}

// Normalize maps a raw score to NAB's 0 (null detector) to 100 (perfect
// detector) scale for a corpus with the given number of windows.
func Normalize(raw float64, windows int, p Profile) float64 {
	perfect := p.TP * float64(windows)
	null := -p.FN * float64(windows)
	if perfect == null {
		return 0
	}
	return 100 * (raw - null) / (perfect - null)
}

// rowWeights returns, for each scored row of a file, the value of a
// detection there and the window it falls in (-1 outside every window),
// in weight and window grown to rows (buffers a caller reuses).
// Inside window w with last row R and width W the value is
// A_TP*sigma(-(R-i+1)/W)/sigma(-1) (only the earliest detection counts);
// outside, A_FP*sigma((i-R)/(W-1)) for the nearest preceding window, or
// -A_FP before the first window.
func rowWeights(windows []Window, rows int, p Profile, weight []float64, window []int32) ([]float64, []int32) {
	weight, window = grow(weight, rows), grow(window, rows)
	tpNorm := ScaledSigmoid(-1)
	prev := -1 // index of the last window that ends before the current row
	next := 0  // index of the first window that does not end before the row
	for i := range rows {
		for next < len(windows) && windows[next].Last < i {
			prev = next
			next++
		}
		if next < len(windows) && windows[next].First <= i {
			w := windows[next]
			pos := -float64(w.Last-i+1) / float64(w.Width())
			weight[i] = p.TP * ScaledSigmoid(pos) / tpNorm
			window[i] = int32(next)
			continue
		}
		window[i] = -1
		if prev < 0 {
			weight[i] = -p.FP
			continue
		}
		w := windows[prev]
		if w.Width() <= 1 {
			weight[i] = -p.FP
			continue
		}
		y := float64(i-w.Last) / float64(w.Width()-1)
		weight[i] = p.FP * ScaledSigmoid(y)
	}
	return weight, window
}

// grow returns s resliced to n elements, reallocated if its capacity is
// smaller, for a buffer reused from file to file.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Score scores every series at one threshold: rows with score >= threshold
// are detections.
func Score(series []Series, p Profile, threshold float64) Outcome {
	o := Outcome{Profile: p, Threshold: threshold}
	nWindows := 0
	var weight []float64
	var window []int32
	for _, s := range series {
		n := len(s.Scores)
		weight, window = rowWeights(s.Windows, n, p, weight, window)
		caught := make([]bool, len(s.Windows))
		for i := Probation(n); i < n; i++ {
			if clean(s.Scores[i]) < threshold {
				continue
			}
			w := window[i]
			switch {
			case w < 0:
				o.Raw += weight[i]
				o.FP++
			case !caught[w]:
				caught[w] = true
				o.Raw += weight[i]
				o.TP++
			}
		}
		for _, c := range caught {
			if !c {
				o.Raw -= p.FN
				o.FN++
			}
		}
		nWindows += len(s.Windows)
	}
	o.Normalized = Normalize(o.Raw, nWindows, p)
	return o
}

// Optimize finds the threshold that maximises the total raw score: the
// candidates are every score value emitted on a scored row plus NeverDetect,
// and ties go to the higher threshold. It sweeps the rows once in descending
// score order, so it costs O(n log n) for n rows. Rows that score 0 (most
// of them: a detector scores an alert's first row, not the rows between
// alerts) are one group, swept last without sorting: outside windows only
// the sum of their values counts, and inside one only its earliest such
// row, so the sort and its memory are only the other rows'.
func Optimize(series []Series, p Profile) Outcome {
	type row struct {
		score  float64
		weight float64
		window int32 // global window index, -1 outside windows
		index  int32 // row index in its file, for "earliest detection"
	}
	var rows []row
	var zeroFP float64 // the rows that score 0 outside windows, summed
	var zeroTP []row   // the earliest row that scores 0 in each window that has one
	nWindows := 0
	var weight []float64
	var window []int32
	for _, s := range series {
		n := len(s.Scores)
		weight, window = rowWeights(s.Windows, n, p, weight, window)
		for i := Probation(n); i < n; i++ {
			w := window[i]
			if w >= 0 {
				w += int32(nWindows)
			}
			r := row{score: clean(s.Scores[i]), weight: weight[i], window: w, index: int32(i)}
			switch {
			case r.score != 0:
				rows = append(rows, r)
			case w < 0:
				zeroFP += r.weight
			case len(zeroTP) == 0 || zeroTP[len(zeroTP)-1].window != w:
				zeroTP = append(zeroTP, r)
			}
		}
		nWindows += len(s.Windows)
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.score, a.score) })

	// best[w] is the value window w currently contributes; earliest[w] the
	// row of its earliest detection so far (-1: none yet).
	best := make([]float64, nWindows)
	earliest := make([]int32, nWindows)
	for w := range best {
		best[w] = -p.FN
		earliest[w] = -1
	}
	raw := -p.FN * float64(nWindows)
	bestRaw, bestThreshold := raw, NeverDetect
	detect := func(r row) {
		if r.window < 0 {
			raw += r.weight
			return
		}
		if e := earliest[r.window]; e < 0 || r.index < e {
			raw += r.weight - best[r.window]
			best[r.window] = r.weight
			earliest[r.window] = r.index
		}
	}
	zeros := false // whether the rows that score 0 have been swept
	sweepZeros := func() {
		zeros = true
		raw += zeroFP
		for _, r := range zeroTP {
			detect(r)
		}
		if raw > bestRaw {
			bestRaw, bestThreshold = raw, 0
		}
	}
	for i := 0; i < len(rows); {
		t := rows[i].score
		if t < 0 && !zeros {
			sweepZeros()
		}
		for ; i < len(rows) && rows[i].score == t; i++ {
			detect(rows[i])
		}
		if raw > bestRaw {
			bestRaw, bestThreshold = raw, t
		}
	}
	if !zeros {
		sweepZeros()
	}
	// Score again at the chosen threshold so that the reported figure has no
	// accumulated rounding from the sweep.
	return Score(series, p, bestThreshold)
}

// clean maps a NaN score to 0 so that it is never a detection and sorts
// consistently.
func clean(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
