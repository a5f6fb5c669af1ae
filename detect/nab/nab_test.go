package nab

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
		"auto": {69.5, 69.5},
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
