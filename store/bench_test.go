package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
)

func benchLabels(n int) []labels.Labels {
	out := make([]labels.Labels, n)
	for i := range out {
		out[i] = labels.FromStrings("__name__", "http_requests_total", "code", fmt.Sprint(200+i%5), "handler", fmt.Sprintf("/api/v%d", i), "instance", "10.0.0.1:8080", "job", "app")
	}
	return out
}

// BenchmarkAppend measures one sample appended to an existing series through
// a cached ref, as the scraper does on every scrape after the first.
func BenchmarkAppend(b *testing.B) {
	s, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
	lsets := benchLabels(1000)
	refs := make([]SeriesRef, len(lsets))
	app := s.Appender()
	b.ReportAllocs()
	b.ResetTimer()
	ts := int64(0)
	for i := 0; i < b.N; i++ {
		j := i % len(lsets)
		if j == 0 {
			app.Commit()
			ts += 15_000
		}
		refs[j], _ = app.Append(refs[j], lsets[j], ts, float64(i))
	}
	app.Commit()
}

// BenchmarkMemory reports heap bytes per series and per sample for 10k
// series of 5 labels holding an hour at a 15s interval (240 samples each) of
// counter-like values.
func BenchmarkMemory(b *testing.B) {
	const series, samples = 10_000, 240
	lsets := benchLabels(series)
	for b.Loop() {
		var m0, m1, m2 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		s, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
		app := s.Appender()
		refs := make([]SeriesRef, series)
		for i, l := range lsets {
			refs[i], _ = app.Append(SeriesRef{}, l, 0, 0)
		}
		app.Commit()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		for k := 1; k < samples; k++ {
			for i := range lsets {
				app.Append(refs[i], lsets[i], int64(k)*15_000, float64(k*(i%7+1)))
			}
			app.Commit()
		}
		runtime.GC()
		runtime.ReadMemStats(&m2)
		st := s.Stats()
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/series, "B/series")
		b.ReportMetric(float64(m2.HeapAlloc-m1.HeapAlloc)/float64(series*(samples-1)), "B/sample")
		b.ReportMetric(float64(st.ChunkBytes)/float64(st.Samples), "chunkB/sample")
		runtime.KeepAlive(s)
		runtime.KeepAlive(refs)
	}
}

// BenchmarkInstantQuery evaluates sum by (code) (rate(...[5m])) over 1k
// series holding 10 minutes at 15s.
func BenchmarkInstantQuery(b *testing.B) {
	s, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
	lsets := benchLabels(1000)
	app := s.Appender()
	refs := make([]SeriesRef, len(lsets))
	for ts := int64(0); ts <= 600_000; ts += 15_000 {
		for i := range lsets {
			refs[i], _ = app.Append(refs[i], lsets[i], ts, float64(ts/1000*int64(i%3+1)))
		}
		app.Commit()
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		q, err := eng.NewInstantQuery(ctx, s, nil, `sum by (code) (rate(http_requests_total[5m]))`, time.UnixMilli(600_000))
		if err != nil {
			b.Fatal(err)
		}
		v, err := q.Exec(ctx).Vector()
		if err != nil || len(v) != 5 {
			b.Fatal(err, len(v))
		}
		q.Close()
	}
}

// BenchmarkSnapshot writes and loads a snapshot of 10k series holding an
// hour at 15s.
func BenchmarkSnapshot(b *testing.B) {
	const series, samples = 10_000, 240
	lsets := benchLabels(series)
	s, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
	app := s.Appender()
	refs := make([]SeriesRef, series)
	for k := range samples {
		for i := range lsets {
			refs[i], _ = app.Append(refs[i], lsets[i], int64(k)*15_000, float64(k*(i%7+1)))
		}
		app.Commit()
	}
	file := filepath.Join(b.TempDir(), "store.snapshot")
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := s.WriteSnapshot(file); err != nil {
				b.Fatal(err)
			}
		}
		fi, _ := os.Stat(file)
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			d, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
			if err := d.LoadSnapshot(file); err != nil || d.NumSeries() != series {
				b.Fatal(err)
			}
		}
	})
}

// packQueries are the distinct expressions of the built-in rule pack
// (rules/builtin/pack.yml with the default names and a 1m window).
var packQueries = []string{
	`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m])))`,
	`sum(rate(process_cpu_seconds_total[1m]))`,
	`sum(rate(http_requests_total[1m]))`,
	`sum by (client) (rate(http_requests_total[1m]))`,
	`sum by (client) (rate(http_requests_total{code="429"}[1m]))`,
	`sum(rate(http_requests_total{code=~"5.."}[1m]))`,
	`sum(http_server_queue_length)`,
	`sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[1m]))`,
}

// packLabels returns n series shaped like bench/peer's synthetic targets:
// a request counter by route, method, code and client (64 clients) and a
// request-duration histogram by route, over targets of 5000 series.
func packLabels(n int) []labels.Labels {
	codes := []string{"200", "429", "500", "503"}
	les := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"}
	out := make([]labels.Labels, 0, n)
	for i := 0; len(out) < n; i++ {
		inst := fmt.Sprintf("127.0.0.1:%d", 23100+i/10)
		route := fmt.Sprintf("/api/v1/resource%d", i%10)
		for _, le := range les {
			out = append(out, labels.FromStrings("__name__", "http_request_duration_seconds_bucket", "instance", inst, "job", "svc", "le", le, "route", route))
		}
		for _, m := range []string{"GET", "POST"} {
			for _, c := range codes {
				for cl := range 64 {
					out = append(out, labels.FromStrings("__name__", "http_requests_total", "client", fmt.Sprintf("tenant-%d", cl), "code", c, "instance", inst, "job", "svc", "method", m, "route", route))
				}
			}
		}
	}
	return out[:n]
}

// BenchmarkPackQueries evaluates the built-in pack's expressions once over
// n series holding 10 minutes at 10s, as one evaluation of the pack does.
// ns/series should stay flat as n grows.
func BenchmarkPackQueries(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			s, _ := newStore(b, Config{Retention: time.Hour, MaxSeries: 1 << 20})
			lsets := packLabels(n)
			app := s.Appender()
			refs := make([]SeriesRef, len(lsets))
			const end = 600_000
			for ts := int64(0); ts <= end; ts += 10_000 {
				for i := range lsets {
					refs[i], _ = app.Append(refs[i], lsets[i], ts, float64(ts/1000*int64(i%3+1)))
				}
				app.Commit()
			}
			eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				for _, qs := range packQueries {
					q, err := eng.NewInstantQuery(ctx, s, nil, qs, time.UnixMilli(end))
					if err != nil {
						b.Fatal(err)
					}
					if res := q.Exec(ctx); res.Err != nil {
						b.Fatal(res.Err)
					}
					q.Close()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
		})
	}
}
