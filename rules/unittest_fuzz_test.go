package rules

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// FuzzParseSeriesValues checks promtool's series notation. Properties: no
// panic; the expansion is bounded; an error quotes the bad token; writing
// the values back out and parsing them again gives the same values.
func FuzzParseSeriesValues(f *testing.F) {
	for _, s := range []string{"1 2 3", "1+2x3", "5-1x4", "_ _x3 stale", "1e3x2", "-1e-3+1e3x2", "0.1+0x4 3 3 3", "1x0", "_x0", "Inf -Inf NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1024 {
			t.Skip("longer than any real series line")
		}
		vals, err := ParseSeriesValues(s)
		if err != nil {
			require.Contains(t, err.Error(), `"`, "error does not quote the bad token")
			return
		}
		require.LessOrEqual(t, len(vals), maxSeriesValues)
		if len(vals) > 10_000 {
			return // the round trip below would only be slow
		}
		var b strings.Builder
		for _, v := range vals {
			switch {
			case v.Omitted:
				b.WriteString("_ ")
			case value.IsStaleNaN(v.Value):
				b.WriteString("stale ")
			default:
				b.WriteString(strconv.FormatFloat(v.Value, 'g', -1, 64) + " ")
			}
		}
		again, err := ParseSeriesValues(b.String())
		require.NoError(t, err, "re-parse of %q", b.String())
		require.Len(t, again, len(vals))
		for i := range vals {
			require.Equal(t, vals[i].Omitted, again[i].Omitted, "value %d", i)
			if math.IsNaN(vals[i].Value) {
				require.True(t, math.IsNaN(again[i].Value), "value %d", i)
				require.Equal(t, value.IsStaleNaN(vals[i].Value), value.IsStaleNaN(again[i].Value), "value %d", i)
				continue
			}
			require.Equal(t, vals[i].Value, again[i].Value, "value %d", i)
		}
	})
}

// fuzzUnitSteps bounds the evaluations a fuzzed unit-test file may ask for;
// the bound in the code (maxUnitTestSteps) is checked by a unit test, and
// here only slows fuzzing down.
const fuzzUnitSteps = 100

// FuzzUnitTestFile runs arbitrary promtool-format unit-test files against
// the rules of testdata/unit. Properties: no panic, no hang; a file that
// cannot be run is reported as failed with its path in the report, never as
// a Go error.
func FuzzUnitTestFile(f *testing.F) {
	fuzzSeedFiles(f, "testdata/unit/*.test.yml")
	rules, err := os.ReadFile("testdata/unit/rules.yml")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			t.Skip("larger than any real test file")
		}
		var tf unitTestFile
		if yaml.Unmarshal(data, &tf) == nil {
			ivl := time.Duration(tf.EvaluationInterval)
			if ivl <= 0 {
				ivl = time.Minute
			}
			for _, tc := range tf.Tests {
				for _, at := range tc.AlertRuleTests {
					if time.Duration(at.EvalTime)/ivl > fuzzUnitSteps {
						t.Skip("too many evaluations to fuzz quickly")
					}
				}
				for _, in := range tc.InputSeries {
					if vs, err := ParseSeriesValues(in.Values); err == nil && len(vs) > 100*fuzzUnitSteps {
						t.Skip("too many samples to fuzz quickly")
					}
				}
			}
		}
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o600))
		path := filepath.Join(dir, "fuzz.test.yml")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		var out bytes.Buffer
		ok, err := RunUnitTests(context.Background(), &out, UnitTestOptions{Lookup: fakeLookup, Kinds: fakeKindNames}, path)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(out.String(), "Unit Testing: "+path+"\n"), "report %q", out.String())
		if ok {
			require.Contains(t, out.String(), "SUCCESS")
		} else {
			require.Contains(t, out.String(), "FAILED")
		}
	})
}

func TestUnitTestBounds(t *testing.T) {
	_, err := ParseSeriesValues("1x10000000000")
	require.ErrorContains(t, err, `"1x10000000000": series longer than`)
	_, err = ParseSeriesValues("_x600000 1x600000")
	require.ErrorContains(t, err, "series longer than")

	dir := t.TempDir()
	rules, err := os.ReadFile("testdata/unit/rules.yml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o600))
	path := filepath.Join(dir, "long.test.yml")
	require.NoError(t, os.WriteFile(path, []byte(`rule_files: [rules.yml]
evaluation_interval: 1ms
tests:
  - alert_rule_test:
      - eval_time: 100y
        alertname: InstanceDown
`), 0o600))
	var out bytes.Buffer
	ok, err := RunUnitTests(context.Background(), &out, UnitTestOptions{Lookup: fakeLookup, Kinds: fakeKindNames}, path)
	require.NoError(t, err)
	require.False(t, ok)
	require.Contains(t, out.String(), "evaluations of 1ms, more than")
}
