package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeNABCorpus lays out a one-file corpus with one labelled spike.
func writeNABCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range 600 {
		v := fmt.Sprint(10 + i%3)
		switch {
		case i == 500:
			v = "90"
		case i == 300:
			v = "" // a missed scrape
		case i == 301:
			v = "NaN"
		}
		fmt.Fprintf(&b, "2015-01-01 %02d:%02d:00,%s\n", i/60, i%60, v)
	}
	files := map[string]string{
		"data/cat/series.csv":          b.String(),
		"labels/combined_windows.json": `{"cat/series.csv": [["2015-01-01 08:10:00.000000", "2015-01-01 08:30:00.000000"]]}`,
	}
	writeFiles(t, dir, files)
	return dir
}

// writeFiles writes each file under dir (paths with slashes, relative to
// dir), making the directories it needs.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

func TestBenchNAB(t *testing.T) {
	data := writeNABCorpus(t)
	out := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   string
		wantFile string
	}{
		{
			name:     "default detector with results",
			args:     []string{"bench", "nab", "--data", data, "--out", out},
			stdout:   []string{`detector "auto"`, "600 rows (2 missing values)", "standard", "reward_low_FP_rate", "reward_low_FN_rate", "(fixed alert threshold)", "published scoreboard: not compared", "detector time"},
			wantFile: filepath.Join(out, "auto", "cat", "auto_series.csv"),
		},
		{
			name:   "named detector and threshold",
			args:   []string{"bench", "nab", "--data", data, "--detector", "mad", "--threshold", "0.9"},
			stdout: []string{`detector "mad"`, "0.9 "},
		},
		{
			name:   "threshold out of range",
			args:   []string{"bench", "nab", "--data", data, "--threshold", "2"},
			code:   1,
			stderr: `detector "auto": threshold: must be in (0, 1], got 2`,
		},
		{
			name: "per-category report and cross-validation",
			args: []string{"bench", "nab", "--data", data, "--detector", "zscore", "--report", "--cross-validate"},
			stdout: []string{`detector "zscore"`, "per category", "cat                        1       1       2",
				"cross-validation, leave one category out", "cross-validation, halves"},
		},
		{
			name:   "unknown detector",
			args:   []string{"bench", "nab", "--data", data, "--detector", "nope"},
			code:   1,
			stderr: `unknown detector "nope"`,
		},
		{
			name:   "not a corpus",
			args:   []string{"bench", "nab", "--data", t.TempDir()},
			code:   1,
			stderr: "no NAB corpus",
		},
		{
			name: "missing --data",
			args: []string{"bench", "nab"},
			code: exitUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runCLI(context.Background(), tt.args, &stdout, &stderr, nil)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			for _, s := range tt.stdout {
				require.Contains(t, stdout.String(), s)
			}
			if tt.stderr != "" {
				require.Contains(t, stderr.String(), tt.stderr)
			}
			if tt.wantFile != "" {
				b, err := os.ReadFile(tt.wantFile)
				require.NoError(t, err)
				require.Equal(t, 601, strings.Count(string(b), "\n"))
			}
		})
	}
}

// TestBenchNABShifts runs the corpus at clocks shifted by a third of an
// hour: three rows and their mean. zscore knows no time of day, so its
// three scores are one, and the range is that score; auto's hour slices
// see the shift.
func TestBenchNABShifts(t *testing.T) {
	data := writeNABCorpus(t)
	run := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, runCLI(context.Background(), append([]string{"bench", "nab", "--data", data}, args...), &stdout, &stderr, nil), stderr.String())
		return stdout.String()
	}
	out := run("--detector", "zscore", "--shifts", "3")
	require.Contains(t, out, "clock shifted by 1/3 of an hour")
	require.Contains(t, out, "   20m0s    ")
	require.Contains(t, out, "   40m0s    ")
	var std float64
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "standard" && std == 0 {
			_, err := fmt.Sscan(f[1], &std)
			require.NoError(t, err)
		}
	}
	require.Contains(t, out, fmt.Sprintf("(range %.2f to %.2f;", std, std))
	require.NotContains(t, run("--detector", "zscore"), "clock shifted")
}

// TestBenchNABProbes runs the corpus with its values changed. zscore
// measures a spike against its own spread, so a constant added or a
// change of unit leaves its score as it was; a step to 1,000 times the
// values, before the labelled spike, leaves it nothing to find there. A
// probe that does not parse stops the command before the corpus is
// read, naming the flag and the value.
func TestBenchNABProbes(t *testing.T) {
	data := writeNABCorpus(t)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runCLI(context.Background(), []string{"bench", "nab", "--data", data, "--detector", "zscore",
		"--probe", "offset=100", "--probe", "scale=1e-3", "--probe", "step=1000"}, &stdout, &stderr, nil), stderr.String())
	scores := map[string]string{}
	section := false
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, "probes: ") {
			section = true
			continue
		}
		if f := strings.Fields(line); section && len(f) >= 2 {
			scores[strings.Join(f[:len(f)-2], " ")] = f[len(f)-2]
		}
	}
	require.Contains(t, scores, "as loaded", stdout.String())
	require.Equal(t, scores["as loaded"], scores["offset=100"], "a constant added")
	require.Equal(t, scores["as loaded"], scores["scale=0.001"], "another unit")
	require.NotEqual(t, scores["as loaded"], scores["step=1000"], "a change of scale before the spike")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 1, runCLI(context.Background(), []string{"bench", "nab", "--data", data, "--probe", "shift=2"}, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), `--probe: probe "shift=2": unknown kind "shift"`)
	require.Empty(t, stdout.String())
}

// TestBenchNABRowNumbers runs a corpus timestamped by row number, as
// data sets without times publish their rows (1, 2, 3, ..., read as
// Unix seconds): the report says which files auto judges without the
// time of day, and says nothing of the kind for a corpus with times.
func TestBenchNABRowNumbers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range 600 {
		v := 10 + i%3
		if i == 500 {
			v = 90
		}
		fmt.Fprintf(&b, "%d,%d\n", i+1, v)
	}
	files := map[string]string{
		"data/cat/series.csv":          b.String(),
		"labels/combined_windows.json": `{"cat/series.csv": [["480", "520"]]}`,
	}
	writeFiles(t, dir, files)
	const note = "timestamped by row number"
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runCLI(context.Background(), []string{"bench", "nab", "--data", dir}, &stdout, &stderr, nil), stderr.String())
	require.Contains(t, stdout.String(), "1 of 1 files are "+note)
	require.Contains(t, stdout.String(), "standard")

	stdout.Reset()
	require.Equal(t, 0, runCLI(context.Background(), []string{"bench", "nab", "--data", writeNABCorpus(t)}, &stdout, &stderr, nil), stderr.String())
	require.NotContains(t, stdout.String(), note)
}

// TestBenchNABUntidyLabels runs the benchmark over labels as real
// exports have them (a window in a gap of the data, windows overlapping
// and out of order, RFC 3339 timestamps, a byte-order mark before the
// JSON): it scores what can be scored,
// names every repair on stderr and counts them in the report.
func TestBenchNABUntidyLabels(t *testing.T) {
	data := writeNABCorpus(t)
	labels := "\ufeff" + `{"cat/series.csv": [
		["2015-01-01T08:20:00Z", "2015-01-01T08:40:00Z"],
		["2015-01-01 08:10:00", "2015-01-01 08:30:00"],
		["2016-01-01 00:00:00", "2016-01-01 01:00:00"]]}`
	require.NoError(t, os.WriteFile(filepath.Join(data, "labels", "combined_windows.json"), []byte(labels), 0o644))
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), []string{"bench", "nab", "--data", data}, &stdout, &stderr, nil)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "1 windows (3 label repairs, listed on stderr)")
	for _, s := range []string{
		"labels: cat/series.csv: window 2 [2016-01-01 00:00:00, 2016-01-01 01:00:00] covers no row; dropped",
		"labels: cat/series.csv: windows out of order; sorted",
		"labels: cat/series.csv: window at rows 500-520 overlaps the one at rows 490-510; merged",
	} {
		require.Contains(t, stderr.String(), s)
	}
	// The spike at row 500 lies in the merged window: a true positive.
	require.Regexp(t, `standard\s+\S+\s+\S+\s+1\s+0\s+0\s+\(fixed alert threshold\)`, stdout.String())
}

// TestBenchNABFiles: --files names, per file, the windows a detector
// missed and when its false alarms came. Two copies of one series with a
// spike at 08:20: labelled there in a.csv, and at 03:00 (where nothing
// happens) in b.csv, so that at the alert threshold b's spike is a false
// alarm and its window is missed.
func TestBenchNABFiles(t *testing.T) {
	data := writeNABCorpus(t)
	series, err := os.ReadFile(filepath.Join(data, "data", "cat", "series.csv"))
	require.NoError(t, err)
	for _, name := range []string{"a.csv", "b.csv"} {
		require.NoError(t, os.WriteFile(filepath.Join(data, "data", "cat", name), series, 0o644))
	}
	labels := `{"cat/a.csv": [["2015-01-01 08:10:00", "2015-01-01 08:30:00"]],
		"cat/b.csv": [["2015-01-01 03:00:00", "2015-01-01 03:20:00"]]}`
	require.NoError(t, os.WriteFile(filepath.Join(data, "labels", "combined_windows.json"), []byte(labels), 0o644))
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), []string{"bench", "nab", "--data", data, "--files"}, &stdout, &stderr, nil)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	require.Contains(t, out, "per file (standard profile at the alert threshold 0.6)")
	require.Regexp(t, `cat/a\.csv\s+600\s+1\s+\S+\s+1\s+0\s+0\n`, out)
	require.Regexp(t, `cat/b\.csv\s+600\s+1\s+\S+\s+0\s+1\s+1\n`+
		`    missed window 2015-01-01 03:00:00 to 2015-01-01 03:20:00\n`+
		`    false alarms at 2015-01-01 08:20:00\n`, out)
}

// TestBenchNABOddExports: exports converted by other tools still score.
// The series written with pandas' zoned timestamps and the spike at 08:20
// is found in its window; a file with a header only, one with a single
// row, and one of fractional Unix seconds are read and listed, not fatal.
func TestBenchNABOddExports(t *testing.T) {
	data := writeNABCorpus(t)
	series, err := os.ReadFile(filepath.Join(data, "data", "cat", "series.csv"))
	require.NoError(t, err)
	zoned := strings.ReplaceAll(string(series), ":00,", ":00+00:00,")
	require.NotEqual(t, string(series), zoned)
	files := map[string]string{
		"data/cat/zoned.csv": zoned,
		"data/cat/empty.csv": "timestamp,value\n",
		"data/cat/one.csv":   "timestamp,value\n1420070400.5,3\n",
		"labels/combined_windows.json": `{"cat/zoned.csv": [["2015-01-01 08:10:00+00:00", "2015-01-01 08:30:00+00:00"]],
			"cat/empty.csv": [], "cat/one.csv": []}`,
	}
	writeFiles(t, data, files)
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), []string{"bench", "nab", "--data", data, "--files"}, &stdout, &stderr, nil)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()
	require.Contains(t, out, `NAB: detector "auto" over 3 files, 601 rows (2 missing values), 1 windows`)
	require.Regexp(t, `cat/zoned\.csv\s+600\s+1\s+\S+\s+1\s+0\s+0\n`, out)
	require.Regexp(t, `cat/empty\.csv\s+0\s+0\s+`, out)
	require.Regexp(t, `cat/one\.csv\s+1\s+0\s+`, out)
}
