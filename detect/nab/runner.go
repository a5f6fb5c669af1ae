package nab

import (
	"fmt"
	"time"

	"github.com/seismo-agent/seismo/detect"
)

// Run feeds every file of the corpus to a fresh detector from newDetector and
// returns the scores per file (parallel to c.Files) and the time spent in
// Observe calls. progress, when not nil, is called after each file with the
// number of files done.
func Run(c *Corpus, newDetector func() (detect.Detector, error), progress func(done, total int)) ([][]float64, time.Duration, error) {
	out := make([][]float64, len(c.Files))
	var elapsed time.Duration
	for fi, f := range c.Files {
		d, err := newDetector()
		if err != nil {
			return nil, 0, fmt.Errorf("new detector for %s: %w", f.Name, err)
		}
		scores := make([]float64, f.Rows())
		start := time.Now()
		for i, v := range f.Values {
			scores[i] = d.Observe(f.Times[i], v).Score
		}
		elapsed += time.Since(start)
		out[fi] = scores
		if progress != nil {
			progress(fi+1, len(c.Files))
		}
	}
	return out, elapsed, nil
}

// Series pairs the corpus windows with per-file scores for the scorer.
func (c *Corpus) Series(scores [][]float64) []Series {
	s := make([]Series, len(c.Files))
	for i, f := range c.Files {
		s[i] = Series{Windows: f.Windows, Scores: scores[i]}
	}
	return s
}

// Report is the full NAB evaluation of one detector.
type Report struct {
	// Optimized holds one outcome per profile, each at its own best threshold.
	Optimized []Outcome
	// Fixed is the standard profile at the detector's own alert threshold.
	Fixed Outcome
	// Rows is the number of data rows in the corpus.
	Rows int
}

// Evaluate scores a run under every profile with threshold optimisation and
// the standard profile at fixedThreshold.
func Evaluate(c *Corpus, scores [][]float64, fixedThreshold float64) Report {
	series := c.Series(scores)
	r := Report{Rows: c.Rows()}
	for _, p := range Profiles() {
		r.Optimized = append(r.Optimized, Optimize(series, p))
	}
	r.Fixed = Score(series, Standard, fixedThreshold)
	return r
}
