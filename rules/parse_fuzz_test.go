package rules

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFuzzRuleFile bounds fuzzed rule files so that one execution stays
// short; real rule files are a few KiB.
const maxFuzzRuleFile = 64 << 10

// fuzzSeedFiles adds every file matching the globs as a seed.
func fuzzSeedFiles(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(g)
		require.NoError(f, err)
		for _, p := range files {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(b)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the rule-file parser with the real
// detector registry. Properties: no panic; the result is deterministic;
// errors are an Errors list in which every problem names the file and a
// line:col, in file order; accepted groups are complete (named, with a
// positive interval, rules that know their line and hash), and Lint's
// warnings on them name the file and a line.
func FuzzParse(f *testing.F) {
	fuzzSeedFiles(f, "testdata/*.yml", "testdata/real/*.yml", "testdata/unit/*.yml", "testdata/replay/*.yml", "../configs/rules/*.yml", "builtin/*.yml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzRuleFile {
			t.Skip("larger than any real rule file")
		}
		const name = "fuzz.rules.yml"
		groups, err := Parse(ParseOptions{}, name, data)
		groups2, err2 := Parse(ParseOptions{}, name, data)
		require.Equal(t, err == nil, err2 == nil, "Parse is not deterministic")
		if err != nil {
			require.Equal(t, err.Error(), err2.Error(), "Parse is not deterministic")
			var es Errors
			require.True(t, errors.As(err, &es), "error is not an Errors list: %T", err)
			require.NotEmpty(t, es)
			for i, e := range es {
				require.Equal(t, name, e.File, "error %q", e)
				require.Positive(t, e.Line, "error without a position: %q", e)
				require.True(t, strings.HasPrefix(e.Error(), name+":"), "error %q", e)
				if i > 0 {
					require.LessOrEqual(t, es[i-1].Line, e.Line, "errors out of file order")
				}
			}
			return
		}
		require.Len(t, groups2, len(groups))
		for _, w := range Lint(groups) {
			require.Equal(t, name, w.File, "warning %q", w)
			require.Positive(t, w.Line, "warning without a position: %q", w)
		}
		for i, g := range groups {
			require.NotEmpty(t, g.Name)
			require.Equal(t, name, g.File)
			require.Positive(t, g.Interval)
			require.Len(t, groups2[i].Rules, len(g.Rules))
			for j, r := range g.Rules {
				require.Equal(t, j+1, r.Index)
				require.Positive(t, r.Line, "rule %q has no line", r.Name)
				require.Equal(t, r.Hash, groups2[i].Rules[j].Hash, "rule hash is not deterministic")
			}
		}
	})
}

func TestYAMLErrorPositions(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"end of stream", "\"", "fuzz.rules.yml:1:2: "},
		{"control character", "groups:\n  - name: a\x01b\n", "fuzz.rules.yml:2:12: "},
		{"bad utf-8", "groups: []\n# \xff\n", "fuzz.rules.yml:2:3: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ParseOptions{}, "fuzz.rules.yml", []byte(tt.in))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), tt.want), "got %q, want prefix %q", err, tt.want)
		})
	}
}
