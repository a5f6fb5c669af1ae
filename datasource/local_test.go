package datasource

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/seismo-agent/seismo/store"
	"github.com/stretchr/testify/require"
)

// fixtureStore holds five minutes at a 15s interval of:
//   - http_requests_total counters growing 1/s (a, 200), 0.1/s (a, 500), 2/s (b, 200)
//   - lat_bucket, a classic histogram whose buckets grow 1, 3, 4, 4 per second
//   - resets_total: 0 10 20 5 15 at 0..60s, a counter reset at 45s
//   - g, a gauge at 5
func fixtureStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{Config: store.DefaultConfig()})
	require.NoError(t, err)
	app := st.Appender()
	add := func(v float64, ts int64, kv ...string) {
		_, err := app.Append(store.SeriesRef{}, labels.FromStrings(kv...), ts*1000, v)
		require.NoError(t, err)
	}
	for ts := int64(0); ts <= 300; ts += 15 {
		s := float64(ts)
		add(s, ts, "__name__", "http_requests_total", "job", "a", "code", "200")
		add(0.1*s, ts, "__name__", "http_requests_total", "job", "a", "code", "500")
		add(2*s, ts, "__name__", "http_requests_total", "job", "b", "code", "200")
		for le, rate := range map[string]float64{"0.1": 1, "0.5": 3, "1": 4, "+Inf": 4} {
			add(rate*s, ts, "__name__", "lat_bucket", "le", le)
		}
		add(5, ts, "__name__", "g")
	}
	for i, v := range []float64{0, 10, 20, 5, 15} {
		add(v, int64(i)*15, "__name__", "resets_total")
	}
	app.Commit()
	return st
}

func newLocal(t testing.TB, st *store.Store) *Local {
	t.Helper()
	l, err := NewLocal(LocalOptions{Queryable: st})
	require.NoError(t, err)
	return l
}

func TestLocalPromQLCorrectness(t *testing.T) {
	l := newLocal(t, fixtureStore(t))
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	tests := []struct {
		name string
		q    string
		ts   time.Time
		want map[string]float64 // label set -> value
	}{
		{"rate", `rate(http_requests_total{job="a",code="200"}[1m])`, at(300), map[string]float64{`{code="200", job="a"}`: 1}},
		{"increase extrapolates to the window", `increase(http_requests_total{job="a",code="500"}[1m])`, at(300), map[string]float64{`{code="500", job="a"}`: 6}},
		{"sum by", `sum by (code) (rate(http_requests_total[1m]))`, at(300), map[string]float64{`{code="200"}`: 3, `{code="500"}`: 0.1}},
		{"offset", `http_requests_total{job="a",code="200"} offset 1m`, at(300), map[string]float64{`{__name__="http_requests_total", code="200", job="a"}`: 240}},
		{"rate with offset", `rate(http_requests_total{job="b"}[1m] offset 2m)`, at(300), map[string]float64{`{code="200", job="b"}`: 2}},
		{"histogram_quantile p50", `histogram_quantile(0.5, rate(lat_bucket[1m]))`, at(300), map[string]float64{`{}`: 0.3}},
		{"histogram_quantile p90", `histogram_quantile(0.9, sum by (le) (rate(lat_bucket[1m])))`, at(300), map[string]float64{`{}`: 0.8}},
		// Samples 10 20 5 15 at 15..60s: 25 of increase with the reset over
		// 45s, extrapolated to the 60s window.
		{"increase across a counter reset", `increase(resets_total[1m])`, at(60), map[string]float64{`{}`: 25 * 60.0 / 45}},
		{"resets", `resets(resets_total[1m])`, at(60), map[string]float64{`{}`: 1}},
		{"scalar is a one-sample vector", `scalar(g) * 2`, at(300), map[string]float64{`{}`: 10}},
		{"avg_over_time of a gauge", `avg_over_time(g[5m])`, at(300), map[string]float64{`{}`: 5}},
		{"lookback ends 5m after the last sample", `g`, at(300 + 301), map[string]float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := l.Instant(context.Background(), tc.q, tc.ts)
			require.NoError(t, err)
			got := map[string]float64{}
			for _, s := range v {
				got[s.Metric.String()] = s.F
				require.Equal(t, tc.ts.UnixMilli(), s.T)
			}
			require.Len(t, got, len(tc.want), "got %v", got)
			for k, w := range tc.want {
				require.Contains(t, got, k)
				require.InDelta(t, w, got[k], 1e-9, k)
			}
		})
	}
}

// TestLocalEngineOnFirstQuery checks that a source builds its engine when
// first queried, once, and shares it between concurrent first queries.
func TestLocalEngineOnFirstQuery(t *testing.T) {
	l := newLocal(t, fixtureStore(t))
	require.Nil(t, l.eng, "no engine before the first query")
	var wg sync.WaitGroup
	lens := make([]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			v, err := l.Instant(context.Background(), `g`, time.Unix(300, 0))
			lens[i], errs[i] = len(v), err
		})
	}
	wg.Wait()
	for i := range 4 {
		require.NoError(t, errs[i])
		require.Equal(t, 1, lens[i])
	}
	eng := l.eng
	require.NotNil(t, eng)
	_, err := l.Range(context.Background(), `g`, time.Unix(200, 0), time.Unix(300, 0), time.Minute)
	require.NoError(t, err)
	require.Same(t, eng, l.eng, "one engine for every query")
}

func TestLocalRange(t *testing.T) {
	l := newLocal(t, fixtureStore(t))
	m, err := l.Range(context.Background(), `sum(rate(http_requests_total[1m]))`, time.Unix(120, 0), time.Unix(300, 0), time.Minute)
	require.NoError(t, err)
	require.Len(t, m, 1)
	require.Len(t, m[0].Floats, 4)
	for i, p := range m[0].Floats {
		require.Equal(t, int64(120+60*i)*1000, p.T)
		require.InDelta(t, 3.1, p.F, 1e-9)
	}
}

func TestLocalErrors(t *testing.T) {
	l := newLocal(t, fixtureStore(t))
	tests := []struct{ name, q string }{
		{"syntax", `rate(`},
		{"range vector is not instant-able", `g[1m]`},
		{"string result", `"x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Instant(context.Background(), tc.q, time.Unix(300, 0))
			require.Error(t, err)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Instant(ctx, `g`, time.Unix(300, 0))
	require.Error(t, err, "a cancelled context ends the query")
}

// TestQueryTurnRests shows that with a CPU share below 1 a query's turn
// stays taken after the query, for its length times 1/share-1, so queries
// waiting in line cannot keep a CPU busy all the time; with no share set
// the turn is free at once. The clock advances a minute per reading, so
// every query "takes" a minute and the rest is a minute at share 0.5.
func TestQueryTurnRests(t *testing.T) {
	st := fixtureStore(t)
	tests := []struct {
		name      string
		share     float64
		taken     int
		nextQuery error
	}{
		{"share 0.5", 0.5, 1, context.Canceled},
		{"no share", 0, 0, nil},
		{"share 1", 1, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			clock := time.Unix(0, 0)
			l, err := NewLocal(LocalOptions{Queryable: st, MaxConcurrent: 1, CPUShare: tt.share, Timeout: time.Hour,
				Now: func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Minute); return clock }})
			require.NoError(t, err)
			_, _, err = l.Query(context.Background(), "g", time.Unix(300, 0))
			require.NoError(t, err)
			require.Len(t, l.turns, tt.taken, "turns taken after the query returned")

			// A query that would have to wait for the turn gives up with
			// its context; one that finds the turn free runs.
			ctx, cancel := context.WithCancel(context.Background())
			if tt.nextQuery != nil {
				cancel()
			}
			_, _, err = l.Query(ctx, "g", time.Unix(300, 0))
			cancel()
			require.ErrorIs(t, err, tt.nextQuery)
		})
	}
	_, err := NewLocal(LocalOptions{Queryable: st, CPUShare: 1.5})
	require.ErrorContains(t, err, "CPU share must be between 0 and 1, got 1.5")
}
