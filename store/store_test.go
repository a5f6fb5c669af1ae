package store

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"
)

func newStore(t testing.TB, cfg Config) (*Store, *metrics.Set) {
	t.Helper()
	set := metrics.NewSet()
	s, err := New(Options{Config: cfg, Metrics: set})
	require.NoError(t, err)
	return s, set
}

func metricValue(t testing.TB, set *metrics.Set, name string) string {
	t.Helper()
	var b strings.Builder
	set.WritePrometheus(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("metric %s not found in\n%s", name, b.String())
	return ""
}

func readAll(t testing.TB, s *Store, mint, maxt int64, ms ...*labels.Matcher) map[string][]sample {
	t.Helper()
	q, err := s.Querier(mint, maxt)
	require.NoError(t, err)
	defer q.Close()
	out := map[string][]sample{}
	ss := q.Select(context.Background(), true, nil, ms...)
	var it chunkenc.Iterator
	for ss.Next() {
		ser := ss.At()
		it = ser.Iterator(it)
		var got []sample
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			got = append(got, sample{ts, v})
		}
		require.NoError(t, it.Err())
		out[ser.Labels().String()] = got
	}
	require.NoError(t, ss.Err())
	return out
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"defaults", DefaultConfig(), nil},
		{"bad", Config{Retention: time.Second, MaxSeries: 0}, []string{"retention: must be at least 1m", "max_series: must be positive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestAppendAndSelect(t *testing.T) {
	tests := []struct {
		name     string
		samples  []sample
		want     []sample
		rejected map[string]string
	}{
		{
			name:    "in order across several chunks",
			samples: seq(0, 300, 1000),
			want:    seq(0, 300, 1000),
		},
		{
			name:     "out of order and duplicate are dropped and counted",
			samples:  []sample{{1000, 1}, {2000, 2}, {1500, 9}, {2000, 3}, {2000, 2}, {3000, 4}},
			want:     []sample{{1000, 1}, {2000, 2}, {3000, 4}},
			rejected: map[string]string{ReasonOutOfOrder: "1", ReasonDuplicate: "1"},
		},
		{
			name:    "NaN, Inf and stale markers round-trip",
			samples: []sample{{1000, math.Inf(1)}, {2000, math.NaN()}, {3000, math.Float64frombits(value.StaleNaN)}, {4000, -0.5}},
			want:    []sample{{1000, math.Inf(1)}, {2000, math.NaN()}, {3000, math.Float64frombits(value.StaleNaN)}, {4000, -0.5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, set := newStore(t, DefaultConfig())
			lset := labels.FromStrings("__name__", "m", "job", "a")
			app := s.Appender()
			var ref SeriesRef
			for _, x := range tc.samples {
				var err error
				ref, err = app.Append(ref, lset, x.t, x.v)
				require.NoError(t, err)
			}
			app.Commit()
			got := readAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
			require.Len(t, got, 1)
			requireSamples(t, tc.want, got[lset.String()])
			for reason, want := range tc.rejected {
				require.Equal(t, want, metricValue(t, set, `seismo_store_samples_rejected_total{reason="`+reason+`"}`))
			}
		})
	}
}

func seq(from, n, step int64) []sample {
	var out []sample
	for i := range n {
		out = append(out, sample{from + i*step, float64(i)})
	}
	return out
}

func requireSamples(t *testing.T, want, got []sample) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].t, got[i].t, "sample %d", i)
		require.Equal(t, math.Float64bits(want[i].v), math.Float64bits(got[i].v), "sample %d: want %v got %v", i, want[i].v, got[i].v)
	}
}

func TestSelectMatchersAndRange(t *testing.T) {
	s, _ := newStore(t, DefaultConfig())
	app := s.Appender()
	for i := range 10 {
		for ts := int64(0); ts < 600_000; ts += 15_000 {
			_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "req", "code", fmt.Sprint(200+i)), ts, float64(ts))
			require.NoError(t, err)
		}
	}
	_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "other", "code", "200"), 0, 1)
	require.NoError(t, err)
	app.Commit()

	tests := []struct {
		name       string
		mint, maxt int64
		ms         []*labels.Matcher
		series     int
	}{
		{"by name", 0, 600_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "req")}, 10},
		{"by regexp", 0, 600_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "req"), labels.MustNewMatcher(labels.MatchRegexp, "code", "20[0-4]")}, 5},
		{"without name", 0, 600_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "code", "200")}, 2},
		{"no samples in range", 700_000, 800_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "req")}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, s, tc.mint, tc.maxt, tc.ms...)
			require.Len(t, got, tc.series)
		})
	}

	q, err := s.Querier(0, math.MaxInt64)
	require.NoError(t, err)
	vals, _, err := q.LabelValues(context.Background(), "code", nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "req"))
	require.NoError(t, err)
	require.Len(t, vals, 10)
	names, _, err := q.LabelNames(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"__name__", "code"}, names)
}

func TestSeekAcrossChunks(t *testing.T) {
	s, _ := newStore(t, DefaultConfig())
	lset := labels.FromStrings("__name__", "m")
	app := s.Appender()
	for _, x := range seq(0, 500, 10) {
		_, err := app.Append(SeriesRef{}, lset, x.t, x.v)
		require.NoError(t, err)
	}
	app.Commit()
	q, err := s.Querier(0, math.MaxInt64)
	require.NoError(t, err)
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	require.True(t, ss.Next())
	it := ss.At().Iterator(nil)
	for _, target := range []int64{5, 1200, 1205, 3000, 4990} {
		require.Equal(t, chunkenc.ValFloat, it.Seek(target), "seek %d", target)
		ts, v := it.At()
		want := (target + 9) / 10 * 10
		require.Equal(t, want, ts)
		require.Equal(t, float64(want/10), v)
	}
	require.Equal(t, chunkenc.ValNone, it.Seek(5000))
}

func TestSeriesLimit(t *testing.T) {
	s, set := newStore(t, Config{Retention: time.Hour, MaxSeries: 3})
	app := s.Appender()
	var errs int
	for i := range 5 {
		if _, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), 1000, 1); err != nil {
			require.ErrorIs(t, err, ErrSeriesLimit)
			errs++
		}
	}
	require.Equal(t, 3, app.Commit())
	require.Equal(t, 2, errs)
	require.Equal(t, 3, s.NumSeries())
	require.Equal(t, "2", metricValue(t, set, `seismo_store_samples_rejected_total{reason="series_limit"}`))
	// Existing series keep accepting samples at the limit.
	_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "m", "i", "0"), 2000, 1)
	require.NoError(t, err)

	// Raising the limit by reload admits new series without losing data.
	require.NoError(t, s.ApplyConfig(Config{Retention: time.Hour, MaxSeries: 10}))
	_, err = app.Append(SeriesRef{}, labels.FromStrings("__name__", "m", "i", "4"), 2000, 1)
	require.NoError(t, err)
	require.Equal(t, 2, app.Commit())
	require.Equal(t, 4, s.NumSeries())
}

func TestTruncate(t *testing.T) {
	s, set := newStore(t, DefaultConfig())
	app := s.Appender()
	old := labels.FromStrings("__name__", "old")
	live := labels.FromStrings("__name__", "live")
	for ts := int64(0); ts < 1000*1000; ts += 1000 {
		_, err := app.Append(SeriesRef{}, live, ts, 1)
		require.NoError(t, err)
		if ts < 200*1000 {
			_, err = app.Append(SeriesRef{}, old, ts, 1)
			require.NoError(t, err)
		}
	}
	ref, err := app.Append(SeriesRef{}, old, 200*1000, 1)
	require.NoError(t, err)
	app.Commit()

	s.Truncate(500 * 1000)
	require.Equal(t, 1, s.NumSeries())
	require.Equal(t, "1", metricValue(t, set, "seismo_store_series_removed_total"))
	got := readAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	require.Len(t, got, 1)
	samples := got[live.String()]
	// Whole chunks of 120 samples before 500s are gone, the one holding 500s stays.
	require.LessOrEqual(t, samples[0].t, int64(500*1000))
	require.Greater(t, samples[0].t, int64(500*1000-120*1000))
	require.Equal(t, int64(999*1000), samples[len(samples)-1].t)

	// A stale handle to a removed series re-creates it, and the returned
	// handle is the new series.
	ref2, err := app.Append(ref, old, 900*1000, 2)
	require.NoError(t, err)
	require.NotEqual(t, ref, ref2)
	require.Equal(t, 1, app.Commit())
	got = readAll(t, s, 0, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "old"))
	requireSamples(t, []sample{{900 * 1000, 2}}, got[old.String()])
}

func TestRollback(t *testing.T) {
	s, _ := newStore(t, DefaultConfig())
	app := s.Appender()
	_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "m"), 1000, 1)
	require.NoError(t, err)
	app.Rollback()
	require.Equal(t, 0, app.Commit())
	require.Empty(t, readAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")))
}

func TestRunTruncatesOnTicker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s, err := New(Options{Config: DefaultConfig(), TruncateInterval: time.Minute})
		require.NoError(t, err)
		app := s.Appender()
		_, err = app.Append(SeriesRef{}, labels.FromStrings("__name__", "m"), start.UnixMilli(), 1)
		require.NoError(t, err)
		app.Commit()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()

		time.Sleep(30 * time.Minute) // fake time: 30 ticks, still within retention
		synctest.Wait()
		require.Equal(t, 1, s.NumSeries())
		time.Sleep(31 * time.Minute) // past retention: the next tick drops it
		synctest.Wait()
		require.Equal(t, 0, s.NumSeries())
		cancel()
		require.NoError(t, <-done)
	})
}

func TestConcurrentAppendAndQuery(t *testing.T) {
	s, _ := newStore(t, DefaultConfig())
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			app := s.Appender()
			refs := make([]SeriesRef, 50)
			for ts := int64(0); ts < 300; ts++ {
				for i := range refs {
					var err error
					refs[i], err = app.Append(refs[i], labels.FromStrings("__name__", "c", "w", fmt.Sprint(w), "i", fmt.Sprint(i)), ts*1000, float64(ts))
					if err != nil {
						panic(err)
					}
				}
				app.Commit()
			}
		})
	}
	for range 20 {
		q, err := eng.NewInstantQuery(context.Background(), s, nil, "sum(rate(c[1m]))", time.UnixMilli(150_000))
		require.NoError(t, err)
		res := q.Exec(context.Background())
		require.NoError(t, res.Err)
		q.Close()
	}
	wg.Wait()
	q, err := eng.NewInstantQuery(context.Background(), s, nil, "sum(rate(c[1m]))", time.UnixMilli(299_000))
	require.NoError(t, err)
	v, err := q.Exec(context.Background()).Vector()
	require.NoError(t, err)
	require.Len(t, v, 1)
	require.InDelta(t, 200.0, v[0].F, 1e-9)
}

var _ storage.Queryable = (*Store)(nil)

// TestRecentWindowFromTail checks that a window the uncompressed tail
// covers yields exactly the samples the chunks hold in that window, and
// that Seek on the tail iterator lands where the chunk iterator does.
func TestRecentWindowFromTail(t *testing.T) {
	s, _ := newStore(t, Config{Retention: time.Hour, MaxSeries: 10})
	lset := labels.FromStrings("__name__", "x")
	app := s.Appender()
	var ref SeriesRef
	var all []sample
	for i := range 300 { // crosses two chunk cuts
		ts, v := int64(i)*10_000, float64(i*i%97)
		ref, _ = app.Append(ref, lset, ts, v)
		all = append(all, sample{ts, v})
	}
	app.Commit()
	inWindow := func(mint, maxt int64) []sample {
		var out []sample
		for _, smp := range all {
			if smp.t >= mint && smp.t <= maxt {
				out = append(out, smp)
			}
		}
		return out
	}
	last := all[len(all)-1].t
	for _, w := range []struct {
		name       string
		mint, maxt int64
		fromTail   bool
	}{
		{"rate 1m", last - 60_000, last, true},
		{"rate 1m, left open", last - 60_000 + 1, last, true},
		{"tail exactly", all[len(all)-tailLen].t, last, false}, // oldest tail sample not before mint
		{"5m lookback", last - 300_000, last, false},
		{"past window", last - 120_000, last - 30_000, false},
		{"beyond the last sample", last - 30_000, last + 60_000, true},
	} {
		t.Run(w.name, func(t *testing.T) {
			got := readAll(t, s, w.mint, w.maxt, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))["{__name__=\"x\"}"]
			want := inWindow(w.mint, w.maxt)
			if w.fromTail {
				require.Equal(t, want, got, "tail path returns the window only")
			} else {
				require.Subset(t, got, want, "chunk path returns whole chunks")
			}
			s.mu.RLock()
			ms := s.byName["x"][0]
			s.mu.RUnlock()
			_, _, fromTail := ms.read(w.mint, w.maxt, nil)
			require.Equal(t, w.fromTail, fromTail)
		})
	}

	t.Run("seek", func(t *testing.T) {
		q, err := s.Querier(last-60_000, last)
		require.NoError(t, err)
		ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "x"))
		require.True(t, ss.Next())
		it := ss.At().Iterator(nil)
		require.Equal(t, chunkenc.ValFloat, it.Seek(last-25_000))
		ts, _ := it.At()
		require.Equal(t, last-20_000, ts)
		require.Equal(t, chunkenc.ValFloat, it.Seek(last-40_000), "seeking back stays put")
		require.Equal(t, last-20_000, it.AtT())
		require.Equal(t, chunkenc.ValNone, it.Seek(last+1))
	})

	t.Run("promql", func(t *testing.T) {
		eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
		for _, expr := range []string{"rate(x[1m])", "x", "max_over_time(x[5m])", "rate(x[1m] offset 2m)"} {
			q, err := eng.NewInstantQuery(context.Background(), s, nil, expr, time.UnixMilli(last))
			require.NoError(t, err)
			got, err := q.Exec(context.Background()).Vector()
			require.NoError(t, err)
			// The same query over a store without a full tail (the chunk
			// path only): a copy loaded from a snapshot starts with an
			// empty tail.
			file := filepath.Join(t.TempDir(), "snap")
			require.NoError(t, s.WriteSnapshot(file))
			c, _ := newStore(t, Config{Retention: time.Hour, MaxSeries: 10})
			require.NoError(t, c.LoadSnapshot(file))
			q2, err := eng.NewInstantQuery(context.Background(), c, nil, expr, time.UnixMilli(last))
			require.NoError(t, err)
			want, err := q2.Exec(context.Background()).Vector()
			require.NoError(t, err)
			require.Equal(t, want, got, expr)
		}
	})
}

// TestSelectBuffersReused checks that a querier's series stay intact while
// it is open, whatever other queriers select meanwhile, and that a querier
// opened after another was closed reuses its buffers and still reads the
// right samples.
func TestSelectBuffersReused(t *testing.T) {
	s, _ := newStore(t, Config{Retention: time.Hour, MaxSeries: 100})
	app := s.Appender()
	refs := make([]SeriesRef, 20)
	for i := range 30 {
		for j := range refs {
			refs[j], _ = app.Append(refs[j], labels.FromStrings("__name__", "x", "j", fmt.Sprint(j)), int64(i)*10_000, float64(i*100+j))
		}
	}
	app.Commit()
	const last = 290_000
	x := labels.MustNewMatcher(labels.MatchEqual, "__name__", "x")
	// Every window from the tail: 6 samples of each of the 20 series.
	want := map[string][]sample{}
	for j := range refs {
		var smp []sample
		for i := 24; i < 30; i++ {
			smp = append(smp, sample{int64(i) * 10_000, float64(i*100 + j)})
		}
		want[labels.FromStrings("__name__", "x", "j", fmt.Sprint(j)).String()] = smp
	}
	read := func(ss storage.SeriesSet) map[string][]sample {
		out := map[string][]sample{}
		var it chunkenc.Iterator
		for ss.Next() {
			it = ss.At().Iterator(it)
			var got []sample
			for it.Next() == chunkenc.ValFloat {
				ts, v := it.At()
				got = append(got, sample{ts, v})
			}
			out[ss.At().Labels().String()] = got
		}
		return out
	}
	ctx := context.Background()
	q1, err := s.Querier(last-55_000, last)
	require.NoError(t, err)
	ss1 := q1.Select(ctx, false, nil, x)
	// Other queriers select and close while q1 is open: q1's series must
	// not change.
	for k := range 3 {
		q2, err := s.Querier(last-55_000+int64(k), last)
		require.NoError(t, err)
		require.Equal(t, want, read(q2.Select(ctx, false, nil, x)))
		require.NoError(t, q2.Close())
	}
	require.Equal(t, want, read(ss1))
	require.NoError(t, q1.Close())
	require.NoError(t, q1.Close(), "Close is idempotent")

	// After Close the buffers serve the next querier, over other windows
	// the tail holds.
	for k := range 2 {
		q, err := s.Querier(last-55_000-int64(k)*10_000, last)
		require.NoError(t, err)
		got := read(q.Select(ctx, false, nil, x))
		require.Len(t, got, len(want))
		for name, smp := range got {
			require.Equal(t, want[name][0].t-int64(k)*10_000, smp[0].t, name)
			require.Equal(t, want[name][len(want[name])-1], smp[len(smp)-1], name)
		}
		require.NoError(t, q.Close())
	}
}

// TestMetricTypes: the types SetType records are returned as a copy,
// the latest word wins, and no more families than maxTypes are kept.
func TestMetricTypes(t *testing.T) {
	st, err := New(Options{Config: DefaultConfig()})
	require.NoError(t, err)
	require.Empty(t, st.MetricTypes())
	st.SetType([]byte("http_requests_total"), "counter")
	st.SetType([]byte("queue_length"), "untyped")
	st.SetType([]byte("queue_length"), "gauge")
	got := st.MetricTypes()
	require.Equal(t, map[string]string{"http_requests_total": "counter", "queue_length": "gauge"}, got)
	got["queue_length"] = "counter"
	require.Equal(t, "gauge", st.MetricTypes()["queue_length"], "a copy")
	for i := range maxTypes {
		st.SetType([]byte(fmt.Sprintf("m%d", i)), "gauge")
	}
	require.Len(t, st.MetricTypes(), maxTypes)
	st.SetType([]byte("queue_length"), "counter")
	require.Equal(t, "counter", st.MetricTypes()["queue_length"], "a known family still changes")
}
