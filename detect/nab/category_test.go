package nab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// threeCategories is a corpus of three one-window files, one per category,
// with 100 rows each (probation 15) and the window over rows 40..49.
func threeCategories() *Corpus {
	c := &Corpus{}
	for _, cat := range []string{"b", "a", "c"} {
		c.Files = append(c.Files, &File{Name: cat + "/f.csv", Values: make([]float64, 100), Windows: []Window{{First: 40, Last: 49}}})
	}
	return c
}

func TestCategoriesAndFolds(t *testing.T) {
	c := threeCategories()
	require.Equal(t, []string{"a", "b", "c"}, c.Categories())
	require.Equal(t, []Fold{{Test: []string{"a"}}, {Test: []string{"b"}}, {Test: []string{"c"}}}, c.LeaveOneOut())
	require.Equal(t, []Fold{{Test: []string{"a", "c"}}, {Test: []string{"b"}}}, c.Halves())
}

func TestByCategory(t *testing.T) {
	c := threeCategories()
	// File order is b, a, c: b detects on the window's first row, a not at
	// all, c once outside the window.
	scores := [][]float64{detectAt(100, 40), detectAt(100), detectAt(100, 20)}
	cats := ByCategory(c, scores, 0.5, 0.5)
	require.Len(t, cats, 3)
	require.Equal(t, "a", cats[0].Category)
	require.Equal(t, 1, cats[0].Optimized.FN)
	require.InDelta(t, 0, cats[0].Optimized.Normalized, 1e-12)
	require.Equal(t, "b", cats[1].Category)
	require.InDelta(t, 100, cats[1].Fixed.Normalized, 1e-12)
	require.Equal(t, 1, cats[2].Fixed.FP)
}

func TestCrossValidateTunesOnTheRest(t *testing.T) {
	c := threeCategories()
	// Candidate "good" detects every window at score 0.8 and has a false
	// alarm at 0.9 in category c only; "bad" never detects anything.
	good := [][]float64{detectAt(100, 40), detectAt(100, 40), detectAt(100, 40, 20)}
	for _, s := range good {
		s[40] = 0.8
	}
	good[2][20] = 0.9
	cands := []Candidate{{Name: "bad", Scores: [][]float64{make([]float64, 100), make([]float64, 100), make([]float64, 100)}}, {Name: "good", Scores: good}}
	folds := CrossValidate(c, cands, c.LeaveOneOut(), Standard)
	require.Len(t, folds, 3)
	for _, f := range folds {
		require.Equal(t, "good", f.Chosen, "held out %v", f.Test)
		require.Equal(t, 0.8, f.Tune.Threshold)
		require.Equal(t, 1, f.Trial.TP)
	}
	// Holding out c, the tuning never saw its false alarm; it is charged
	// on the held-out side only.
	require.Equal(t, 1, folds[0].Tune.FP, "tuned on b and c")
	require.Equal(t, 1, folds[2].Trial.FP)
	require.Equal(t, 0, folds[2].Tune.FP)
}
