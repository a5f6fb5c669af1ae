package rules

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/store"
)

// maxFuzzRecording bounds fuzzed replay input; the property checks walk
// the whole store, so larger inputs only slow fuzzing down.
const maxFuzzRecording = 64 << 10

type dumpedSample struct {
	t int64
	v float64
}

type dumpedSeries struct {
	lset    labels.Labels
	samples []dumpedSample
}

// dumpStore returns every series and sample in st, sorted by labels.
func dumpStore(t *testing.T, st *store.Store) []dumpedSeries {
	t.Helper()
	q, err := st.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchNotEqual, "__fuzz_never__", "x"))
	var out []dumpedSeries
	for ss.Next() {
		s := ss.At()
		d := dumpedSeries{lset: s.Labels()}
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			d.samples = append(d.samples, dumpedSample{ts, v})
		}
		require.NoError(t, it.Err())
		out = append(out, d)
	}
	require.NoError(t, ss.Err())
	return out
}

// checkLoaded checks what a loader reported against what the store holds.
func checkLoaded(t *testing.T, stats LoadStats, dump []dumpedSeries) {
	t.Helper()
	n := 0
	for _, s := range dump {
		n += len(s.samples)
		for i, x := range s.samples {
			tt := time.UnixMilli(x.t).UTC()
			require.False(t, tt.Before(stats.Start) || tt.After(stats.End), "sample at %s outside reported span %s..%s", tt, stats.Start, stats.End)
			if i > 0 {
				require.Greater(t, x.t, s.samples[i-1].t, "samples out of order in %s", s.lset)
			}
		}
	}
	require.Equal(t, n, stats.Samples, "reported samples differ from stored samples")
	require.LessOrEqual(t, len(dump), stats.Series)
	require.False(t, stats.End.Before(stats.Start))
}

func sameValue(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// FuzzLoadOpenMetrics feeds arbitrary bytes to the OpenMetrics replay
// loader. Properties: no panic; errors say "openmetrics:"; the reported
// samples, series and time span match what the store holds; loading is
// deterministic.
func FuzzLoadOpenMetrics(f *testing.F) {
	fuzzSeedFiles(f, "testdata/replay/*.om")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzRecording {
			t.Skip("larger than the fuzzer needs")
		}
		st := newReplayStore(t)
		stats, err := LoadOpenMetrics(st, data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "openmetrics:") || strings.Contains(err.Error(), "openmetrics"), "error %q does not name the input format", err)
			return
		}
		dump := dumpStore(t, st)
		checkLoaded(t, stats, dump)

		st2 := newReplayStore(t)
		stats2, err := LoadOpenMetrics(st2, data)
		require.NoError(t, err)
		require.Equal(t, stats, stats2)
		dump2 := dumpStore(t, st2)
		require.Len(t, dump2, len(dump))
		for i := range dump {
			require.True(t, labels.Equal(dump[i].lset, dump2[i].lset))
			require.Len(t, dump2[i].samples, len(dump[i].samples))
		}
	})
}

// FuzzLoadCSV feeds arbitrary bytes to the CSV replay loader. Properties:
// no panic; errors name the header, row or column; the reported figures
// match the store; and what was stored, written back out as CSV (one column
// per series, RFC 3339 times), loads into the same series and samples.
func FuzzLoadCSV(f *testing.F) {
	fuzzSeedFiles(f, "testdata/replay/*.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzRecording {
			t.Skip("larger than the fuzzer needs")
		}
		st := newReplayStore(t)
		stats, err := LoadCSV(st, bytes.NewReader(data))
		if err != nil {
			require.Regexp(t, `^csv (header|row \d+)`, err.Error())
			return
		}
		dump := dumpStore(t, st)
		checkLoaded(t, stats, dump)
		if len(dump) == 0 {
			return
		}

		// Write the store out as CSV and load it again.
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		header := []string{"time"}
		for _, s := range dump {
			header = append(header, s.lset.String())
		}
		require.NoError(t, w.Write(header))
		var times []int64
		for _, s := range dump {
			for _, x := range s.samples {
				times = append(times, x.t)
			}
		}
		times = uniqueSorted(times)
		pos := make([]int, len(dump))
		for _, ts := range times {
			row := []string{time.UnixMilli(ts).UTC().Format(time.RFC3339Nano)}
			for i, s := range dump {
				cell := ""
				if pos[i] < len(s.samples) && s.samples[pos[i]].t == ts {
					cell = strconv.FormatFloat(s.samples[pos[i]].v, 'g', -1, 64)
					pos[i]++
				}
				row = append(row, cell)
			}
			require.NoError(t, w.Write(row))
		}
		w.Flush()
		require.NoError(t, w.Error())

		st2 := newReplayStore(t)
		_, err = LoadCSV(st2, bytes.NewReader(b.Bytes()))
		require.NoError(t, err, "stored data written back as CSV does not load:\n%s", b.String())
		dump2 := dumpStore(t, st2)
		require.Len(t, dump2, len(dump))
		for i := range dump {
			require.True(t, labels.Equal(dump[i].lset, dump2[i].lset), "%s != %s", dump[i].lset, dump2[i].lset)
			require.Len(t, dump2[i].samples, len(dump[i].samples), "series %s", dump[i].lset)
			for j, x := range dump[i].samples {
				y := dump2[i].samples[j]
				require.Equal(t, x.t, y.t)
				require.True(t, sameValue(x.v, y.v), "series %s sample %d: %v != %v", dump[i].lset, j, x.v, y.v)
			}
		}
	})
}

func uniqueSorted(xs []int64) []int64 {
	if len(xs) == 0 {
		return xs
	}
	slices.Sort(xs)
	out := xs[:1]
	for _, x := range xs[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}
