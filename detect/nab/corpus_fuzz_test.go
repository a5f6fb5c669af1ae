package nab

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadFileAndWindows feeds arbitrary data and labels, as a user's own
// export may have them, to the reader and the window repair. Properties:
// neither panics; an accepted file has one timestamp and one value per
// row and counts its missing values; accepted windows are sorted, do not
// overlap and lie within the rows, and each repair is named.
func FuzzReadFileAndWindows(f *testing.F) {
	f.Add("timestamp,value\n2014-01-01 00:00:00,1\n2014-01-01 00:05:00,\n2014-01-01 00:10:00,3\n",
		`[["2014-01-01 00:05:00.000000", "2014-01-01 00:10:00.000000"]]`)
	f.Add("\ufefftimestamp,value,label\r\n1388534400,1,0\r\n2014-01-01T00:05:00Z,NaN,1\r\n",
		`[["2015-01-01 00:00:00", "2015-01-02 00:00:00"], ["2014-01-01 00:00:00", "2014-01-01 00:05:00"], ["2014-01-01T00:00:00Z", "1388534700"]]`)
	f.Add("timestamp,value\n\"2014-01-01 00:00:00\",\"1e308\"\n", `[]`)
	f.Fuzz(func(t *testing.T, data, labels string) {
		if len(data) > 1<<16 || len(labels) > 1<<12 {
			t.Skip("larger than the cases worth trying")
		}
		file, err := ReadFile("c/f.csv", strings.NewReader(data))
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		require.Len(t, file.Times, file.Rows())
		require.Len(t, file.raw, file.Rows())
		for i := range file.raw { // each row's text is its own, as parsed
			tm, err := parseTime(file.RawTimestamp(i))
			require.NoError(t, err)
			require.Equal(t, tm.UnixMilli(), file.Times[i], "row %d", i)
			v, err := parseValue(file.RawValue(i))
			require.NoError(t, err)
			require.True(t, v == file.Values[i] || math.IsNaN(v) && math.IsNaN(file.Values[i]), "row %d", i)
		}
		missing := 0
		for _, v := range file.Values {
			if math.IsNaN(v) {
				missing++
			}
		}
		require.Equal(t, missing, file.Missing)

		var bounds [][2]string
		if json.Unmarshal([]byte(labels), &bounds) != nil {
			return
		}
		warnings, err := file.SetWindows(bounds)
		if err != nil {
			require.Contains(t, err.Error(), "window ")
			return
		}
		require.LessOrEqual(t, len(file.Windows), len(bounds))
		if len(file.Windows) < len(bounds) {
			require.NotEmpty(t, warnings, "a dropped or merged window is named")
		}
		for i, w := range file.Windows {
			require.LessOrEqual(t, 0, w.First)
			require.LessOrEqual(t, w.First, w.Last)
			require.Less(t, w.Last, file.Rows())
			if i > 0 {
				require.Less(t, file.Windows[i-1].Last, w.First, "windows sorted and apart")
			}
		}
	})
}
