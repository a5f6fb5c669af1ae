package collectors

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/seismo-agent/seismo/store"
)

// exposition10k is a text-format body of 10,000 series of a realistic
// shape: 500 handlers x 5 codes x 4 methods of one counter.
func exposition10k() []byte {
	var b bytes.Buffer
	b.WriteString("# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n")
	for h := range 500 {
		for c := range 5 {
			for m, method := range []string{"GET", "POST", "PUT", "DELETE"} {
				fmt.Fprintf(&b, "http_requests_total{code=\"%d\",handler=\"/api/v1/resource%d\",method=\"%s\"} %d\n", 200+c*100, h, method, h*c+m)
			}
		}
	}
	return b.Bytes()
}

// BenchmarkParseAppend10k measures parsing a 10k-series scrape and
// appending it to the store, in steady state (series cache warm), as every
// scrape after the first. ns/op is per scrape.
func BenchmarkParseAppend10k(b *testing.B) {
	body := exposition10k()
	st, err := store.New(store.Options{Config: store.Config{Retention: time.Hour, MaxSeries: 1 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	sc := &ScrapeConfig{JobName: "app"}
	s := newScraper("", nil, sc, time.Second, labels.FromStrings("instance", "10.0.0.1:8080", "job", "app"))
	app := st.Appender()
	cache := newSeriesCache()
	ts := int64(0)
	scrape := func() {
		ts += 15_000
		cache.begin()
		res, err := s.appendBody(body, "text/plain; version=0.0.4", ts, app, cache)
		if err != nil || res.scraped != 10_000 {
			b.Fatal(err, res.scraped)
		}
		cache.commitStaleness(app, ts, true)
		app.Commit()
	}
	scrape() // first scrape builds the cache and the series
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		scrape()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/sample")
}

// BenchmarkParseAppend10kCold is the first scrape of a target: every series
// is parsed into labels and created in the store.
func BenchmarkParseAppend10kCold(b *testing.B) {
	body := exposition10k()
	sc := &ScrapeConfig{JobName: "app"}
	b.ReportAllocs()
	for b.Loop() {
		st, _ := store.New(store.Options{Config: store.Config{Retention: time.Hour, MaxSeries: 1 << 20}})
		s := newScraper("", nil, sc, time.Second, labels.FromStrings("instance", "10.0.0.1:8080", "job", "app"))
		app := st.Appender()
		cache := newSeriesCache()
		cache.begin()
		if _, err := s.appendBody(body, "text/plain; version=0.0.4", 15_000, app, cache); err != nil {
			b.Fatal(err)
		}
		app.Commit()
	}
}
