package rules

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/store"
)

func BenchmarkParse(b *testing.B) {
	content, err := os.ReadFile("testdata/real/shop.good.yml")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(ParseOptions{}, "shop.yml", content); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalPerSeries measures the rules engine's own cost per series
// per evaluation (detector, lifecycle, labels), without PromQL: the source
// returns a ready vector. Reported as ns/series.
func BenchmarkEvalPerSeries(b *testing.B) {
	for _, typ := range []string{"auto", "fake"} {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/series=%d", typ, n), func(b *testing.B) {
				vec := make(promql.Vector, n)
				for i := range vec {
					vec[i] = promql.Sample{Metric: labels.FromStrings("__name__", "x", "instance", fmt.Sprint(i))}
				}
				src := &fakeSource{instant: func(_ string, ts time.Time) (promql.Vector, error) {
					for i := range vec {
						vec[i].F = float64(i%7) + float64(ts.Unix()%3)
					}
					return vec, nil
				}}
				lookup := func(t string) (detect.Kind, bool) {
					if k, ok := fakeKinds[t]; ok {
						return k, true
					}
					return detect.Lookup(t)
				}
				m, err := NewManager(Options{Source: src, Lookup: lookup, Kinds: detect.Kinds})
				require.NoError(b, err)
				defer m.Close()
				rules := fmt.Sprintf("groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: %s}, annotations: {summary: '{{ $value }}'}}]}]", typ)
				cfg := testConfig(writeRules(b, b.TempDir(), "r.yml", rules))
				require.NoError(b, m.ApplyConfig(cfg))
				ctx := context.Background()
				ts := t0
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					ts = ts.Add(15 * time.Second)
					if err := m.EvalGroups(ctx, ts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
			})
		}
	}
}

// BenchmarkReplayBuiltin replays the built-in pack over a 2h20m synthetic
// recording (67 series, 37k samples) end to end: PromQL over the store,
// detectors and lifecycle. Reported as input samples per second.
func BenchmarkReplayBuiltin(b *testing.B) {
	rec, _ := genRecording("storm", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	st, err := store.New(store.Options{Config: store.Config{Retention: 24 * time.Hour, MaxSeries: 10000}})
	require.NoError(b, err)
	stats, err := LoadOpenMetrics(st, rec)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Replay(context.Background(), ReplayOptions{
			Config: DefaultConfig(), Source: newEngineSource(st), Start: stats.Start, End: stats.End,
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stats.Samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkLoadOpenMetrics measures loading a recording into the store,
// reported as samples per second.
func BenchmarkLoadOpenMetrics(b *testing.B) {
	rec, _ := genRecording("normal", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	samples := 0
	for b.Loop() {
		st := newReplayStore(b)
		stats, err := LoadOpenMetrics(st, rec)
		if err != nil {
			b.Fatal(err)
		}
		samples += stats.Samples
	}
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkParseSeriesValues(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSeriesValues("1+2x100 _x10 stale 5x20 -1e3-1x10"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalManyFiring evaluates a group of 20 anomaly rules whose 50
// series each are all firing, as in a large outage: what the lifecycle,
// suppression and sending cost per group evaluation beyond the detectors.
// Gathering every other rule's alerts at every evaluation, for hangs
// (see "One hang, one page"), took it from about 5 to 9 ms.
func BenchmarkEvalManyFiring(b *testing.B) {
	const nRules, nSeries = 20, 50
	vec := make(promql.Vector, nSeries)
	for i := range vec {
		vec[i] = promql.Sample{Metric: labels.FromStrings("__name__", "x", "instance", fmt.Sprint(i)), F: 20}
	}
	src := &fakeSource{instant: func(_ string, ts time.Time) (promql.Vector, error) { return vec, nil }}
	m, err := NewManager(Options{Source: src, Lookup: fakeLookup, Kinds: fakeKindNames})
	require.NoError(b, err)
	defer m.Close()
	var sb strings.Builder
	sb.WriteString("groups: [{name: g, rules: [")
	for r := range nRules {
		if r > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "{anomaly: A%d, expr: x, detector: {type: fake}}", r)
	}
	sb.WriteString("]}]")
	require.NoError(b, m.ApplyConfig(testConfig(writeRules(b, b.TempDir(), "r.yml", sb.String()))))
	ctx := context.Background()
	ts := t0
	for range 5 {
		ts = ts.Add(15 * time.Second)
		require.NoError(b, m.EvalGroups(ctx, ts))
	}
	b.ReportAllocs()
	for b.Loop() {
		ts = ts.Add(15 * time.Second)
		if err := m.EvalGroups(ctx, ts); err != nil {
			b.Fatal(err)
		}
	}
}
