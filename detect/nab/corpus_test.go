package nab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		rows    int
		wantErr string
		missing int
	}{
		{"LF", "timestamp,value\n2014-01-01 00:00:00,1\n2014-01-01 00:05:00,2.5\n", 2, "", 0},
		{"CRLF without final newline", "timestamp,value\r\n2014-01-01 00:00:00,1\r\n2014-01-01 00:05:00,2", 2, "", 0},
		{"repeated timestamps are kept", "timestamp,value\n2014-01-01 00:00:00,1\n2014-01-01 00:00:00,2\n", 2, "", 0},
		{"bad header", "time,value\n", 0, "header", 0},
		{"bad value", "timestamp,value\n2014-01-01 00:00:00,x\n", 0, "line 2: value", 0},
		{"empty and NaN values are missing samples", "timestamp,value\n2014-01-01 00:00:00,\n2014-01-01 00:05:00,NaN\n2014-01-01 00:10:00, \n2014-01-01 00:15:00,3\n", 4, "", 3},
		{"bad timestamp", "timestamp,value\n2014-01-01 00:00:00,1\nyesterday,1\n", 0, "line 3: timestamp", 0},
		{"a byte-order mark and a label column", "\ufefftimestamp,value,label\n2014-01-01 00:00:00,1,0\n2014-01-01 00:05:00,2,1\n", 2, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ReadFile("cat/x.csv", strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.rows, f.Rows())
			require.Equal(t, tt.missing, f.Missing)
			for i, v := range f.Values {
				require.Equal(t, i < tt.missing, math.IsNaN(v), "row %d", i)
			}
			require.Equal(t, "cat", f.Category())
		})
	}
}

// TestParseNABTimeAsTimeParse: the fast path for NAB's layout reads
// every timestamp as time.Parse does and takes none time.Parse refuses
// (the 29th of February of 2015, the 31st of April, hour 24), over
// random and edge dates.
func TestParseNABTimeAsTimeParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []string{"2016-02-29 12:00:00", "2015-02-29 12:00:00", "2014-04-31 00:00:00",
		"2014-04-30 24:00:00", "2014-04-30 23:60:00", "2014-04-30 23:59:60", "0000-01-01 00:00:00",
		"2014-00-10 00:00:00", "2014-13-10 00:00:00", "2014-01-00 00:00:00", "2014-01-0a 00:00:00",
		"2014-01-01T00:00:00", "2014-01-01 00:00:0"}
	for range 20000 {
		cases = append(cases, fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", 1990+rng.IntN(50),
			rng.IntN(14), rng.IntN(33), rng.IntN(26), rng.IntN(62), rng.IntN(62)))
	}
	fast := 0
	for _, in := range cases {
		want, err := time.Parse(timeLayout, in)
		got, ok := parseNABTime(in)
		require.Equal(t, err == nil, ok, in)
		if ok {
			fast++
			require.True(t, want.Equal(got), "%q read as %v, time.Parse %v", in, got, want)
		}
	}
	require.Greater(t, fast, 5000, "dates read by the fast path")
}

func TestParseTime(t *testing.T) {
	want := time.Date(2014, 1, 1, 0, 5, 0, 0, time.UTC)
	for _, in := range []string{
		"2014-01-01 00:05:00", "2014-01-01 00:05:00.000000", "2014-01-01T00:05:00",
		"2014-01-01T00:05:00Z", "2014-01-01T01:05:00+01:00", "1388534700", "1388534700000", " 1388534700 ",
		// pandas' zoned index, other offsets, no seconds, Unix seconds as floats
		"2014-01-01 00:05:00+00:00", "2014-01-01 01:05:00+01:00", "2013-12-31 19:05:00-0500",
		"2014-01-01 00:05:00Z", "2014-01-01 00:05", "2014-01-01T00:05", "1388534700.0", "1388534700000.0",
	} {
		got, err := parseTime(in)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%q read as %v", in, got)
	}
	got, err := parseTime("1388534700.25")
	require.NoError(t, err)
	require.True(t, want.Add(250*time.Millisecond).Equal(got), "fractional Unix seconds read as %v", got)
	for _, in := range []string{"", "yesterday", "2014-01-01", "-5", "-1388534700.5", "1e300", "NaN", "2014-01-01 25:00"} {
		_, err := parseTime(in)
		require.ErrorContains(t, err, "is not a timestamp", in)
	}
}

func TestSetWindows(t *testing.T) {
	in := "timestamp,value\n" +
		"2014-01-01 00:00:00,1\n2014-01-01 00:05:00,1\n2014-01-01 00:05:00,1\n" +
		"2014-01-01 00:10:00,1\n2014-01-01 00:15:00,1\n2014-01-01 00:20:00,1\n"
	f, err := ReadFile("c/f.csv", strings.NewReader(in))
	require.NoError(t, err)

	warnings, err := f.SetWindows([][2]string{{"2014-01-01 00:05:00.000000", "2014-01-01 00:10:00.000000"}})
	require.NoError(t, err)
	require.Empty(t, warnings)
	require.Equal(t, []Window{{First: 1, Last: 3}}, f.Windows, "both ends inclusive, duplicates included")

	// Untidy labels are repaired, each repair named.
	warnings, err = f.SetWindows([][2]string{
		{"2014-01-01 00:15:00", "2014-01-01 00:20:00"},
		{"2015-01-01 00:00:00.000000", "2015-01-02 00:00:00.000000"}, // after the data
		{"2014-01-01 00:05:00", "2014-01-01 00:10:00"},
		{"2014-01-01T00:10:00Z", "2014-01-01 00:15:00"}, // overlaps both
	})
	require.NoError(t, err)
	require.Equal(t, []Window{{First: 1, Last: 5}}, f.Windows)
	require.Len(t, warnings, 4, "%q", warnings)
	require.Contains(t, warnings[0], "window 1 [2015-01-01 00:00:00.000000, 2015-01-02 00:00:00.000000] covers no row; dropped")
	require.Contains(t, warnings[1], "out of order; sorted")
	require.Contains(t, warnings[2], "merged")

	// Windows that only touch stay two, as NAB scores them.
	_, err = f.SetWindows([][2]string{{"2014-01-01 00:00:00", "2014-01-01 00:05:00"}, {"2014-01-01 00:10:00", "2014-01-01 00:10:00"}})
	require.NoError(t, err)
	require.Equal(t, []Window{{First: 0, Last: 2}, {First: 3, Last: 3}}, f.Windows)

	// A bound that is no timestamp, or a window that ends before it
	// starts, is a mistake in the labels, not untidiness.
	_, err = f.SetWindows([][2]string{{"soon", "2014-01-01 00:10:00"}})
	require.ErrorContains(t, err, "window 0 start")
	_, err = f.SetWindows([][2]string{{"2014-01-01 00:10:00", "2014-01-01 00:05:00"}})
	require.ErrorContains(t, err, "ends before it starts")
}

func TestProbation(t *testing.T) {
	for _, tt := range []struct{ rows, want int }{{0, 0}, {99, 14}, {100, 15}, {4032, 604}, {5000, 750}, {22695, 750}} {
		require.Equal(t, tt.want, Probation(tt.rows), "rows=%d", tt.rows)
	}
}

// CorpusDir finds the NAB corpus for tests: $SEISMO_NAB_DATA, or
// ../shared/data/nab next to the directory holding go.mod. It skips the test
// when the corpus is absent, except under CI=true where absence is a failure.
func corpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SEISMO_NAB_DATA"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "data", "nab")
	if _, err := os.Stat(filepath.Join(d, "labels", "combined_windows.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NAB corpus not found at %s (set SEISMO_NAB_DATA): %v", d, err)
		}
		t.Skipf("NAB corpus not found at %s (set SEISMO_NAB_DATA)", d)
	}
	return d
}

func TestLoadCorpus(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	require.Len(t, c.Files, 58)
	require.Equal(t, 365558, c.Rows())
	require.Equal(t, 116, c.Windows())
	for _, f := range c.Files {
		for _, w := range f.Windows {
			require.GreaterOrEqual(t, w.First, f.Probation(), f.Name)
		}
	}
	require.True(t, c.IsNAB(), "the corpus is NAB: the scoreboard applies")
}

// TestIsNAB: the published scoreboard applies to NAB only, not to NAB
// with a file left out or a window dropped.
func TestIsNAB(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	require.True(t, c.IsNAB())
	less := &Corpus{Files: c.Files[1:]}
	require.False(t, less.IsNAB(), "a file left out")
	f := *c.Files[len(c.Files)-1]
	require.NotEmpty(t, f.Windows)
	f.Windows = f.Windows[1:]
	relabelled := &Corpus{Files: append(append([]*File(nil), c.Files[:len(c.Files)-1]...), &f)}
	require.False(t, relabelled.IsNAB(), "a window dropped")
	require.True(t, c.IsNAB(), "the original is unchanged")
}

func TestLoadMissingCorpus(t *testing.T) {
	_, err := Load(t.TempDir())
	require.ErrorIs(t, err, ErrNoCorpus)
}

// TestLoadNamesUnlistedFiles: a data file the windows file does not list
// is left out, and named, as is one in a category of its own; other
// files under data/ are not data files.
func TestLoadNamesUnlistedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	rows := "timestamp,value\n2015-01-01 00:00:00,1\n2015-01-01 00:05:00,2\n"
	write("data/a/listed.csv", rows)
	write("data/a/forgotten.csv", rows)
	write("data/b/other.CSV", rows)
	write("data/README.md", "not data")
	write("labels/combined_windows.json", `{"a/listed.csv": []}`)
	c, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, c.Files, 1)
	require.Equal(t, []string{"a/forgotten.csv", "b/other.CSV"}, c.Unlisted)
}

// TestLoadSortsRows: a file written newest first is loaded in time order
// (rows with one timestamp keep theirs), its windows are found on the
// sorted rows, and the corpus names it; a file with a row out of place
// is named and kept as it is, and one in order is neither.
func TestLoadSortsRows(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	var newest, ordered strings.Builder
	newest.WriteString("timestamp,value\n")
	ordered.WriteString("timestamp,value\n")
	for i := range 100 {
		fmt.Fprintf(&newest, "2015-01-01 %02d:%02d:00,%d\n", (99-i)/60, (99-i)%60, 99-i)
		fmt.Fprintf(&ordered, "2015-01-01 %02d:%02d:00,%d\n", i/60, i%60, i)
	}
	write("data/c/newest.csv", newest.String())
	write("data/c/ordered.csv", ordered.String())
	write("data/c/one.csv", "timestamp,value\n2015-01-01 00:00:00,1\n2015-01-01 00:02:00,3\n2015-01-01 00:01:00,2\n2015-01-01 00:02:00,4\n")
	write("data/c/back.csv", "timestamp,value\n2015-01-01 00:03:00,1\n2015-01-01 00:02:00,2\n2015-01-01 00:02:00,3\n2015-01-01 00:01:00,4\n")
	write("labels/combined_windows.json", `{"c/newest.csv": [["2015-01-01 00:10:00", "2015-01-01 00:20:00"]], "c/ordered.csv": [], "c/one.csv": [], "c/back.csv": []}`)

	c, err := Load(dir)
	require.NoError(t, err)
	require.Empty(t, c.Warnings)
	require.Equal(t, []string{
		"c/back.csv: rows out of time order (2 of 4 before the row above them); sorted by time",
		"c/newest.csv: rows out of time order (99 of 100 before the row above them); sorted by time",
		"c/one.csv: 1 of 4 rows before the row above them; kept in the file's order",
	}, c.Sorted)
	byName := map[string]*File{}
	for _, f := range c.Files {
		byName[f.Name] = f
	}
	newestFile := byName["c/newest.csv"]
	for i, v := range newestFile.Values {
		require.Equal(t, float64(i), v)
		require.Equal(t, fmt.Sprintf("2015-01-01 %02d:%02d:00", i/60, i%60), newestFile.RawTimestamp(i))
	}
	require.Equal(t, []Window{{First: 10, Last: 20}}, newestFile.Windows)
	require.Equal(t, []float64{4, 2, 3, 1}, byName["c/back.csv"].Values, "rows with one timestamp keep their order")
	require.Equal(t, []float64{1, 3, 2, 4}, byName["c/one.csv"].Values, "a row out of place stays")
	for i, v := range byName["c/ordered.csv"].Values {
		require.Equal(t, float64(i), v)
	}
}
