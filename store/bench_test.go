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
