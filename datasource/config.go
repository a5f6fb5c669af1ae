package datasource

import (
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
)

// DefaultRemoteTimeout bounds one remote query when timeout is unset.
const DefaultRemoteTimeout = 30 * time.Second

// Config is the "datasources" section: named remote Prometheus-compatible
// APIs that rule groups may query instead of the embedded store ("local").
type Config struct {
	Remote []RemoteConfig `koanf:"remote" yaml:"remote"`
}

// DefaultConfig has no remote sources.
func DefaultConfig() Config { return Config{} }

// RemoteConfig is one remote source speaking the Prometheus HTTP API
// (Prometheus, VictoriaMetrics, Thanos, Mimir).
type RemoteConfig struct {
	// Name is how rule groups refer to it; "local" is reserved.
	Name string `koanf:"name" yaml:"name"`
	// URL is the API root, e.g. http://prometheus:9090 or
	// http://mimir/prometheus.
	URL     string        `koanf:"url" yaml:"url"`
	Timeout time.Duration `koanf:"timeout" yaml:"timeout"`

	BasicAuth     *httpconf.BasicAuth     `koanf:"basic_auth" yaml:"basic_auth"`
	Authorization *httpconf.Authorization `koanf:"authorization" yaml:"authorization"`
	TLSConfig     httpconf.TLSConfig      `koanf:"tls_config" yaml:"tls_config"`
	// Headers are sent with every request (e.g. X-Scope-OrgID for Mimir).
	Headers map[string]string `koanf:"headers" yaml:"headers"`
}

// clientConfig is the shared HTTP client part, pointing at the same
// BasicAuth and Authorization.
func (r *RemoteConfig) clientConfig() httpconf.ClientConfig {
	return httpconf.ClientConfig{BasicAuth: r.BasicAuth, Authorization: r.Authorization, TLSConfig: r.TLSConfig}
}

var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]*$`)

// Validate reports every problem with paths relative to the section.
func (c *Config) Validate() error {
	var errs configutil.Errors
	seen := map[string]int{}
	for i, r := range c.Remote {
		p := fmt.Sprintf("remote[%d]", i)
		switch {
		case !nameRE.MatchString(r.Name):
			errs.Addf(p+".name", "want letters, digits, _ or -, got %q", r.Name)
		case r.Name == "local":
			errs.Addf(p+".name", `"local" is the embedded store`)
		default:
			if j, dup := seen[r.Name]; dup {
				errs.Addf(p+".name", "duplicate name %q (also remote[%d])", r.Name, j)
			}
			seen[r.Name] = i
		}
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Addf(p+".url", "want an absolute http(s) URL, got %q", redact(r.URL))
		} else if u.User != nil {
			errs.Addf(p+".url", "put credentials in basic_auth, not in the URL")
		}
		if r.Timeout < 0 {
			errs.Addf(p+".timeout", "must not be negative")
		}
		cc := r.clientConfig()
		errs.Merge(p, cc.Validate())
	}
	return errs.Err()
}

// Resolve reads *_file secrets and makes file paths absolute against
// baseDir.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	for i := range c.Remote {
		r := &c.Remote[i]
		cc := r.clientConfig()
		errs.Merge(fmt.Sprintf("remote[%d]", i), cc.Resolve(baseDir))
		r.TLSConfig = cc.TLSConfig
		if r.Timeout == 0 {
			r.Timeout = DefaultRemoteTimeout
		}
	}
	return errs.Err()
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
