package detect_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// rulePages follows, on one stream of verdicts, an alert as a rule keeps
// it (rules: firing from an alert while the state is anomalous or the
// verdict holds it), and counts its pages.
type rulePages struct {
	lingering bool // whether Verdict.Lingering holds the alert, as rules does
	firing    bool
	// pages, and those starting in a window; windows with a page of
	// their own, and those an alert from before them was firing in
	// without one; samples firing and in all.
	pages, inWindows, paged, covered, firingRows, rows int
	pagedWin, firingWin                                []bool
}

func (r *rulePages) observe(v detect.Verdict, threshold float64, win int) {
	held := v.Episode || v.Shifted || (r.lingering && v.Lingering)
	switch {
	case v.Score >= threshold && !r.firing:
		r.firing = true
		r.pages++
		if win >= 0 {
			r.inWindows++
			r.pagedWin[win] = true
		}
	case r.firing && v.State != detect.StateAnomalous && !held:
		r.firing = false
	}
	if r.firing {
		r.firingRows++
		if win >= 0 {
			r.firingWin[win] = true
		}
	}
	r.rows++
}

func (r *rulePages) endSeries() {
	for k, p := range r.pagedWin {
		switch {
		case p:
			r.paged++
		case r.firingWin[k]:
			r.covered++
		}
	}
	r.firing = false
}

// TestSyntheticRulePages: what the rules' hold on Verdict.Lingering does
// to the pages of the families, followed as a rule follows the alert.
// It pages less (seeds 1–3: 1,302 → 1,237, 1,345 → 1,287, 1,272 →
// 1,194), fewer of them outside the windows (779 → 731, 790 → 747, 753
// → 693), and keeps alerts firing longer (2.5 % of the samples → 4.4
// to 4.9 %: the lasting incidents of heavy_latency, growth and
// disk_fill fire while they last). The cost: an alert still held when
// the next incident begins is that incident's page. Of 592 windows, 3,
// 4 and 6 no longer have a page of their own. The test holds that cost
// under 2 % of the windows, and the hold to paging no more than
// without it.
func TestSyntheticRulePages(t *testing.T) {
	seed := synthSeed(t)
	cfg := detect.DefaultAutoConfig()
	var without, with rulePages
	with.lingering = true
	windows := 0
	for _, f := range families {
		for _, s := range f.generate(seed) {
			d := detect.NewAuto(cfg)
			for _, r := range []*rulePages{&without, &with} {
				r.pagedWin, r.firingWin = make([]bool, len(s.windows)), make([]bool, len(s.windows))
			}
			k := 0 // the window a row is in or before
			for j := range s.values {
				v := d.Observe(s.times[j], s.values[j])
				if math.IsNaN(s.values[j]) {
					continue
				}
				for k < len(s.windows) && j > s.windows[k].Last {
					k++
				}
				win := -1
				if k < len(s.windows) && j >= s.windows[k].First {
					win = k
				}
				without.observe(v, cfg.Threshold, win)
				with.observe(v, cfg.Threshold, win)
			}
			without.endSeries()
			with.endSeries()
			windows += len(s.windows)
		}
	}
	for _, r := range []*rulePages{&without, &with} {
		t.Logf("lingering held %-5v: pages %d, outside windows %d; windows paged %d, covered by an earlier alert %d, of %d; firing %.2f %% of samples",
			r.lingering, r.pages, r.pages-r.inWindows, r.paged, r.covered, windows, 100*float64(r.firingRows)/float64(r.rows))
	}
	require.LessOrEqual(t, with.pages, without.pages, "the hold pages more")
	require.LessOrEqual(t, without.paged-with.paged, windows/50, "windows that lost their own page to a held alert")
	require.Greater(t, with.firingRows, without.firingRows, "the hold held nothing: the test shows nothing")
}
