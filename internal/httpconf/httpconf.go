// Package httpconf owns the HTTP client settings shared by every outgoing
// connection seismo configures (scrape and probe jobs, remote data sources):
// basic auth, the Authorization header, TLS, their validation and *_file
// resolution, and the client built from them. Leaf: it imports only
// configutil.
package httpconf

import (
	"strings"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// BasicAuth is HTTP basic authentication.
type BasicAuth struct {
	Username     string            `koanf:"username" yaml:"username"`
	Password     configutil.Secret `koanf:"password" yaml:"password"`
	PasswordFile string            `koanf:"password_file" yaml:"password_file"`
}

// Authorization sends "Authorization: <type> <credentials>".
type Authorization struct {
	Type            string            `koanf:"type" yaml:"type"` // default Bearer
	Credentials     configutil.Secret `koanf:"credentials" yaml:"credentials"`
	CredentialsFile string            `koanf:"credentials_file" yaml:"credentials_file"`
}

// TLSConfig configures TLS to a server.
type TLSConfig struct {
	CAFile             string `koanf:"ca_file" yaml:"ca_file"`
	CertFile           string `koanf:"cert_file" yaml:"cert_file"`
	KeyFile            string `koanf:"key_file" yaml:"key_file"`
	ServerName         string `koanf:"server_name" yaml:"server_name"`
	InsecureSkipVerify bool   `koanf:"insecure_skip_verify" yaml:"insecure_skip_verify"`
}

// ClientConfig is how a client authenticates and sets up TLS. Sections
// that hold these fields inline (scrape jobs, remote sources) build one to
// validate, resolve and construct a client.
type ClientConfig struct {
	BasicAuth     *BasicAuth     `koanf:"basic_auth" yaml:"basic_auth"`
	Authorization *Authorization `koanf:"authorization" yaml:"authorization"`
	TLSConfig     TLSConfig      `koanf:"tls_config" yaml:"tls_config"`
}

// Validate reports every problem with field paths relative to the section
// that holds the fields (basic_auth.username, tls_config.cert_file, ...).
func (c *ClientConfig) Validate() error {
	var errs configutil.Errors
	if b := c.BasicAuth; b != nil {
		if b.Username == "" {
			errs.Addf("basic_auth.username", "must not be empty")
		}
		if b.Password != "" && b.PasswordFile != "" {
			errs.Addf("basic_auth.password", "password and password_file are mutually exclusive")
		}
	}
	if a := c.Authorization; a != nil {
		if c.BasicAuth != nil {
			errs.Addf("authorization", "basic_auth and authorization are mutually exclusive")
		}
		if strings.EqualFold(a.Type, "basic") {
			errs.Addf("authorization.type", "use basic_auth for Basic authorization")
		}
		if a.Credentials != "" && a.CredentialsFile != "" {
			errs.Addf("authorization.credentials", "credentials and credentials_file are mutually exclusive")
		}
	}
	if (c.TLSConfig.CertFile == "") != (c.TLSConfig.KeyFile == "") {
		errs.Addf("tls_config.cert_file", "cert_file and key_file must be set together")
	}
	return errs.Err()
}

// Resolve reads the *_file secrets (clearing the file fields) and makes the
// TLS file paths absolute against baseDir. Errors name the field.
func (c *ClientConfig) Resolve(baseDir string) error {
	var errs configutil.Errors
	if b := c.BasicAuth; b != nil && b.PasswordFile != "" {
		s, err := configutil.ResolveSecret(b.Password, b.PasswordFile, baseDir)
		if err != nil {
			errs.Addf("basic_auth.password_file", "%v", err)
		}
		b.Password, b.PasswordFile = s, ""
	}
	if a := c.Authorization; a != nil && a.CredentialsFile != "" {
		s, err := configutil.ResolveSecret(a.Credentials, a.CredentialsFile, baseDir)
		if err != nil {
			errs.Addf("authorization.credentials_file", "%v", err)
		}
		a.Credentials, a.CredentialsFile = s, ""
	}
	t := &c.TLSConfig
	t.CAFile = configutil.ResolvePath(baseDir, t.CAFile)
	t.CertFile = configutil.ResolvePath(baseDir, t.CertFile)
	t.KeyFile = configutil.ResolvePath(baseDir, t.KeyFile)
	return errs.Err()
}
