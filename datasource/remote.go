package datasource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/seismo-agent/seismo/internal/httpconf"
)

// Remote queries a Prometheus-compatible HTTP API.
type Remote struct {
	name    string
	timeout time.Duration
	api     v1.API
	client  *http.Client
}

// NewRemote builds a remote source from its config (Resolve already
// applied: secrets read, paths absolute).
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	client, err := httpconf.NewClient(cfg.clientConfig(), &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 5 * time.Minute}, cfg.Headers)
	if err != nil {
		return nil, fmt.Errorf("remote %q: %w", cfg.Name, err)
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, Client: client})
	if err != nil {
		return nil, fmt.Errorf("remote %q: %w", cfg.Name, err)
	}
	return &Remote{name: cfg.Name, timeout: cmpDur(cfg.Timeout, DefaultRemoteTimeout), api: v1.NewAPI(c), client: client}, nil
}

// Name implements Source.
func (r *Remote) Name() string { return r.name }

// Close releases idle connections.
func (r *Remote) Close() error {
	r.client.CloseIdleConnections()
	return nil
}

// Instant implements Source.
func (r *Remote) Instant(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, _, _, err := r.api.Query(ctx, q, ts, v1.WithTimeout(r.timeout))
	if err != nil {
		return nil, r.wrap(err)
	}
	switch x := v.(type) {
	case model.Vector:
		out := make(promql.Vector, 0, len(x))
		for _, s := range x {
			out = append(out, promql.Sample{Metric: toLabels(s.Metric), T: int64(s.Timestamp), F: float64(s.Value)})
		}
		return out, nil
	case *model.Scalar:
		return promql.Vector{{Metric: labels.EmptyLabels(), T: int64(x.Timestamp), F: float64(x.Value)}}, nil
	}
	return nil, fmt.Errorf("remote %q: instant query returned %s, want vector or scalar", r.name, v.Type())
}

// MetricTypes implements Typer with the API's /api/v1/metadata.
func (r *Remote) MetricTypes(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	md, err := r.api.Metadata(ctx, "", "")
	if err != nil {
		return nil, r.wrap(err)
	}
	out := make(map[string]string, len(md))
	for name, ms := range md {
		if len(ms) > 0 && ms[0].Type != "" {
			out[name] = string(ms[0].Type)
		}
	}
	return out, nil
}

// Range implements Source.
func (r *Remote) Range(ctx context.Context, q string, start, end time.Time, step time.Duration) (promql.Matrix, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, _, _, err := r.api.QueryRange(ctx, q, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(r.timeout))
	if err != nil {
		return nil, r.wrap(err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("remote %q: range query returned %s, want matrix", r.name, v.Type())
	}
	out := make(promql.Matrix, 0, len(m))
	for _, s := range m {
		ser := promql.Series{Metric: toLabels(s.Metric), Floats: make([]promql.FPoint, len(s.Values))}
		for i, p := range s.Values {
			ser.Floats[i] = promql.FPoint{T: int64(p.Timestamp), F: float64(p.Value)}
		}
		out = append(out, ser)
	}
	sort.Sort(out)
	return out, nil
}

// wrap names the source; client_golang's errors carry no credentials (the
// URL it prints has none: auth is in headers).
func (r *Remote) wrap(err error) error {
	var apiErr *v1.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("remote %q: %s: %s", r.name, apiErr.Type, apiErr.Msg)
	}
	return fmt.Errorf("remote %q: %w", r.name, err)
}

func toLabels(m model.Metric) labels.Labels {
	b := labels.NewScratchBuilder(len(m))
	for k, v := range m {
		b.Add(string(k), string(v))
	}
	b.Sort()
	return b.Labels()
}

var _ Source = (*Remote)(nil)
