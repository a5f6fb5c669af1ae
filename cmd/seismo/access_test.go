package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/testpki"
	"github.com/seismo-agent/seismo/web"
)

// TestReloadSwapsAccess serves TLS with a basic-auth user, changes the
// user's password in the web config file and reloads over HTTP: the new
// password works at once (although it was cached as wrong before the
// reload) and the old one stops (although it was cached as right). A broken web config file
// then fails the reload, which names the file, and the running settings
// keep serving.
func TestReloadSwapsAccess(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	webFile := filepath.Join(dir, "web.yml")
	writeWeb := func(users string) {
		t.Helper()
		content := "tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\nbasic_auth_users:\n" + users
		require.NoError(t, os.WriteFile(webFile, []byte(content), 0o600))
	}
	user := func(name, password string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		require.NoError(t, err)
		return fmt.Sprintf("  %s: %s\n", name, h)
	}
	writeWeb(user("alice", "one"))
	cfgPath := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`data_dir: state
http:
  listen_address: 127.0.0.1:0
  web_config_file: web.yml
  enable_lifecycle: true
collectors:
  host: {enabled: false}
  cgroup: {enabled: false}
rules:
  builtin: {enabled: false}
`), 0o600))
	load := func() (*config.Config, error) { return config.Load(config.LoadOptions{File: cfgPath}) }
	cfg, err := load()
	require.NoError(t, err)
	a, err := newAgent(cfg, agentOptions{logger: slog.New(slog.DiscardHandler), load: load})
	require.NoError(t, err)
	require.NoError(t, wire(a, cfg, new(slog.LevelVar)))
	startAgent(t, a)
	base := "https://" + a.web.Addr().String()
	tr := &http.Transport{TLSClientConfig: pki.ClientTLS(t, false)}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	call := func(method, path, user, password string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, _ := call("GET", "/-/healthy", "", "")
	require.Equal(t, 200, code, "health is exempt by default")
	code, _ = call("GET", "/api/v1/rules", "alice", "one")
	require.Equal(t, 200, code)
	// Checked outcomes are cached (right and wrong); a reload must not
	// serve them for the new users.
	code, _ = call("GET", "/api/v1/rules", "alice", "two")
	require.Equal(t, 401, code, "not yet alice's password")

	writeWeb(user("alice", "two") + user("bob", "three"))
	code, body := call("POST", "/-/reload", "alice", "one")
	require.Equal(t, 200, code, body)
	for _, tc := range []struct {
		user, password string
		code           int
	}{{"alice", "one", 401}, {"alice", "two", 200}, {"bob", "three", 200}} {
		code, _ = call("GET", "/api/v1/rules", tc.user, tc.password)
		require.Equal(t, tc.code, code, "%s:%s", tc.user, tc.password)
	}

	require.NoError(t, os.WriteFile(webFile, []byte("basic_auth_users:\n  alice: not-a-hash\n"), 0o600))
	code, body = call("POST", "/-/reload", "alice", "two")
	require.Equal(t, 500, code)
	require.Contains(t, body, "http.web_config_file: web config "+webFile+": basic_auth_users.alice: not a bcrypt hash")
	require.NotContains(t, body, "not-a-hash")
	code, _ = call("GET", "/api/v1/rules", "alice", "two")
	require.Equal(t, 200, code, "the previous users and TLS keep serving")
}

func TestWarnCleartext(t *testing.T) {
	dir := t.TempDir()
	testpki.New(t, dir)
	tlsFile := filepath.Join(dir, "tls.yml")
	require.NoError(t, os.WriteFile(tlsFile, []byte("tls_server_config:\n  cert_file: server.pem\n  key_file: server-key.pem\n"), 0o600))
	for _, tc := range []struct {
		name, listen string
		access       web.AccessConfig
		warn         bool
	}{
		{"token on all interfaces without TLS", "0.0.0.0:9797", web.AccessConfig{BearerToken: "t"}, true},
		{"token on a LAN address without TLS", "192.0.2.1:9797", web.AccessConfig{BearerToken: "t"}, true},
		{"token on loopback", "127.0.0.1:9797", web.AccessConfig{BearerToken: "t"}, false},
		{"token on localhost", "localhost:9797", web.AccessConfig{BearerToken: "t"}, false},
		{"token with TLS", "0.0.0.0:9797", web.AccessConfig{BearerToken: "t", WebConfigFile: tlsFile}, false},
		{"no authentication", "0.0.0.0:9797", web.AccessConfig{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			a, err := web.NewAccess(tc.access)
			require.NoError(t, err)
			warnCleartext(slog.New(slog.NewTextHandler(&buf, nil)), tc.listen, a)
			require.Equal(t, tc.warn, strings.Contains(buf.String(), "clear text"), buf.String())
		})
	}
}
