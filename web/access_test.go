package web

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/seismo-agent/seismo/internal/testpki"
)

// hash is a real bcrypt hash of password (minimum cost, to keep -race
// runs quick).
func hash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func access(t *testing.T, cfg AccessConfig) *Access {
	t.Helper()
	a, err := NewAccess(cfg)
	require.NoError(t, err)
	return a
}

// client returns an HTTP client with tlsCfg that does not reuse
// connections, so each request sees the access in force.
func client(t *testing.T, tlsCfg *tls.Config) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

type req struct {
	method, path   string
	user, password string // basic auth when user is set
	authorization  string
}

func (r req) do(t *testing.T, c *http.Client, base string) (*http.Response, string, error) {
	t.Helper()
	hr, err := http.NewRequest(cmpOr(r.method, "GET"), base+r.path, nil)
	require.NoError(t, err)
	if r.user != "" {
		hr.SetBasicAuth(r.user, r.password)
	}
	if r.authorization != "" {
		hr.Header.Set("Authorization", r.authorization)
	}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestWebConfigFile(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	good := hash(t, "s3cret")
	tests := []struct {
		name    string
		content string
		want    []string // error substrings; none: valid
	}{
		{"empty file", "", nil},
		{"users only", fmt.Sprintf("basic_auth_users:\n  alice: %s\n", good), nil},
		{"full TLS", fmt.Sprintf(`tls_server_config:
  cert_file: %s
  key_file: server-key.pem
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
  min_version: TLS12
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: true
  client_allowed_sans: [%s]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
`, pki.ServerCert, testpki.ClientName), nil},
		{"unknown key", "basic_auth_user: {}\n", []string{"field basic_auth_user not found"}},
		{"bad hash", "basic_auth_users:\n  alice: plaintext-password\n", []string{"basic_auth_users.alice: not a bcrypt hash"}},
		{"rate limit refused", "rate_limit: {burst: 1, interval: 1s}\n", []string{"rate_limit: not supported"}},
		{"header not allowed", "http_server_config:\n  headers:\n    Server: x\n", []string{`http_server_config.headers: header "Server" cannot be set`}},
		{"header value not allowed", "http_server_config:\n  headers:\n    X-Frame-Options: allow\n", []string{"http_server_config.headers.X-Frame-Options: want one of"}},
		{"tls problems all at once", `tls_server_config:
  cert_file: missing.pem
  key_file: server-key.pem
  min_version: TLS14
  max_version: TLS10
  cipher_suites: [TLS_NOPE]
  curve_preferences: [P999]
  client_auth_type: Sometimes
`, []string{
			"tls_server_config.cert_file: open " + filepath.Join(dir, "missing.pem"),
			`tls_server_config.min_version: want TLS10, TLS11, TLS12 or TLS13, got "TLS14"`,
			`tls_server_config.cipher_suites[0]: unknown cipher suite "TLS_NOPE"`,
			`tls_server_config.curve_preferences[0]: want one of`,
			`tls_server_config.client_auth_type: want NoClientCert`,
		}},
		{"versions reversed", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n  min_version: TLS13\n  max_version: TLS12\n", pki.ServerCert, pki.ServerKey),
			[]string{"tls_server_config.max_version: TLS12 is below min_version TLS13"}},
		{"key does not match cert", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", pki.ServerCert, pki.ClientKey),
			[]string{"tls_server_config.cert_file: certificate and key do not load as a pair"}},
		{"missing key", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n", pki.ServerCert), []string{"tls_server_config.key_file: missing one of key or key_file"}},
		{"client CA without client auth", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n  client_ca_file: %s\n", pki.ServerCert, pki.ServerKey, pki.CAFile),
			[]string{"tls_server_config.client_auth_type: client CAs are set but client_auth_type is NoClientCert"}},
		{"verify without client CA", fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n  client_auth_type: RequireAndVerifyClientCert\n", pki.ServerCert, pki.ServerKey),
			[]string{"tls_server_config.client_ca_file: required with client_auth_type RequireAndVerifyClientCert"}},
		{"not YAML", "basic_auth_users: [\n", []string{"web config " + filepath.Join(dir, "web.yml") + ": yaml:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, "web.yml", tc.content)
			a, err := NewAccess(AccessConfig{WebConfigFile: p})
			if tc.want == nil {
				require.NoError(t, err)
				require.NotNil(t, a)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "plaintext-password", "a hash or password is never echoed")
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := NewAccess(AccessConfig{WebConfigFile: filepath.Join(dir, "nope.yml")})
		require.ErrorContains(t, err, "read web config: open "+filepath.Join(dir, "nope.yml"))
	})
}

// TestTLSAndBasicAuth serves TLS with a basic-auth user and checks every
// way in with a real TLS client.
func TestTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	webFile := writeFile(t, dir, "web.yml", fmt.Sprintf(`tls_server_config:
  cert_file: server.pem
  key_file: server-key.pem
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
basic_auth_users:
  alice: %s
`, hash(t, "s3cret")))
	set := metrics.NewSet()
	s, _ := start(t, Options{Set: set, Access: access(t, AccessConfig{WebConfigFile: webFile, AuthExemptHealth: true})})
	s.SetReady(true)
	s.Handle("GET /api/v1/x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "x")
	}))
	require.True(t, s.TLS())
	base := "https://" + s.Addr().String()
	c := client(t, pki.ClientTLS(t, false))

	tests := []struct {
		name string
		req  req
		code int
	}{
		{"health is exempt", req{path: "/-/healthy"}, 200},
		{"readiness is exempt", req{path: "/-/ready"}, 200},
		{"metrics need auth", req{path: "/metrics"}, 401},
		{"api needs auth", req{path: "/api/v1/x"}, 401},
		{"right password", req{path: "/api/v1/x", user: "alice", password: "s3cret"}, 200},
		{"right password again (cached)", req{path: "/metrics", user: "alice", password: "s3cret"}, 200},
		{"wrong password", req{path: "/api/v1/x", user: "alice", password: "s3cre"}, 401},
		{"unknown user", req{path: "/api/v1/x", user: "bob", password: "s3cret"}, 401},
		{"bearer is not configured", req{path: "/api/v1/x", authorization: "Bearer s3cret"}, 401},
		{"unknown path needs auth too", req{path: "/nope"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, err := tc.req.do(t, c, base)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode)
			require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			if tc.code == 401 {
				require.Equal(t, `Basic realm="seismo"`, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	require.Equal(t, uint64(6), set.GetOrCreateCounter("seismo_http_requests_unauthorized_total").Get())

	t.Run("plain HTTP is refused", func(t *testing.T) {
		resp, _, err := req{path: "/-/healthy"}.do(t, client(t, nil), "http://"+s.Addr().String())
		if err == nil {
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "Go answers a plain request on a TLS port with 400")
		}
	})
	t.Run("a client that does not trust the CA fails", func(t *testing.T) {
		_, _, err := req{path: "/-/healthy"}.do(t, client(t, &tls.Config{MinVersion: tls.VersionTLS12}), base)
		require.ErrorContains(t, err, "certificate")
	})
	t.Run("HTTP/2 is offered", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: pki.ClientTLS(t, false), ForceAttemptHTTP2: true}
		t.Cleanup(tr.CloseIdleConnections)
		resp, _, err := req{path: "/-/healthy"}.do(t, &http.Client{Transport: tr}, base)
		require.NoError(t, err)
		require.Equal(t, 2, resp.ProtoMajor)
	})
}

func TestBcryptOutcomesAreCached(t *testing.T) {
	dir := t.TempDir()
	webFile := writeFile(t, dir, "web.yml", fmt.Sprintf("basic_auth_users:\n  alice: %s\n", hash(t, "s3cret")))
	a := access(t, AccessConfig{WebConfigFile: webFile})
	sem := make(chan struct{}, 1)
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", "s3cret")
	for range 3 {
		require.True(t, a.authenticate(context.Background(), r, sem))
	}
	r.SetBasicAuth("alice", "wrong")
	require.False(t, a.authenticate(context.Background(), r, sem))
	require.Len(t, a.right, 1)
	require.Len(t, a.wrong, 1)

	// A flood of wrong passwords empties only the wrong cache.
	for i := range maxCachedWrong + 1 {
		a.wrong[[32]byte{byte(i), byte(i >> 8), 1}] = struct{}{}
	}
	r.SetBasicAuth("alice", "wrong again")
	require.False(t, a.authenticate(context.Background(), r, sem))
	require.Len(t, a.wrong, 1, "emptied when full, then the new wrong password")
	require.Len(t, a.right, 1, "alice's login stays cached")

	// A check waiting for the bcrypt slot gives up with its request.
	sem <- struct{}{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.SetBasicAuth("alice", "another")
	require.False(t, a.authenticate(ctx, r, sem))
}

func TestBearerToken(t *testing.T) {
	s, base := start(t, Options{Access: access(t, AccessConfig{BearerToken: "t0ken", AuthExemptHealth: false})})
	s.SetReady(true)
	c := client(t, nil)
	tests := []struct {
		name string
		req  req
		code int
	}{
		{"health needs auth when not exempt", req{path: "/-/healthy"}, 401},
		{"right token", req{path: "/metrics", authorization: "Bearer t0ken"}, 200},
		{"scheme is case-insensitive", req{path: "/metrics", authorization: "bearer t0ken"}, 200},
		{"wrong token", req{path: "/metrics", authorization: "Bearer t0ke"}, 401},
		{"longer token", req{path: "/metrics", authorization: "Bearer t0ken0"}, 401},
		{"wrong scheme", req{path: "/metrics", authorization: "Token t0ken"}, 401},
		{"basic with the token as password", req{path: "/metrics", user: "x", password: "t0ken"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, err := tc.req.do(t, c, base)
			require.NoError(t, err)
			require.Equal(t, tc.code, resp.StatusCode)
			if tc.code == 401 {
				require.Equal(t, `Bearer realm="seismo"`, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	_, err := NewAccess(AccessConfig{BearerToken: "x", BearerType: "Basic"})
	require.ErrorContains(t, err, "must not be Basic")
}

// TestClientCertificates requires a client certificate signed by the CA
// with an allowed name.
func TestClientCertificates(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	tests := []struct {
		name     string
		authType string
		sans     string
		withCert bool
		ok       bool
	}{
		{"required and given", "RequireAndVerifyClientCert", "", true, true},
		{"required and missing", "RequireAndVerifyClientCert", "", false, false},
		{"optional and missing", "VerifyClientCertIfGiven", "", false, true},
		{"allowed SAN", "RequireAndVerifyClientCert", testpki.ClientName, true, true},
		{"SAN not allowed", "RequireAndVerifyClientCert", "someone.else", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := fmt.Sprintf("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: %s\n  client_ca_file: ca.pem\n", tc.authType)
			if tc.sans != "" {
				content += "  client_allowed_sans: [" + tc.sans + "]\n"
			}
			webFile := writeFile(t, dir, "web.yml", content)
			s, _ := start(t, Options{Access: access(t, AccessConfig{WebConfigFile: webFile})})
			resp, _, err := req{path: "/-/healthy"}.do(t, client(t, pki.ClientTLS(t, tc.withCert)), "https://"+s.Addr().String())
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, 200, resp.StatusCode)
				return
			}
			require.Error(t, err, "the handshake must fail")
		})
	}
	t.Run("certificate from another CA", func(t *testing.T) {
		webFile := writeFile(t, dir, "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: other-ca.pem\n")
		s, _ := start(t, Options{Access: access(t, AccessConfig{WebConfigFile: webFile})})
		_, _, err := req{path: "/-/healthy"}.do(t, client(t, pki.ClientTLS(t, true)), "https://"+s.Addr().String())
		require.Error(t, err)
	})
}

// TestSetAccessAppliesAtOnce swaps plain HTTP without users for TLS with a
// user, and back, on a running server.
func TestSetAccessAppliesAtOnce(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	s, _ := start(t, Options{})
	addr := s.Addr().String()
	plain, secure := client(t, nil), client(t, pki.ClientTLS(t, false))

	resp, _, err := req{path: "/metrics"}.do(t, plain, "http://"+addr)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	webFile := writeFile(t, dir, "web.yml", fmt.Sprintf("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\nbasic_auth_users:\n  alice: %s\n", hash(t, "one")))
	s.SetAccess(access(t, AccessConfig{WebConfigFile: webFile}))
	resp, _, err = req{path: "/metrics"}.do(t, secure, "https://"+addr)
	require.NoError(t, err)
	require.Equal(t, 401, resp.StatusCode)
	resp, _, err = req{path: "/metrics", user: "alice", password: "one"}.do(t, secure, "https://"+addr)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	// A new password: the old one stops working at once.
	webFile = writeFile(t, dir, "web.yml", fmt.Sprintf("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\nbasic_auth_users:\n  alice: %s\n", hash(t, "two")))
	s.SetAccess(access(t, AccessConfig{WebConfigFile: webFile}))
	resp, _, err = req{path: "/metrics", user: "alice", password: "one"}.do(t, secure, "https://"+addr)
	require.NoError(t, err)
	require.Equal(t, 401, resp.StatusCode)
	resp, _, err = req{path: "/metrics", user: "alice", password: "two"}.do(t, secure, "https://"+addr)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
}

func TestLifecycleAndAdminGates(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("enabled=%v", enabled), func(t *testing.T) {
			set := metrics.NewSet()
			s, base := start(t, Options{
				Set:    set,
				Reload: func(context.Context) error { return nil },
				Access: access(t, AccessConfig{EnableLifecycle: enabled, EnableAdminAPI: enabled}),
			})
			s.HandleAdmin("POST /api/v1/things", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "created")
			}))
			s.Handle("GET /api/v1/things", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "listed")
			}))
			require.Equal(t, []string{"POST /api/v1/things", "GET /api/v1/things"}, s.Patterns())

			code, body := get(t, "POST", base+"/-/reload")
			if enabled {
				require.Equal(t, 200, code)
			} else {
				require.Equal(t, 403, code)
				require.Contains(t, body, "set http.enable_lifecycle: true")
			}
			code, body = get(t, "POST", base+"/api/v1/things")
			if enabled {
				require.Equal(t, 200, code)
				require.Equal(t, "created", body)
			} else {
				require.Equal(t, 403, code)
				require.Contains(t, body, "set http.enable_admin_api: true")
				require.Equal(t, uint64(2), set.GetOrCreateCounter("seismo_http_requests_forbidden_total").Get())
			}
			code, _ = get(t, "GET", base+"/api/v1/things")
			require.Equal(t, 200, code, "reading is never gated")
		})
	}
}

func TestRequestBodyLimit(t *testing.T) {
	s, base := start(t, Options{Limits: Limits{MaxRequestBodyBytes: 10}})
	s.Handle("POST /api/v1/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		w.Write(b)
	}))
	for _, tc := range []struct {
		body string
		code int
	}{{"0123456789", 200}, {"0123456789a", 413}} {
		resp, err := http.Post(base+"/api/v1/echo", "text/plain", strings.NewReader(tc.body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.code, resp.StatusCode, "body of %d bytes", len(tc.body))
	}
}

func TestLimitsDefaults(t *testing.T) {
	s, err := New(Options{ListenAddress: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Set: metrics.NewSet(),
		Limits: Limits{ReadTimeout: 7}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	d := DefaultLimits()
	require.Equal(t, d.ReadHeaderTimeout, s.srv.ReadHeaderTimeout)
	require.EqualValues(t, 7, s.srv.ReadTimeout)
	require.Equal(t, d.WriteTimeout, s.srv.WriteTimeout)
	require.Equal(t, d.IdleTimeout, s.srv.IdleTimeout)
	require.Equal(t, d.MaxHeaderBytes, s.srv.MaxHeaderBytes)
}

// BenchmarkAuthenticate compares a login whose outcome is cached with one
// that runs bcrypt (cost 10, htpasswd's default), to show what the cache
// saves per request.
func BenchmarkAuthenticate(b *testing.B) {
	h, err := bcrypt.GenerateFromPassword([]byte("s3cret"), 10)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(p, []byte("basic_auth_users:\n  alice: "+string(h)+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := NewAccess(AccessConfig{WebConfigFile: p})
	if err != nil {
		b.Fatal(err)
	}
	sem := make(chan struct{}, 1)
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", "s3cret")
	b.Run("cached", func(b *testing.B) {
		a.authenticate(context.Background(), r, sem) // fill the cache
		b.ReportAllocs()
		for b.Loop() {
			if !a.authenticate(context.Background(), r, sem) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("bcrypt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(a.right)
			if !a.authenticate(context.Background(), r, sem) {
				b.Fatal("rejected")
			}
		}
	})
}

// TestHtpasswdHashes accepts the $2y$ prefix that htpasswd -B writes.
func TestHtpasswdHashes(t *testing.T) {
	h := strings.Replace(hash(t, "pw"), "$2a$", "$2y$", 1)
	require.True(t, strings.HasPrefix(h, "$2y$"))
	a := access(t, AccessConfig{WebConfigFile: writeFile(t, t.TempDir(), "web.yml", "basic_auth_users:\n  alice: "+h+"\n")})
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", "pw")
	require.True(t, a.authenticate(context.Background(), r, make(chan struct{}, 1)))
	r.SetBasicAuth("alice", "pW")
	require.False(t, a.authenticate(context.Background(), r, make(chan struct{}, 1)))
}
