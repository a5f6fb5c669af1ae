package nab

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// detectAt returns n scores that are 1 at the given rows and 0 elsewhere.
func detectAt(n int, rows ...int) []float64 {
	s := make([]float64, n)
	for _, r := range rows {
		s[r] = 1
	}
	return s
}

func TestScaledSigmoid(t *testing.T) {
	tests := []struct {
		name string
		y    float64
		want float64
	}{
		{"zero", 0, 0},
		{"window start", -1, 2/(1+math.Exp(-5)) - 1},
		{"one width past", 1, 2/(1+math.Exp(5)) - 1},
		{"at cap", 3, 2/(1+math.Exp(15)) - 1},
		{"beyond cap", 3.0001, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, ScaledSigmoid(tt.y), 1e-15)
		})
	}
}

func TestScoreHandComputed(t *testing.T) {
	// 100 rows: probation is 15 rows; one window over rows 40..49 (W = 10).
	win := []Window{{First: 40, Last: 49}}
	tpNorm := ScaledSigmoid(-1)
	tests := []struct {
		name    string
		profile Profile
		scores  []float64
		wantRaw float64
		tp, fp  int
	}{
		{"hit on first row earns exactly A_TP", Standard, detectAt(100, 40), 1, 1, 0},
		{"hit on last row", Standard, detectAt(100, 49), ScaledSigmoid(-1.0/10) / tpNorm, 1, 0},
		{"hit in the middle", Standard, detectAt(100, 45), ScaledSigmoid(-5.0/10) / tpNorm, 1, 0},
		{"only the earliest detection counts", Standard, detectAt(100, 42, 43, 48), ScaledSigmoid(-8.0/10) / tpNorm, 1, 0},
		{"miss costs A_FN", Standard, detectAt(100), -1, 0, 0},
		{"miss costs double in low FN", LowFN, detectAt(100), -2, 0, 0},
		{"FP before the first window costs A_FP", Standard, detectAt(100, 20), -0.11 - 1, 0, 1},
		{"FP before the first window, low FP", LowFP, detectAt(100, 20), -0.22 - 1, 0, 1},
		{"every FP row is charged", Standard, detectAt(100, 20, 21, 22), -0.33 - 1, 0, 3},
		{"probation rows are never scored", Standard, detectAt(100, 0, 14), -1, 0, 0},
		{"first row after probation is scored", Standard, detectAt(100, 15), -0.11 - 1, 0, 1},
		// Row 58 is 9 rows past the window end: y = 9/(W-1) = 1.
		{"FP one width after a window", Standard, detectAt(100, 40, 58), 1 + 0.11*ScaledSigmoid(1), 1, 1},
		// Row 50 is right after the end: y = 1/9.
		{"FP right after a window is nearly free", Standard, detectAt(100, 40, 50), 1 + 0.11*ScaledSigmoid(1.0/9), 1, 1},
		// Row 99 is 50 rows past: y > 3, full cost.
		{"FP far after a window costs A_FP", Standard, detectAt(100, 40, 99), 1 - 0.11, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Score([]Series{{Windows: win, Scores: tt.scores}}, tt.profile, 0.5)
			require.InDelta(t, tt.wantRaw, o.Raw, 1e-12)
			require.Equal(t, tt.tp, o.TP)
			require.Equal(t, tt.fp, o.FP)
			require.Equal(t, 1-tt.tp, o.FN)
		})
	}
}

func TestScoreFirstRowExactlyOne(t *testing.T) {
	// Exactly 1.0, not merely close: the normalisation to 100 depends on it.
	o := Score([]Series{{Windows: []Window{{First: 30, Last: 37}}, Scores: detectAt(60, 30)}}, Standard, 1)
	require.Equal(t, 1.0, o.Raw)
}

func TestNormalize(t *testing.T) {
	wins := []Window{{First: 20, Last: 29}, {First: 60, Last: 79}}
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			null := Score([]Series{{Windows: wins, Scores: make([]float64, 100)}}, p, NeverDetect)
			require.InDelta(t, 0, null.Normalized, 1e-12, "null detector")
			require.Equal(t, 2, null.FN)

			perfect := Optimize([]Series{{Windows: wins, Scores: detectAt(100, 20, 60)}}, p)
			require.InDelta(t, 100, perfect.Normalized, 1e-12, "perfect detector")
			require.Equal(t, 1.0, perfect.Threshold)
		})
	}
	// The README's corpus figures: 116 windows, null -116 (standard) and -232 (low FN).
	require.InDelta(t, 0, Normalize(-116, 116, Standard), 1e-12)
	require.InDelta(t, 0, Normalize(-232, 116, LowFN), 1e-12)
	require.InDelta(t, 100, Normalize(116, 116, LowFP), 1e-12)
	require.InDelta(t, 50, Normalize(0, 116, Standard), 1e-12)
}

func TestOptimizeTiesGoToHigherThreshold(t *testing.T) {
	// Thresholds 0.9 and 0.6 give the same raw score (the 0.6 row is a
	// later detection in a window already caught), so 0.9 must win.
	s := make([]float64, 100)
	s[40] = 0.9 // first row of the window: +1
	s[45] = 0.6 // later in the same window: adds nothing
	o := Optimize([]Series{{Windows: []Window{{First: 40, Last: 49}}, Scores: s}}, Standard)
	require.Equal(t, 0.9, o.Threshold)
	require.Equal(t, 1.0, o.Raw)
}

// TestOptimizeDetectEverything: where only detecting every row catches
// a window, the threshold is the lowest score, 0 (the rows that score
// 0 are swept as one group after the others), or below it.
func TestOptimizeDetectEverything(t *testing.T) {
	win := []Window{{First: 15, Last: 99}} // every scored row of 100
	s := make([]float64, 100)
	o := Optimize([]Series{{Windows: win, Scores: s}}, Standard)
	require.Equal(t, 0.0, o.Threshold)
	require.Equal(t, 1, o.TP)
	for i := range s {
		s[i] = -0.5
	}
	s[50] = 0
	o = Optimize([]Series{{Windows: win, Scores: s}}, Standard)
	require.Equal(t, -0.5, o.Threshold, "the window's first rows score -0.5, below its one 0")
	require.InDelta(t, Score([]Series{{Windows: win, Scores: s}}, Standard, -0.5).Raw, o.Raw, 1e-12)
	// Where the rows that score 0 outside the window cost more than the
	// window gains, no threshold that detects them is best.
	long := make([]float64, 1000)
	o = Optimize([]Series{{Windows: []Window{{First: 900, Last: 999}}, Scores: long}}, Standard)
	require.Equal(t, NeverDetect, o.Threshold, "750 false alarms for one window")
}

func TestOptimizeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var series []Series
	for f := range 5 {
		n := 200 + 50*f
		var wins []Window
		for start := 40 + f*7; start+20 < n; start += 70 {
			wins = append(wins, Window{First: start, Last: start + 15})
		}
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Round(rng.Float64()*50) / 50 // many ties
			switch {
			case f%2 == 0 && rng.IntN(10) > 0:
				s[i] = 0 // mostly 0, as a detector scores between alerts
			case rng.IntN(40) == 0:
				s[i] = math.NaN() // scores as 0
			}
		}
		series = append(series, Series{Windows: wins, Scores: s})
	}
	// A score below 0 (no detector of seismo's gives one) sorts below
	// the rows that score 0.
	series[1].Scores[series[1].Windows[0].First] = -0.5
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			got := Optimize(series, p)
			want := Score(series, p, NeverDetect)
			seen := map[float64]bool{}
			for _, s := range series {
				for _, v := range s.Scores[Probation(len(s.Scores)):] {
					v = clean(v)
					if seen[v] {
						continue
					}
					seen[v] = true
					if o := Score(series, p, v); o.Raw > want.Raw+1e-9 ||
						(math.Abs(o.Raw-want.Raw) <= 1e-9 && v > want.Threshold) {
						want = o
					}
				}
			}
			require.InDelta(t, want.Raw, got.Raw, 1e-9)
			require.Equal(t, want.Threshold, got.Threshold)
		})
	}
}

func TestScoreNaNIsNeverADetection(t *testing.T) {
	s := make([]float64, 100)
	for i := range s {
		s[i] = math.NaN()
	}
	s[40] = 1
	series := []Series{{Windows: []Window{{First: 40, Last: 49}}, Scores: s}}
	o := Score(series, Standard, 0.5)
	require.Equal(t, 0, o.FP)
	require.Equal(t, 1, o.TP)
	o = Optimize(series, Standard)
	require.Equal(t, 1.0, o.Threshold)
	require.Equal(t, 1.0, o.Raw)
}

// BenchmarkOptimize: the threshold sweep over a million scored rows
// of which 5 % score above 0, as a detector's alerts and the peaks
// between them do, in 20 files of 10 windows each.
func BenchmarkOptimize(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	var series []Series
	for range 20 {
		n := 50_000
		var wins []Window
		for start := 1000; start+200 < n; start += n / 10 {
			wins = append(wins, Window{First: start, Last: start + 200})
		}
		s := make([]float64, n)
		for i := range s {
			if rng.IntN(20) == 0 {
				s[i] = rng.Float64()
			}
		}
		series = append(series, Series{Windows: wins, Scores: s})
	}
	b.ReportAllocs()
	for b.Loop() {
		Optimize(series, Standard)
	}
}
