package datasource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
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
	tlsCfg := &tls.Config{
		ServerName:         cfg.TLSConfig.ServerName,
		InsecureSkipVerify: cfg.TLSConfig.InsecureSkipVerify, //nolint:gosec // user's explicit choice
		MinVersion:         tls.VersionTLS12,
	}
	if cfg.TLSConfig.CAFile != "" {
		b, err := os.ReadFile(cfg.TLSConfig.CAFile)
		if err != nil {
			return nil, fmt.Errorf("remote %q: read ca_file: %w", cfg.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("remote %q: ca_file holds no PEM certificate", cfg.Name)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.TLSConfig.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSConfig.CertFile, cfg.TLSConfig.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("remote %q: load client certificate: %w", cfg.Name, err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	rt := &headerRoundTripper{next: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 4, IdleConnTimeout: 5 * time.Minute}, headers: cfg.Headers}
	switch {
	case cfg.BasicAuth != nil:
		rt.user, rt.pass, rt.basic = cfg.BasicAuth.Username, string(cfg.BasicAuth.Password), true
	case cfg.Authorization != nil:
		typ := cfg.Authorization.Type
		if typ == "" {
			typ = "Bearer"
		}
		rt.auth = typ + " " + string(cfg.Authorization.Credentials)
	}
	client := &http.Client{Transport: rt}
	if rt.basic || rt.auth != "" || len(rt.headers) > 0 {
		// Credentials are added below redirect handling: never carry them
		// to another host.
		client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != via[0].URL.Host {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, Client: client})
	if err != nil {
		return nil, fmt.Errorf("remote %q: %w", cfg.Name, err)
	}
	return &Remote{name: cfg.Name, timeout: cmpDur(cfg.Timeout, DefaultRemoteTimeout), api: v1.NewAPI(c), client: client}, nil
}

type headerRoundTripper struct {
	next             http.RoundTripper
	headers          map[string]string
	basic            bool
	user, pass, auth string
}

func (h *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	switch {
	case h.basic:
		req.SetBasicAuth(h.user, h.pass)
	case h.auth != "":
		req.Header.Set("Authorization", h.auth)
	}
	return h.next.RoundTrip(req)
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
