package datasource

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
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

	BasicAuth     *BasicAuth     `koanf:"basic_auth" yaml:"basic_auth"`
	Authorization *Authorization `koanf:"authorization" yaml:"authorization"`
	TLSConfig     TLSConfig      `koanf:"tls_config" yaml:"tls_config"`
	// Headers are sent with every request (e.g. X-Scope-OrgID for Mimir).
	Headers map[string]string `koanf:"headers" yaml:"headers"`
}

// BasicAuth is HTTP basic authentication.
type BasicAuth struct {
	Username     string            `koanf:"username" yaml:"username"`
	Password     configutil.Secret `koanf:"password" yaml:"password"`
	PasswordFile string            `koanf:"password_file" yaml:"password_file"`
}

// Authorization sends "Authorization: <type> <credentials>" (type defaults
// to Bearer).
type Authorization struct {
	Type            string            `koanf:"type" yaml:"type"`
	Credentials     configutil.Secret `koanf:"credentials" yaml:"credentials"`
	CredentialsFile string            `koanf:"credentials_file" yaml:"credentials_file"`
}

// TLSConfig configures TLS to the remote API.
type TLSConfig struct {
	CAFile             string `koanf:"ca_file" yaml:"ca_file"`
	CertFile           string `koanf:"cert_file" yaml:"cert_file"`
	KeyFile            string `koanf:"key_file" yaml:"key_file"`
	ServerName         string `koanf:"server_name" yaml:"server_name"`
	InsecureSkipVerify bool   `koanf:"insecure_skip_verify" yaml:"insecure_skip_verify"`
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
		if r.BasicAuth != nil && r.Authorization != nil {
			errs.Addf(p+".authorization", "basic_auth and authorization are mutually exclusive")
		}
		if r.BasicAuth != nil && r.BasicAuth.Username == "" {
			errs.Addf(p+".basic_auth.username", "must not be empty")
		}
		if r.Authorization != nil && strings.EqualFold(r.Authorization.Type, "basic") {
			errs.Addf(p+".authorization.type", "use basic_auth for Basic authorization")
		}
		if (r.TLSConfig.CertFile == "") != (r.TLSConfig.KeyFile == "") {
			errs.Addf(p+".tls_config.cert_file", "cert_file and key_file must be set together")
		}
	}
	return errs.Err()
}

// Resolve reads *_file secrets and makes file paths absolute against
// baseDir.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	for i := range c.Remote {
		r := &c.Remote[i]
		p := fmt.Sprintf("remote[%d]", i)
		if b := r.BasicAuth; b != nil && b.PasswordFile != "" {
			s, err := configutil.ResolveSecret(b.Password, b.PasswordFile, baseDir)
			if err != nil {
				errs.Addf(p+".basic_auth.password_file", "%v", err)
			}
			b.Password, b.PasswordFile = s, ""
		}
		if a := r.Authorization; a != nil && a.CredentialsFile != "" {
			s, err := configutil.ResolveSecret(a.Credentials, a.CredentialsFile, baseDir)
			if err != nil {
				errs.Addf(p+".authorization.credentials_file", "%v", err)
			}
			a.Credentials, a.CredentialsFile = s, ""
		}
		r.TLSConfig.CAFile = configutil.ResolvePath(baseDir, r.TLSConfig.CAFile)
		r.TLSConfig.CertFile = configutil.ResolvePath(baseDir, r.TLSConfig.CertFile)
		r.TLSConfig.KeyFile = configutil.ResolvePath(baseDir, r.TLSConfig.KeyFile)
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
