package rules

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/store"
)

func newReplayStore(t testing.TB) *store.Store {
	st, err := store.New(store.Options{Config: store.Config{Retention: 24 * time.Hour, MaxSeries: 1000}})
	require.NoError(t, err)
	return st
}

func TestLoadAndReplay(t *testing.T) {
	start := time.Unix(1767225600, 0).UTC()
	tests := []struct {
		name    string
		load    func(st *store.Store) (LoadStats, error)
		samples int
		series  int
	}{
		{"csv", func(st *store.Store) (LoadStats, error) {
			f, err := os.Open("testdata/replay/latency.csv")
			require.NoError(t, err)
			defer f.Close()
			return LoadCSV(st, f)
		}, 79, 2},
		{"openmetrics", func(st *store.Store) (LoadStats, error) {
			b, err := os.ReadFile("testdata/replay/latency.om")
			require.NoError(t, err)
			return LoadOpenMetrics(st, b)
		}, 40, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newReplayStore(t)
			stats, err := tt.load(st)
			require.NoError(t, err)
			require.Equal(t, tt.samples, stats.Samples)
			require.Equal(t, tt.series, stats.Series)
			require.Equal(t, start, stats.Start)
			require.Equal(t, start.Add(39*15*time.Second), stats.End)

			cfg := testConfig("testdata/replay/slow.yml")
			res, err := Replay(context.Background(), ReplayOptions{
				Config: cfg, Source: newEngineSource(st), Start: stats.Start, End: stats.End, Trace: true,
			})
			require.NoError(t, err)
			require.Equal(t, 40, res.Evaluations)
			var got []string
			for _, tr := range res.Transitions {
				got = append(got, tr.Time.Sub(start).String()+" "+tr.To.String())
			}
			// 2.0 from sample 20 (5m) to 29; for: 30s; resolved at 30.
			require.Equal(t, []string{"5m0s pending", "5m30s firing", "7m30s resolved"}, got)
			require.Equal(t, 0.1, res.Transitions[2].Value, "value at resolve time")
			require.Equal(t, model.StateResolved, res.Transitions[2].To)
			require.Len(t, res.Traces, 1)

			var svg strings.Builder
			require.NoError(t, WriteSVG(&svg, res))
			require.Contains(t, svg.String(), "<svg")
			require.Contains(t, svg.String(), `fill="#f4b4b4"`, "alert span drawn")
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, csv, om, want string
	}{
		{name: "csv bad header", csv: "time,up{\n", want: "csv header column 2"},
		{name: "csv bad value", csv: "time,up\n1,abc\n", want: "csv row 2 column 2"},
		{name: "csv bad time", csv: "time,up\nyesterday,1\n", want: "csv row 2: time"},
		{name: "om without timestamp", om: "up 1\n", want: "has no timestamp"},
		{name: "om syntax", om: "up{ 1 2\n", want: "openmetrics:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newReplayStore(t)
			var err error
			if tt.csv != "" {
				_, err = LoadCSV(st, strings.NewReader(tt.csv))
			} else {
				_, err = LoadOpenMetrics(st, []byte(tt.om))
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
