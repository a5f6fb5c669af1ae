package nab

import (
	"slices"
)

// Categories returns the corpus categories (data/ subdirectories), sorted.
func (c *Corpus) Categories() []string {
	var cats []string
	for _, f := range c.Files {
		if cat := f.Category(); !slices.Contains(cats, cat) {
			cats = append(cats, cat)
		}
	}
	slices.Sort(cats)
	return cats
}

// subset returns the series of the files whose category is in cats.
func (c *Corpus) subset(scores [][]float64, cats []string) []Series {
	var s []Series
	for i, f := range c.Files {
		if slices.Contains(cats, f.Category()) {
			s = append(s, Series{Windows: f.Windows, Scores: scores[i]})
		}
	}
	return s
}

// CategoryScore is the standard profile over one category at the corpus
// thresholds.
type CategoryScore struct {
	Category                string
	Files, Windows, Missing int
	// Optimized is scored at the threshold optimised over the whole
	// corpus, Fixed at the detector's own alert threshold. A category
	// without windows normalises to 0; its FP count is what tells.
	Optimized, Fixed Outcome
}

// ByCategory scores each category under the standard profile at the two
// given corpus-wide thresholds.
func ByCategory(c *Corpus, scores [][]float64, optimized, fixed float64) []CategoryScore {
	var out []CategoryScore
	for _, cat := range c.Categories() {
		cs := CategoryScore{Category: cat}
		for _, f := range c.Files {
			if f.Category() == cat {
				cs.Files++
				cs.Windows += len(f.Windows)
				cs.Missing += f.Missing
			}
		}
		series := c.subset(scores, []string{cat})
		cs.Optimized = Score(series, Standard, optimized)
		cs.Fixed = Score(series, Standard, fixed)
		out = append(out, cs)
	}
	return out
}

// Candidate is one detector configuration's scores over the whole corpus
// (parallel to Corpus.Files). Detectors never see labels, so one run per
// configuration serves every fold.
type Candidate struct {
	Name   string
	Scores [][]float64
}

// Fold is one cross-validation split: the categories held out for testing;
// every other category is for tuning.
type Fold struct {
	Test []string
}

// FoldResult is the outcome of one fold: the candidate and threshold
// chosen on the tuning categories, their score there, and the score of that
// choice on the held-out categories.
type FoldResult struct {
	Fold
	Chosen      string
	Tune, Trial Outcome
}

// LeaveOneOut returns one fold per category.
func (c *Corpus) LeaveOneOut() []Fold {
	var folds []Fold
	for _, cat := range c.Categories() {
		folds = append(folds, Fold{Test: []string{cat}})
	}
	return folds
}

// Halves returns two folds that split the categories alternately in sorted
// order (first, third, ... against second, fourth, ...): tune on one half,
// test on the other, and the reverse.
func (c *Corpus) Halves() []Fold {
	var a, b []string
	for i, cat := range c.Categories() {
		if i%2 == 0 {
			a = append(a, cat)
		} else {
			b = append(b, cat)
		}
	}
	return []Fold{{Test: a}, {Test: b}}
}

// CrossValidate runs every fold: on the categories outside the fold it
// picks the candidate and threshold with the best raw score under profile
// p (earlier candidates win ties), then scores the fold's categories with
// that candidate at that threshold.
func CrossValidate(c *Corpus, cands []Candidate, folds []Fold, p Profile) []FoldResult {
	var out []FoldResult
	for _, fold := range folds {
		var tune []string
		for _, cat := range c.Categories() {
			if !slices.Contains(fold.Test, cat) {
				tune = append(tune, cat)
			}
		}
		r := FoldResult{Fold: fold}
		for i, cand := range cands {
			o := Optimize(c.subset(cand.Scores, tune), p)
			if i == 0 || o.Raw > r.Tune.Raw {
				r.Chosen, r.Tune = cand.Name, o
				r.Trial = Score(c.subset(cand.Scores, fold.Test), p, o.Threshold)
			}
		}
		out = append(out, r)
	}
	return out
}
