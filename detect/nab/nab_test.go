package nab

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"gopkg.in/yaml.v3"
)

// TestDetectorsOnNAB runs registered detectors over the corpus and checks
// their standard scores stay above a floor, so that a change that makes
// detection worse fails here. SEISMO_NAB_DETECTOR and SEISMO_NAB_CONFIG
// (YAML over the defaults) run one detector with other settings, for
// experiments; the floors are then not checked.
func TestDetectorsOnNAB(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)

	floors := map[string]struct{ optimized, fixed float64 }{
		"auto": {70, 69.5},
	}
	experiment := os.Getenv("SEISMO_NAB_DETECTOR")
	if experiment != "" {
		floors = map[string]struct{ optimized, fixed float64 }{experiment: {}}
	}
	for name, floor := range floors {
		t.Run(name, func(t *testing.T) {
			cfg, err := KindConfig(name)
			require.NoError(t, err)
			if y := os.Getenv("SEISMO_NAB_CONFIG"); y != "" {
				dec := yaml.NewDecoder(strings.NewReader(y))
				dec.KnownFields(true)
				require.NoError(t, dec.Decode(cfg))
			}
			newDet, threshold, err := Factory(cfg)
			require.NoError(t, err)
			scores, elapsed, err := Run(c, newDet, nil)
			require.NoError(t, err)
			if out := os.Getenv("SEISMO_NAB_OUT"); out != "" {
				require.NoError(t, WriteResults(out, name, c, scores))
			}
			r := Evaluate(c, scores, threshold)
			for _, o := range r.Optimized {
				t.Logf("%s", o)
			}
			t.Logf("fixed     %s", r.Fixed)
			t.Logf("detector time %v for %d rows", elapsed, r.Rows)
			if os.Getenv("SEISMO_NAB_PERFILE") != "" {
				th := r.Optimized[0].Threshold
				for i, f := range c.Files {
					o := Score([]Series{{Windows: f.Windows, Scores: scores[i]}}, Standard, th)
					t.Logf("%-55s raw %7.3f TP %d FN %d FP %d", f.Name, o.Raw, o.TP, o.FN, o.FP)
				}
			}
			if experiment == "" {
				require.GreaterOrEqual(t, r.Optimized[0].Normalized, floor.optimized)
				require.GreaterOrEqual(t, r.Fixed.Normalized, floor.fixed)
			}
		})
	}
}

// TestCrossValidation tunes the threshold on all categories but one (and
// on half of them) and scores the held-out ones, for auto and for the
// plain zscore baseline: auto must not fall below the baseline on any
// held-out category, so that what it learned from NAB is not one
// category's quirks.
func TestCrossValidation(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	run := func(kind string) []Candidate {
		newDet, _ := kindFactory(t, kind)
		scores, _, err := Run(c, newDet, nil)
		require.NoError(t, err)
		return []Candidate{{Name: kind, Scores: scores}}
	}
	auto, zscore := run("auto"), run("zscore")
	grid := os.Getenv("SEISMO_NAB_GRID") != ""
	if grid {
		// Tune the config as well as the threshold: every fold picks the
		// best of a grid around the defaults on its tuning categories.
		auto = append(auto, autoGrid(t, c)...)
	}
	loA := CrossValidate(c, auto, c.LeaveOneOut(), Standard)
	loZ := CrossValidate(c, zscore, c.LeaveOneOut(), Standard)
	for i := range loA {
		a, z := loA[i], loZ[i]
		t.Logf("held out %-22s auto [%s] %7.2f (raw %6.2f, FP %3d)  zscore %7.2f (raw %6.2f, FP %3d)",
			a.Test[0], a.Chosen, a.Trial.Normalized, a.Trial.Raw, a.Trial.FP, z.Trial.Normalized, z.Trial.Raw, z.Trial.FP)
		// Raw scores compare categories without windows too.
		require.GreaterOrEqual(t, a.Trial.Raw, z.Trial.Raw, "auto below zscore on held-out %s", a.Test[0])
	}
	hA := CrossValidate(c, auto, c.Halves(), Standard)
	hZ := CrossValidate(c, zscore, c.Halves(), Standard)
	for i := range hA {
		t.Logf("held out %v: auto [%s] %.2f (tuned %.2f at %.4g), zscore %.2f", hA[i].Test, hA[i].Chosen, hA[i].Trial.Normalized,
			hA[i].Tune.Normalized, hA[i].Tune.Threshold, hZ[i].Trial.Normalized)
		require.Greater(t, hA[i].Trial.Normalized, hZ[i].Trial.Normalized)
		// A floor against collapse, not a target. The half without tweet
		// volumes tunes its threshold to about 0.46, where the other
		// half's tweets start to raise false alarms by the hundred (70.6
		// at auto's own 0.6, 52 at 0.46); it was 60 until
		// art_increase_spike_density's regular spikes stopped paging
		// (docs/detectors.md, "Departures from a repeated value"), whose
		// false alarms below 0.6 had held that half's optimum up.
		if !grid { // a grid can overfit the tuning half; that is what it shows
			require.GreaterOrEqual(t, hA[i].Trial.Normalized, 50.0, "auto on the held-out half")
		}
	}
}

// autoGrid runs auto with the main parameters one step either side of the
// defaults (surprise cap, calm, the pattern window, the long memory).
func autoGrid(t *testing.T, c *Corpus) []Candidate {
	var out []Candidate
	for _, capv := range []float64{2.5, 3, 3.5} {
		for _, calm := range []int{10, 20, 30} {
			for _, pattern := range []float64{3, 5, 8} {
				for _, long := range []float64{4000, 8000} {
					cfg := detect.DefaultAutoConfig()
					cfg.SurpriseCap, cfg.Calm, cfg.PatternHalfLife, cfg.LongHalfLife = capv, calm, pattern, long
					if cfg == detect.DefaultAutoConfig() {
						continue
					}
					scores, _, err := Run(c, cfg.New, nil)
					require.NoError(t, err)
					out = append(out, Candidate{Name: fmt.Sprintf("cap=%v calm=%d pattern=%v long=%v", capv, calm, pattern, long), Scores: scores})
				}
			}
		}
	}
	return out
}

// TestRowNumbers runs the corpus with each file's timestamps replaced by
// its row numbers, read as Unix seconds (1, 2, 3, ...), as data sets
// without times are published: auto must still score well above zscore,
// whose samples know no time. With a clock it would judge the time of
// day on an hour of "seconds", wait a day for records and fit its
// windows to one-second samples; it scored 22.65 so, against zscore's
// 37.55 (see fitClock in package detect). Without a clock it scores
// 63.99 / 63.61, and 68.76 / 68.37 where it finds the files' daily
// cycles in their samples (cycle.go).
func TestRowNumbers(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	for _, f := range c.Files {
		for i := range f.Times {
			f.Times[i] = int64(i+1) * 1000
		}
	}
	score := func(kind string) (optimized, fixed float64) {
		r := evaluateKind(t, c, kind)
		return r.Optimized[0].Normalized, r.Fixed.Normalized
	}
	ao, af := score("auto")
	zo, zf := score("zscore")
	t.Logf("standard: auto %.2f (fixed %.2f), zscore %.2f (fixed %.2f)", ao, af, zo, zf)
	require.GreaterOrEqual(t, ao, 66.0)
	require.GreaterOrEqual(t, af, 66.0)
	require.Greater(t, ao, zo+25)
}

// TestShiftedClock runs the corpus with every timestamp moved by 0, 15,
// 30 and 45 minutes. The values and the windows stay; only which samples
// share one of auto's hour slices changes, as it does between data sets
// aligned differently. auto's mean over the four must stay above a floor
// (71.39 / 70.02 now, against 74.22 / 73.81 as published), so that a
// change tuned to NAB's own alignment and lost at the others fails here
// (docs/detectors.md, "Where the samples fall within the hour").
func TestShiftedClock(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	var opt, fixed []float64
	for k := range 4 {
		if k > 0 {
			c.ShiftTimes(15 * 60 * 1000)
		}
		r := evaluateKind(t, c, "auto")
		opt, fixed = append(opt, r.Optimized[0].Normalized), append(fixed, r.Fixed.Normalized)
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x / float64(len(v))
		}
		return s
	}
	t.Logf("standard at 0, 15, 30, 45 minutes: %.2f, fixed %.2f; mean %.2f / %.2f", opt, fixed, mean(opt), mean(fixed))
	require.GreaterOrEqual(t, mean(opt), 69.0)
	require.GreaterOrEqual(t, mean(fixed), 68.0)
}

// kindFactory returns a new detector of kind's default config, as
// `seismo bench nab` runs it, and its alert threshold.
func kindFactory(t testing.TB, kind string) (func() (detect.Detector, error), float64) {
	t.Helper()
	cfg, err := KindConfig(kind)
	require.NoError(t, err)
	newDet, threshold, err := Factory(cfg)
	require.NoError(t, err)
	return newDet, threshold
}

// evaluateKind runs kind's default config over c and scores it.
func evaluateKind(t testing.TB, c *Corpus, kind string) Report {
	t.Helper()
	newDet, threshold := kindFactory(t, kind)
	scores, _, err := Run(c, newDet, nil)
	require.NoError(t, err)
	return Evaluate(c, scores, threshold)
}
