package web

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// WebConfig is the web configuration file of Prometheus' exporter-toolkit
// (the file behind Prometheus' --web.config.file), read by seismo with the
// same keys and meanings: TLS for the listener, bcrypt-hashed basic-auth
// users and extra response headers. Keys seismo does not support are
// errors, never silently ignored.
type WebConfig struct {
	TLSServerConfig  *TLSServerConfig  `yaml:"tls_server_config"`
	HTTPServerConfig *HTTPServerConfig `yaml:"http_server_config"`
	// BasicAuthUsers maps user names to bcrypt hashes of their passwords.
	BasicAuthUsers map[string]string `yaml:"basic_auth_users"`
	// RateLimit is exporter-toolkit's request rate limiter; seismo refuses
	// it (see http.max_concurrent_requests) rather than ignore it.
	RateLimit any `yaml:"rate_limit"`
}

// TLSServerConfig is the tls_server_config block.
type TLSServerConfig struct {
	// Cert and Key are inline PEM; CertFile and KeyFile are paths relative
	// to the web config file. One of each pair is required.
	Cert     string `yaml:"cert"`
	Key      string `yaml:"key"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientAuthType is NoClientCert (default), RequestClientCert,
	// RequireAnyClientCert (alias RequireClientCert),
	// VerifyClientCertIfGiven or RequireAndVerifyClientCert.
	ClientAuthType string `yaml:"client_auth_type"`
	ClientCA       string `yaml:"client_ca"`
	ClientCAFile   string `yaml:"client_ca_file"`
	// ClientAllowedSANs, when set, admits only client certificates with one
	// of these DNS, IP, email or URI subject alternative names.
	ClientAllowedSANs []string `yaml:"client_allowed_sans"`
	// CipherSuites are Go's names (TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256);
	// they apply up to TLS 1.2, as TLS 1.3's are fixed.
	CipherSuites     []string `yaml:"cipher_suites"`
	CurvePreferences []string `yaml:"curve_preferences"`
	// MinVersion defaults to TLS12, MaxVersion to TLS13.
	MinVersion string `yaml:"min_version"`
	MaxVersion string `yaml:"max_version"`
	// PreferServerCipherSuites is accepted for compatibility and has no
	// effect (Go ignores it since 1.17).
	PreferServerCipherSuites *bool `yaml:"prefer_server_cipher_suites"`
}

// HTTPServerConfig is the http_server_config block.
type HTTPServerConfig struct {
	// HTTP2 enables HTTP/2 over TLS (default true).
	HTTP2 *bool `yaml:"http2"`
	// Headers are set on every response; only the security headers
	// exporter-toolkit allows, with the values it allows.
	Headers map[string]string `yaml:"headers"`
}

// allowedHeaders are the response headers a web config may set, with their
// allowed values (none listed: any value), as in exporter-toolkit.
var allowedHeaders = map[string][]string{
	"Strict-Transport-Security": nil,
	"X-Content-Type-Options":    {"nosniff"},
	"X-Frame-Options":           {"deny", "sameorigin"},
	"X-XSS-Protection":          nil,
	"Content-Security-Policy":   nil,
}

var tlsVersions = map[string]uint16{
	"TLS10": tls.VersionTLS10,
	"TLS11": tls.VersionTLS11,
	"TLS12": tls.VersionTLS12,
	"TLS13": tls.VersionTLS13,
}

var curves = map[string]tls.CurveID{
	"CurveP256":      tls.CurveP256,
	"CurveP384":      tls.CurveP384,
	"CurveP521":      tls.CurveP521,
	"X25519":         tls.X25519,
	"X25519MLKEM768": tls.X25519MLKEM768,
}

var clientAuthTypes = map[string]tls.ClientAuthType{
	"":                           tls.NoClientCert,
	"NoClientCert":               tls.NoClientCert,
	"RequestClientCert":          tls.RequestClientCert,
	"RequireAnyClientCert":       tls.RequireAnyClientCert,
	"RequireClientCert":          tls.RequireAnyClientCert, // exporter-toolkit's old name
	"VerifyClientCertIfGiven":    tls.VerifyClientCertIfGiven,
	"RequireAndVerifyClientCert": tls.RequireAndVerifyClientCert,
}

// webConfig is a web config file compiled for serving.
type webConfig struct {
	tls     *tls.Config // nil: plain HTTP
	users   map[string][]byte
	headers map[string]string
}

// loadWebConfig reads, validates and compiles the web config file at path:
// it reads the certificates and keys, checks every bcrypt hash and returns
// every problem at once, each prefixed with the file and the key path.
func loadWebConfig(path string) (*webConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read web config: %w", err)
	}
	var raw WebConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty file (io.EOF) configures nothing.
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("web config %s: %s: %s", path, key, fmt.Sprintf(format, args...)))
	}
	wc := &webConfig{users: map[string][]byte{}, headers: map[string]string{}}
	if raw.RateLimit != nil {
		add("rate_limit", "not supported by seismo; http.max_concurrent_requests bounds the API instead")
	}
	for user, hash := range raw.BasicAuthUsers {
		if user == "" || strings.Contains(user, ":") {
			add("basic_auth_users", "user name %q must be non-empty and hold no colon", user)
			continue
		}
		// The hash is checked, never printed: it is as good as a password
		// to an offline attacker.
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			add("basic_auth_users."+user, "not a bcrypt hash (make one with htpasswd -nBC 10 \"\" | tr -d ':\\n')")
			continue
		}
		wc.users[user] = []byte(hash)
	}
	http2 := true
	if h := raw.HTTPServerConfig; h != nil {
		if h.HTTP2 != nil {
			http2 = *h.HTTP2
		}
		for k, v := range h.Headers {
			allowed, ok := allowedHeaders[k]
			switch {
			case !ok:
				add("http_server_config.headers", "header %q cannot be set (allowed: %s)", k, strings.Join(slices.Sorted(mapKeys(allowedHeaders)), ", "))
			case allowed != nil && !slices.Contains(allowed, v):
				add("http_server_config.headers."+k, "want one of %q, got %q", allowed, v)
			default:
				wc.headers[k] = v
			}
		}
	}
	if t := raw.TLSServerConfig; t != nil {
		cfg, terrs := buildServerTLS(t, filepath.Dir(path), http2)
		for _, e := range terrs {
			errs = append(errs, fmt.Errorf("web config %s: tls_server_config.%w", path, e))
		}
		wc.tls = cfg
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return wc, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// buildServerTLS turns a tls_server_config into a tls.Config, reading the
// files it names (relative to dir). Errors start with the key name.
func buildServerTLS(t *TLSServerConfig, dir string, http2 bool) (*tls.Config, []error) {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	read := func(key, inline, file string) []byte {
		switch {
		case inline != "" && file != "":
			add(key, "set %s or %s_file, not both", strings.TrimSuffix(key, "_file"), strings.TrimSuffix(key, "_file"))
		case file != "":
			b, err := os.ReadFile(rel(file))
			if err != nil {
				add(key, "%v", err)
			}
			return b
		}
		return []byte(inline)
	}
	certPEM := read("cert_file", t.Cert, t.CertFile)
	keyPEM := read("key_file", string(t.Key), t.KeyFile)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	switch {
	case len(errs) > 0:
	case len(certPEM) == 0:
		add("cert_file", "missing one of cert or cert_file")
	case len(keyPEM) == 0:
		add("key_file", "missing one of key or key_file")
	default:
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// The key's contents never go into the message.
			add("cert_file", "certificate and key do not load as a pair: %s", redactPEMError(err))
		} else {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	if t.MinVersion != "" {
		v, ok := tlsVersions[t.MinVersion]
		if !ok {
			add("min_version", "want TLS10, TLS11, TLS12 or TLS13, got %q", t.MinVersion)
		}
		cfg.MinVersion = v
	}
	if t.MaxVersion != "" {
		v, ok := tlsVersions[t.MaxVersion]
		if !ok {
			add("max_version", "want TLS10, TLS11, TLS12 or TLS13, got %q", t.MaxVersion)
		}
		cfg.MaxVersion = v
	}
	if cfg.MinVersion != 0 && cfg.MaxVersion != 0 && cfg.MaxVersion < cfg.MinVersion {
		add("max_version", "%s is below min_version %s", t.MaxVersion, t.MinVersion)
	}
	known := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s.ID
	}
	for i, name := range t.CipherSuites {
		id, ok := known[name]
		if !ok {
			add(fmt.Sprintf("cipher_suites[%d]", i), "unknown cipher suite %q", name)
			continue
		}
		cfg.CipherSuites = append(cfg.CipherSuites, id)
	}
	for i, name := range t.CurvePreferences {
		id, ok := curves[name]
		if !ok {
			add(fmt.Sprintf("curve_preferences[%d]", i), "want one of %s, got %q", strings.Join(slices.Sorted(mapKeys(curves)), ", "), name)
			continue
		}
		cfg.CurvePreferences = append(cfg.CurvePreferences, id)
	}
	auth, ok := clientAuthTypes[t.ClientAuthType]
	if !ok {
		add("client_auth_type", "want NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert, got %q", t.ClientAuthType)
	}
	cfg.ClientAuth = auth
	caPEM := read("client_ca_file", t.ClientCA, t.ClientCAFile)
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			add("client_ca_file", "holds no PEM certificate")
		}
		cfg.ClientCAs = pool
		if auth == tls.NoClientCert {
			add("client_auth_type", "client CAs are set but client_auth_type is NoClientCert: set VerifyClientCertIfGiven or RequireAndVerifyClientCert")
		}
	} else if auth == tls.VerifyClientCertIfGiven || auth == tls.RequireAndVerifyClientCert {
		add("client_ca_file", "required with client_auth_type %s", t.ClientAuthType)
	}
	if len(t.ClientAllowedSANs) > 0 {
		allowed := slices.Clone(t.ClientAllowedSANs)
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifySANs(raw, allowed)
		}
	}
	if http2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	} else {
		cfg.NextProtos = []string{"http/1.1"}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// redactPEMError keeps crypto/tls's reason but never any key bytes (its
// errors do not quote them, but keep it that way if they change).
func redactPEMError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "-----BEGIN"); i >= 0 {
		s = s[:i]
	}
	return s
}

// verifySANs admits a client certificate whose subject alternative names
// include one of allowed.
func verifySANs(raw [][]byte, allowed []string) error {
	if len(raw) == 0 {
		return errors.New("no client certificate")
	}
	cert, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	var sans []string
	sans = append(sans, cert.DNSNames...)
	sans = append(sans, cert.EmailAddresses...)
	for _, ip := range cert.IPAddresses {
		sans = append(sans, ip.String())
	}
	for _, u := range cert.URIs {
		sans = append(sans, u.String())
	}
	for _, s := range sans {
		if slices.Contains(allowed, s) {
			return nil
		}
	}
	return errors.New("client certificate has no allowed subject alternative name")
}
