package collectors

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// newHTTPClient builds the client of one job: its TLS settings and an
// authentication header on every request. Because the header is added below
// net/http's redirect handling, a redirect to another host is not followed
// when credentials are configured: they would go along.
func newHTTPClient(cfg HTTPClientConfig) (*http.Client, error) {
	tlsCfg := &tls.Config{
		ServerName:         cfg.TLSConfig.ServerName,
		InsecureSkipVerify: cfg.TLSConfig.InsecureSkipVerify, //nolint:gosec // user's explicit choice
		MinVersion:         tls.VersionTLS12,
	}
	if cfg.TLSConfig.CAFile != "" {
		b, err := os.ReadFile(cfg.TLSConfig.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("ca_file %q holds no PEM certificate", cfg.TLSConfig.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.TLSConfig.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSConfig.CertFile, cfg.TLSConfig.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	var rt http.RoundTripper = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       5 * time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the scrape timeout's context
		DisableCompression:    true,
	}
	switch {
	case cfg.BasicAuth != nil:
		rt = &authRoundTripper{next: rt, basic: cfg.BasicAuth}
	case cfg.Authorization != nil:
		typ := cfg.Authorization.Type
		if typ == "" {
			typ = "Bearer"
		}
		rt = &authRoundTripper{next: rt, header: typ + " " + string(cfg.Authorization.Credentials)}
	}
	c := &http.Client{Transport: rt}
	if cfg.BasicAuth != nil || cfg.Authorization != nil {
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != via[0].URL.Host {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	return c, nil
}

type authRoundTripper struct {
	next   http.RoundTripper
	basic  *BasicAuth
	header string
}

func (a *authRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if a.basic != nil {
		req.SetBasicAuth(a.basic.Username, string(a.basic.Password))
	} else {
		req.Header.Set("Authorization", a.header)
	}
	return a.next.RoundTrip(req)
}

// closeIdle releases a job's idle connections when the job stops.
func closeIdle(c *http.Client) {
	if c != nil {
		c.CloseIdleConnections()
	}
}
