package collectors

import (
	"compress/gzip"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/store"
)

// fuzzContentTypes are the Content-Type headers a fuzzed target answers
// with, picked by the fuzzer.
var fuzzContentTypes = []string{
	"text/plain; version=0.0.4",
	"application/openmetrics-text; version=1.0.0",
	"application/openmetrics-text; version=0.0.1",
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited",
	"",
	"text/html",
}

// FuzzScrape serves arbitrary bodies from a loopback target and scrapes
// them twice through the whole path (HTTP, optional gzip, parse, target
// labels, limits, store, staleness). Properties: no panic; a failed scrape
// has a known reason; a successful one stores only valid series that carry
// the target labels, within label_limit and sample_limit, every sample at
// the scrape time; the second scrape of the same body scrapes as many
// samples, stores the same series, and marks none of them stale.
func FuzzScrape(f *testing.F) {
	for _, body := range []string{
		"# HELP up x\n# TYPE up gauge\nup 1\n",
		"a{b=\"c\"} 1\na{b=\"c\"} 2\nx_total 3 1700000000000\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 1.5\n# EOF\n",
		"m{job=\"other\",instance=\"i\",exported_job=\"x\"} NaN\n",
		"{\"utf8.metric\",\"a b\"=\"c\"} 1\n",
		"m{a=\"\"} 1\n",
	} {
		for ct := range fuzzContentTypes {
			f.Add([]byte(body), uint8(ct), false)
		}
		f.Add([]byte(body), uint8(0), true)
	}

	var (
		mu      sync.Mutex
		body    []byte
		ct      string
		gzipped bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		if gzipped {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(body)
			_ = zw.Close()
			return
		}
		_, _ = w.Write(body)
	}))
	f.Cleanup(srv.Close)

	const sampleLimit, labelLimit = 200, 8
	f.Fuzz(func(t *testing.T, data []byte, ctIdx uint8, gz bool) {
		if len(data) > 64<<10 {
			t.Skip("the body size limit is tested elsewhere")
		}
		mu.Lock()
		body, ct, gzipped = data, fuzzContentTypes[int(ctIdx)%len(fuzzContentTypes)], gz
		mu.Unlock()

		st, err := store.New(store.Options{Config: store.Config{Retention: time.Hour, MaxSeries: 1000}})
		require.NoError(t, err)
		sc := &ScrapeConfig{JobName: "app", SampleLimit: sampleLimit, LabelLimit: labelLimit, BodySizeLimit: 1 << 20}
		target := labels.FromStrings("instance", "127.0.0.1:1", "job", "app")
		s := newScraper(srv.URL, srv.Client(), sc, 5*time.Second, target)
		cache := newSeriesCache()
		app := st.Appender()

		scrape := func(ts int64) (result, error) {
			cache.begin()
			res, err := s.run(context.Background(), time.UnixMilli(ts), app, cache)
			cache.commitStaleness(app, ts, err == nil)
			app.Commit()
			return res, err
		}
		const t1, t2 = 1_000_000, 1_015_000
		res1, err1 := scrape(t1)
		if err1 != nil {
			require.Contains(t, errorReasons, reasonOf(err1), "error %q has no known reason", err1)
			return
		}
		require.LessOrEqual(t, res1.scraped, sampleLimit)
		series1 := storedSeries(t, st, func(lset labels.Labels, ts int64, v float64) {
			require.True(t, lset.IsValid(model.UTF8Validation), "invalid series %s stored", lset)
			require.LessOrEqual(t, lset.Len(), labelLimit, "series %s", lset)
			require.Equal(t, "app", lset.Get("job"), "series %s lost the job label", lset)
			require.Equal(t, "127.0.0.1:1", lset.Get("instance"), "series %s lost the instance label", lset)
			require.Equal(t, int64(t1), ts, "sample of %s not at scrape time", lset)
			require.False(t, value.IsStaleNaN(v), "first scrape wrote a stale marker for %s", lset)
		})
		require.LessOrEqual(t, len(series1), res1.scraped)

		res2, err2 := scrape(t2)
		require.NoError(t, err2, "same body failed on the second scrape")
		require.Equal(t, res1, res2, "same body scraped differently")
		series2 := storedSeries(t, st, func(lset labels.Labels, ts int64, v float64) {
			if ts == t2 {
				require.False(t, value.IsStaleNaN(v), "series %s marked stale though still exposed", lset)
			}
		})
		require.Equal(t, series1, series2)
	})
}

// storedSeries returns the sorted string forms of every series in st and
// calls check for each of their samples.
func storedSeries(t *testing.T, st *store.Store, check func(labels.Labels, int64, float64)) []string {
	t.Helper()
	q, err := st.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchNotEqual, "__fuzz_never__", "x"))
	var out []string
	for ss.Next() {
		s := ss.At()
		out = append(out, s.Labels().String())
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			check(s.Labels(), ts, v)
		}
		require.NoError(t, it.Err())
	}
	slices.Sort(out)
	return out
}
