package demo

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// sample is one scraped series.
type sample struct {
	labels map[string]string
	value  float64
}

// scrape is one parsed /metrics answer, by metric name.
type scrape map[string][]sample

func scrapeMetrics(t *testing.T, c *http.Client, base string) scrape {
	t.Helper()
	resp, err := c.Get(base + RouteMetrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := scrape{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.Untyped != nil:
				s.value = m.GetUntyped().GetValue()
			case m.Counter != nil:
				s.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.value = m.GetGauge().GetValue()
			default:
				t.Fatalf("unexpected metric type in %s", name)
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// match selects series whose labels equal the given name/value pairs.
type match map[string]string

func (m match) ok(l map[string]string) bool {
	for k, v := range m {
		if l[k] != v {
			return false
		}
	}
	return true
}

// sum adds the values of name's series selected by m, and by keep when set.
func (s scrape) sum(name string, m match, keep func(map[string]string) bool) float64 {
	total := 0.0
	for _, x := range s[name] {
		if m.ok(x.labels) && (keep == nil || keep(x.labels)) {
			total += x.value
		}
	}
	return total
}

func (s scrape) value(name string) float64 { return s.sum(name, nil, nil) }

// delta is what happened between two scrapes of the same service.
type delta struct{ from, to scrape }

// requests counts requests between the scrapes, selected by m and keep.
func (d delta) requests(m match, keep func(map[string]string) bool) float64 {
	return d.to.sum("http_requests_total", m, keep) - d.from.sum("http_requests_total", m, keep)
}

func is5xx(l map[string]string) bool { return l["code"] >= "500" && l["code"] < "600" }

// byClient returns, per client, the requests with code (all codes when
// code is "") between the scrapes.
func (d delta) byClient(code string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range []struct {
		sc   scrape
		sign float64
	}{{d.to, 1}, {d.from, -1}} {
		for _, x := range s.sc["http_requests_total"] {
			if code == "" || x.labels["code"] == code {
				out[x.labels["client"]] += s.sign * x.value
			}
		}
	}
	for c, v := range out {
		if v == 0 {
			delete(out, c)
		}
	}
	return out
}

// quantile estimates the q-quantile of route's latency between the scrapes
// from the histogram buckets, as histogram_quantile does.
func (d delta) quantile(q float64, route string) float64 {
	type bkt struct{ le, n float64 }
	var bs []bkt
	for _, x := range d.to["http_request_duration_seconds_bucket"] {
		if x.labels["route"] != route {
			continue
		}
		le, err := strconv.ParseFloat(x.labels["le"], 64)
		if err != nil {
			return math.NaN()
		}
		n := x.value - d.from.sum("http_request_duration_seconds_bucket", match{"route": route, "le": x.labels["le"]}, nil)
		bs = append(bs, bkt{le, n})
	}
	// Buckets come sorted by le in the exposition except +Inf; sort anyway.
	for i := range bs {
		for j := i + 1; j < len(bs); j++ {
			if bs[j].le < bs[i].le {
				bs[i], bs[j] = bs[j], bs[i]
			}
		}
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	prevLe, prevN := 0.0, 0.0
	for _, b := range bs {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			return prevLe + (b.le-prevLe)*(rank-prevN)/max(b.n-prevN, 1e-9)
		}
		prevLe, prevN = b.le, b.n
	}
	return math.NaN()
}

// strconvF formats a bucket bound the way the exposition does.
func strconvF(f float64) string { return fmt.Sprintf("%v", f) }
