package collectors

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// newHTTPClient builds the client of one job: its TLS settings and an
// authentication header on every request. The client follows no redirect
// to another host with credentials (net/http drops Authorization then).
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
	return &http.Client{Transport: rt}, nil
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
