package collectors

import (
	"context"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// ProbeCollector probes one URL over HTTP the way blackbox_exporter's http
// prober does and reports probe_success, probe_duration_seconds and
// probe_http_status_code (0 when no response arrived). A failed probe is a
// successful collection: the failure is the measurement.
type ProbeCollector struct {
	url    string
	method string
	valid  []int
	client *http.Client
	now    func() time.Time
	out    []Sample
}

// NewProbeCollector probes url with client; valid lists the accepted status
// codes (empty: any 2xx); now measures the duration.
func NewProbeCollector(url, method string, valid []int, client *http.Client, now func() time.Time) *ProbeCollector {
	if method == "" {
		method = http.MethodGet
	}
	if now == nil {
		now = time.Now
	}
	return &ProbeCollector{url: url, method: method, valid: valid, client: client, now: now}
}

var (
	probeSuccess  = labels.FromStrings("__name__", "probe_success")
	probeDuration = labels.FromStrings("__name__", "probe_duration_seconds")
	probeStatus   = labels.FromStrings("__name__", "probe_http_status_code")
)

// Collect implements Collector.
func (p *ProbeCollector) Collect(ctx context.Context, _ time.Time) ([]Sample, error) {
	start := p.now()
	code, ok := p.probe(ctx)
	dur := p.now().Sub(start).Seconds()
	success := 0.0
	if ok {
		success = 1
	}
	p.out = append(p.out[:0],
		Sample{Labels: probeSuccess, Value: success},
		Sample{Labels: probeDuration, Value: dur},
		Sample{Labels: probeStatus, Value: float64(code)},
	)
	return p.out, nil
}

func (p *ProbeCollector) probe(ctx context.Context) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, nil)
	if err != nil {
		return 0, false
	}
	req.Header.Set("User-Agent", "seismo-probe")
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	// Read (a bounded part of) the body so the duration includes it, as a
	// client would see it.
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, false
	}
	if len(p.valid) == 0 {
		return resp.StatusCode, resp.StatusCode >= 200 && resp.StatusCode < 300
	}
	return resp.StatusCode, slices.Contains(p.valid, resp.StatusCode)
}
