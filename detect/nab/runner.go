package nab

import (
	"fmt"
	"math"
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
		ScoreSeries(d, f.Times, f.Values, scores)
		elapsed += time.Since(start)
		out[fi] = scores
		if progress != nil {
			progress(fi+1, len(c.Files))
		}
	}
	return out, elapsed, nil
}

// ScoreSeries feeds a series to d and writes the score of each row to out
// (len(values) long). A row whose previous verdict was already anomalous
// belongs to the same episode: it scores 0, so an episode is one detection,
// as it is one alert, however long the detector's state stays anomalous.
// Rows without a value (NaN) neither start nor end an episode.
func ScoreSeries(d detect.Detector, times []int64, values []float64, out []float64) {
	inEpisode := false
	for i, v := range values {
		verdict := d.Observe(times[i], v)
		out[i] = verdict.Score
		if math.IsNaN(v) {
			continue
		}
		if inEpisode {
			out[i] = 0
		}
		inEpisode = verdict.State == detect.StateAnomalous
	}
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
