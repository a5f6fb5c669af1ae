package httpconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// NewTLS builds the TLS settings of a client (TLS 1.2 at least), reading
// the CA and client certificate files.
func NewTLS(cfg TLSConfig) (*tls.Config, error) {
	tlsCfg := &tls.Config{
		ServerName:         cfg.ServerName,
		InsecureSkipVerify: cfg.InsecureSkipVerify, //nolint:gosec // user's explicit choice
		MinVersion:         tls.VersionTLS12,
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("ca_file %q holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	return tlsCfg, nil
}

// NewClient builds a client over base (whose TLSClientConfig it sets from
// cfg) that adds headers and then the configured credentials to every
// request (secrets already resolved). Because they are added below
// net/http's redirect handling, a redirect to another host is not followed
// when credentials or headers are set: they would go along.
func NewClient(cfg ClientConfig, base *http.Transport, headers map[string]string) (*http.Client, error) {
	tlsCfg, err := NewTLS(cfg.TLSConfig)
	if err != nil {
		return nil, err
	}
	base.TLSClientConfig = tlsCfg
	rt := &roundTripper{next: base, headers: headers, basic: cfg.BasicAuth}
	if cfg.BasicAuth == nil && cfg.Authorization != nil {
		typ := cfg.Authorization.Type
		if typ == "" {
			typ = "Bearer"
		}
		rt.auth = typ + " " + string(cfg.Authorization.Credentials)
	}
	c := &http.Client{Transport: rt}
	if rt.basic != nil || rt.auth != "" || len(headers) > 0 {
		c.CheckRedirect = sameHostRedirect
	}
	return c, nil
}

func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

type roundTripper struct {
	next    http.RoundTripper
	headers map[string]string
	basic   *BasicAuth
	auth    string
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range rt.headers {
		req.Header.Set(k, v)
	}
	switch {
	case rt.basic != nil:
		req.SetBasicAuth(rt.basic.Username, string(rt.basic.Password))
	case rt.auth != "":
		req.Header.Set("Authorization", rt.auth)
	}
	return rt.next.RoundTrip(req)
}
