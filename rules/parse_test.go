package rules

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseGood(t *testing.T) {
	files, err := filepath.Glob("testdata/*.good.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			groups, err := ParseFiles(fakeParseOpts, f)
			require.NoError(t, err)
			require.NotEmpty(t, groups)
		})
	}
}

func TestParseGoodContent(t *testing.T) {
	groups, err := ParseFiles(fakeParseOpts, "testdata/all.good.yml")
	require.NoError(t, err)
	require.Len(t, groups, 1)
	g := groups[0]
	require.Equal(t, 10*time.Second, g.Interval)
	require.Equal(t, "shop", g.Labels.Get("team"))
	require.Len(t, g.Rules, 5)

	tests := []struct {
		name    string
		typ     RuleType
		for_    time.Duration
		enabled bool
		signals int
	}{
		{"HighErrorRate", TypeAlerting, time.Minute, true, 0},
		{"job:http_requests:rate1m", TypeRecording, 0, true, 0},
		{"LatencyAnomaly", TypeAnomaly, 20 * time.Second, true, 0},
		{"Surge", TypeAnomaly, 0, true, 2},
		{"Disabled", TypeAnomaly, 0, false, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.Rules[i]
			require.Equal(t, tt.name, r.Name)
			require.Equal(t, tt.typ, r.Type)
			require.Equal(t, tt.for_, r.For)
			require.Equal(t, tt.enabled, r.Enabled)
			if r.Detector != nil {
				require.Len(t, r.Detector.Signals, tt.signals)
			}
		})
	}
	require.Equal(t, []string{"Surge"}, g.Rules[0].SuppressedBy)
	require.Equal(t, 30*time.Second, g.Rules[0].KeepFiringFor)
	lat := g.Rules[2]
	require.Equal(t, 2.5, lat.Detector.Config.(*fakeConfig).Threshold)
	require.Equal(t, 3, lat.Detector.Config.(*fakeConfig).WarmUp)
	require.Equal(t, "Storefront", lat.Draft.Component)
	require.Equal(t, "client", g.Rules[3].Detector.KeyLabel)
	require.Equal(t, 100.0, g.Rules[3].Detector.Config.(*fakeCompConfig).Threshold)
}

// TestParseBad checks that every *.bad.yml reports exactly the problems its
// "# expect:" comment lines name, with positions, all at once.
func TestParseBad(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := expectations(t, f)
			require.NotEmpty(t, want, "a bad file needs # expect: lines")
			_, err := ParseFiles(fakeParseOpts, f)
			require.Error(t, err)
			var es Errors
			require.True(t, errors.As(err, &es))
			got := strings.Split(err.Error(), "\n")
			for i := range got {
				got[i] = strings.TrimPrefix(got[i], "testdata/")
			}
			require.Len(t, got, len(want), "got:\n%s", strings.Join(got, "\n"))
			for i, w := range want {
				require.True(t, strings.HasPrefix(got[i], w), "error %d: want prefix %q, got:\n%s", i, w, strings.Join(got, "\n"))
			}
		})
	}
}

func expectations(t *testing.T, f string) []string {
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "# expect: "); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestParseEmptyAndMissing(t *testing.T) {
	groups, err := Parse(fakeParseOpts, "empty.yml", nil)
	require.NoError(t, err)
	require.Empty(t, groups)
	_, err = ParseFiles(fakeParseOpts, "testdata/does-not-exist.yml")
	require.ErrorContains(t, err, "testdata/does-not-exist.yml: open")
}

func TestRuleHashChangesWithDefinition(t *testing.T) {
	parse := func(s string) *Rule {
		gs, err := Parse(fakeParseOpts, "x.yml", []byte(s))
		require.NoError(t, err)
		return gs[0].Rules[0]
	}
	base := "groups: [{name: g, rules: [{anomaly: A, expr: up, detector: {type: fake, threshold: 2}}]}]"
	a, b := parse(base), parse(base)
	require.Equal(t, a.Hash, b.Hash)
	require.Equal(t, a.Detector.Hash, b.Detector.Hash)
	c := parse(strings.Replace(base, "threshold: 2", "threshold: 3", 1))
	require.NotEqual(t, a.Detector.Hash, c.Detector.Hash)
	d := parse(strings.Replace(base, "expr: up", "expr: 'up > 1'", 1))
	require.NotEqual(t, a.Hash, d.Hash)
	require.Equal(t, a.Detector.Hash, d.Detector.Hash)
}

// TestRealRegistry parses the documented examples and the built-in pack
// against the real detector registry, so that neither drifts from the
// detectors' config keys and signal names.
func TestRealRegistry(t *testing.T) {
	_, err := ParseFiles(ParseOptions{}, "testdata/real/shop.good.yml")
	require.NoError(t, err)
	cfg := DefaultBuiltinConfig()
	groups, err := cfg.Groups(ParseOptions{})
	require.NoError(t, err)
	names := map[string]bool{}
	for _, r := range groups[0].Rules {
		names[r.Name] = true
	}
	for _, n := range []string{"SaturationWithoutCPU", "RateLimitStorm", "TrafficSurgeSaturation", "HighErrorRate", "ProbeFailing"} {
		require.True(t, names[n], n)
	}
	cfg.Disabled = []string{"HostCPUAnomly"}
	_, err = cfg.Groups(ParseOptions{})
	require.ErrorContains(t, err, `builtin.disabled: the pack has no rule "HostCPUAnomly"`)
	cfg.Disabled = []string{"HostCPUAnomaly"}
	cfg.Metrics.Selector = `job="shop"`
	cfg.Metrics.ClientLabel = "tenant"
	cfg.RateWindow = 20 * time.Second
	groups, err = cfg.Groups(ParseOptions{})
	require.NoError(t, err)
	for _, r := range groups[0].Rules {
		require.Equal(t, r.Name != "HostCPUAnomaly", r.Enabled, r.Name)
		if r.Name == "RateLimitStorm" {
			require.Equal(t, `sum by (tenant) (rate(http_requests_total{job="shop"}[20s]))`, r.Detector.Signals[0].Expr)
			require.Equal(t, "tenant", r.Detector.KeyLabel)
		}
	}
}

// TestConfigsExamples checks every rule file shipped under configs/
// (*.rules.yml, or anything under a rules/ directory) against the real
// registry, and runs every unit-test file there, so examples never rot.
func TestConfigsExamples(t *testing.T) {
	var ruleFiles, testFiles []string
	err := filepath.WalkDir("../configs", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(path, ".test.yml"):
			testFiles = append(testFiles, path)
		case strings.HasSuffix(path, ".rules.yml"), strings.Contains(filepath.ToSlash(path), "/rules/"):
			ruleFiles = append(ruleFiles, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, ruleFiles)
	for _, f := range ruleFiles {
		t.Run(f, func(t *testing.T) {
			_, err := ParseFiles(ParseOptions{}, f)
			require.NoError(t, err)
		})
	}
	for _, f := range testFiles {
		t.Run(f, func(t *testing.T) {
			var out bytes.Buffer
			ok, err := RunUnitTests(context.Background(), &out, UnitTestOptions{}, f)
			require.NoError(t, err)
			require.True(t, ok, out.String())
		})
	}
}
