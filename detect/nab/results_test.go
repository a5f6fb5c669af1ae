package nab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// writeCorpus lays out a tiny corpus in the NAB directory structure.
func writeCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("timestamp,value\r\n")
	for i := range 200 {
		v := "10"
		if i == 150 {
			v = "90"
		}
		b.WriteString("2015-01-01 " + hhmm(i) + ":00," + v + "\r\n")
	}
	files := map[string]string{
		"data/catA/one.csv":            strings.TrimSuffix(b.String(), "\r\n"), // no final newline
		"labels/combined_windows.json": `{"catA/one.csv": [["2015-01-01 02:20:00.000000", "2015-01-01 02:40:00.000000"]]}`,
		"labels/combined_labels.json":  `{}`,
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return dir
}

// hhmm formats minute i of the day.
func hhmm(i int) string {
	return string([]byte{byte('0' + i/600), byte('0' + i/60%10), ':', byte('0' + i%60/10), byte('0' + i%10)})
}

func TestWriteResults(t *testing.T) {
	c, err := Load(writeCorpus(t))
	require.NoError(t, err)
	require.Equal(t, []Window{{First: 140, Last: 160}}, c.Files[0].Windows)

	newDet, threshold := kindFactory(t, "ewma")
	require.Equal(t, 0.5, threshold)
	scores, _, err := Run(c, newDet, nil)
	require.NoError(t, err)

	out := t.TempDir()
	require.NoError(t, WriteResults(out, "ewma", c, scores))
	got, err := os.ReadFile(filepath.Join(out, "ewma", "catA", "ewma_one.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	require.Len(t, lines, 201, "header plus one row per data row")
	require.Equal(t, "timestamp,value,anomaly_score", lines[0])
	require.Equal(t, "2015-01-01 00:00:00,10,0", lines[1])
	require.True(t, strings.HasPrefix(lines[151], "2015-01-01 02:30:00,90,"), lines[151])
	require.NotEqual(t, "2015-01-01 02:30:00,90,0", lines[151], "the spike is scored")

	for _, bad := range []string{"", "my_det", "v1.2", "a/b"} {
		require.ErrorContains(t, WriteResults(out, bad, c, scores), "detector name", bad)
	}
}

func TestKindConfig(t *testing.T) {
	_, err := KindConfig("nope")
	require.ErrorContains(t, err, `unknown detector "nope"`)
	for _, name := range detect.Kinds() {
		k, _ := detect.Lookup(name)
		if len(k.Signals) > 0 {
			_, err := KindConfig(name)
			require.ErrorContains(t, err, "several signals")
		}
	}
}

// TestResultsKeepTheText: a result file gives each row's timestamp and
// value exactly as the data file wrote them, quoted, with a label column
// after them, or newest first, in time order.
func TestResultsKeepTheText(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data", "c"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "labels"), 0o755))
	data := "timestamp,value,label\r\n" +
		"1388534520,\"1.50\",0\r\n" +
		"2014-01-01T00:01:00Z,NaN,1\r\n" +
		"\"2014-01-01 00:00:00\",+7e0,0\r\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "c", "f.csv"), []byte(data), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels", "combined_windows.json"), []byte(`{"c/f.csv": []}`), 0o644))
	c, err := Load(dir)
	require.NoError(t, err)
	f := c.Files[0]
	require.Equal(t, []string{"2014-01-01 00:00:00", "2014-01-01T00:01:00Z", "1388534520"},
		[]string{f.RawTimestamp(0), f.RawTimestamp(1), f.RawTimestamp(2)}, "sorted by time, as written")
	require.Equal(t, []string{"+7e0", "NaN", "1.50"}, []string{f.RawValue(0), f.RawValue(1), f.RawValue(2)})

	out := t.TempDir()
	require.NoError(t, WriteResults(out, "x", c, [][]float64{{0, 0, 0.5}}))
	got, err := os.ReadFile(filepath.Join(out, "x", "c", "x_f.csv"))
	require.NoError(t, err)
	require.Equal(t, "timestamp,value,anomaly_score\n"+
		"2014-01-01 00:00:00,+7e0,0\n"+
		"2014-01-01T00:01:00Z,NaN,0\n"+
		"1388534520,1.50,0.5\n", string(got))
}
