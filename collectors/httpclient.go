package collectors

import (
	"net"
	"net/http"
	"time"

	"github.com/seismo-agent/seismo/internal/httpconf"
)

// newHTTPClient builds the client of one job: its TLS settings and an
// authentication header on every request (not carried along a redirect to
// another host).
func newHTTPClient(cfg HTTPClientConfig) (*http.Client, error) {
	return httpconf.NewClient(cfg.clientConfig(), &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       5 * time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the scrape timeout's context
		DisableCompression:    true,
	}, nil)
}

// closeIdle releases a job's idle connections when the job stops.
func closeIdle(c *http.Client) {
	if c != nil {
		c.CloseIdleConnections()
	}
}
