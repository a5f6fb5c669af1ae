package httpconf

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		want []string
	}{
		{"empty", ClientConfig{}, nil},
		{"basic auth", ClientConfig{BasicAuth: &BasicAuth{Username: "u", PasswordFile: "pw"}}, nil},
		{"bearer", ClientConfig{Authorization: &Authorization{Credentials: "t"}, TLSConfig: TLSConfig{CertFile: "c", KeyFile: "k"}}, nil},
		{"basic auth problems", ClientConfig{BasicAuth: &BasicAuth{Password: "hunter2", PasswordFile: "pw"}}, []string{
			"basic_auth.username: must not be empty",
			"basic_auth.password: password and password_file are mutually exclusive",
		}},
		{"authorization problems", ClientConfig{BasicAuth: &BasicAuth{Username: "u"}, Authorization: &Authorization{Type: "BASIC", Credentials: "hunter2", CredentialsFile: "f"}}, []string{
			"authorization: basic_auth and authorization are mutually exclusive",
			"authorization.type: use basic_auth for Basic authorization",
			"authorization.credentials: credentials and credentials_file are mutually exclusive",
		}},
		{"key without cert", ClientConfig{TLSConfig: TLSConfig{KeyFile: "k"}}, []string{"tls_config.cert_file: cert_file and key_file must be set together"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret\n"), 0o600))
	tests := []struct {
		name    string
		cfg     ClientConfig
		check   func(t *testing.T, c ClientConfig)
		wantErr string
	}{
		{"password file", ClientConfig{BasicAuth: &BasicAuth{Username: "u", PasswordFile: "pw"}}, func(t *testing.T, c ClientConfig) {
			require.Equal(t, BasicAuth{Username: "u", Password: "s3cret"}, *c.BasicAuth)
		}, ""},
		{"credentials file", ClientConfig{Authorization: &Authorization{CredentialsFile: filepath.Join(dir, "pw")}}, func(t *testing.T, c ClientConfig) {
			require.Equal(t, Authorization{Credentials: "s3cret"}, *c.Authorization)
		}, ""},
		{"tls paths", ClientConfig{TLSConfig: TLSConfig{CAFile: "ca.pem", CertFile: "/abs/c.pem", KeyFile: "k.pem"}}, func(t *testing.T, c ClientConfig) {
			require.Equal(t, TLSConfig{CAFile: filepath.Join(dir, "ca.pem"), CertFile: "/abs/c.pem", KeyFile: filepath.Join(dir, "k.pem")}, c.TLSConfig)
		}, ""},
		{"missing password file", ClientConfig{BasicAuth: &BasicAuth{Username: "u", PasswordFile: "missing"}}, nil, "basic_auth.password_file: read secret file"},
		{"missing credentials file", ClientConfig{Authorization: &Authorization{CredentialsFile: "missing"}}, nil, "authorization.credentials_file: read secret file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Resolve(dir)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			tc.check(t, tc.cfg)
		})
	}
}

func TestNewClient(t *testing.T) {
	var got http.Header
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
	}))
	t.Cleanup(target.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	}))
	t.Cleanup(other.Close)

	tests := []struct {
		name     string
		cfg      ClientConfig
		headers  map[string]string
		url      string
		wantCode int
		wantAuth string
		wantOrg  string
	}{
		{"no credentials", ClientConfig{}, nil, target.URL, 200, "", ""},
		{"basic auth", ClientConfig{BasicAuth: &BasicAuth{Username: "u", Password: "p"}}, nil, target.URL, 200, "Basic dTpw", ""},
		{"bearer by default", ClientConfig{Authorization: &Authorization{Credentials: "tok"}}, nil, target.URL, 200, "Bearer tok", ""},
		{"custom type and headers", ClientConfig{Authorization: &Authorization{Type: "Token", Credentials: "tok"}}, map[string]string{"X-Scope-OrgID": "team", "Authorization": "overridden"}, target.URL, 200, "Token tok", "team"},
		{"redirect to another host followed without credentials", ClientConfig{}, nil, other.URL, 200, "", ""},
		{"redirect to another host not followed with credentials", ClientConfig{Authorization: &Authorization{Credentials: "tok"}}, nil, other.URL, http.StatusFound, "", ""},
		{"redirect to another host not followed with headers", ClientConfig{}, map[string]string{"X-Scope-OrgID": "team"}, other.URL, http.StatusFound, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			c, err := NewClient(tc.cfg, &http.Transport{}, tc.headers)
			require.NoError(t, err)
			t.Cleanup(c.CloseIdleConnections)
			resp, err := c.Get(tc.url)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, tc.wantCode, resp.StatusCode)
			if tc.wantCode != 200 {
				require.Nil(t, got, "the target must not be reached")
				return
			}
			require.Equal(t, tc.wantAuth, got.Get("Authorization"))
			require.Equal(t, tc.wantOrg, got.Get("X-Scope-OrgID"))
		})
	}
}

func TestNewTLS(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	tests := []struct {
		name    string
		cfg     TLSConfig
		wantErr string
	}{
		{"defaults", TLSConfig{ServerName: "example.org"}, ""},
		{"missing ca_file", TLSConfig{CAFile: filepath.Join(dir, "missing.pem")}, "read ca_file"},
		{"ca_file without PEM", TLSConfig{CAFile: notPEM}, "holds no PEM certificate"},
		{"bad client certificate", TLSConfig{CertFile: notPEM, KeyFile: notPEM}, "load client certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewTLS(tc.cfg)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.cfg.ServerName, c.ServerName)
			require.Equal(t, uint16(0x0303), c.MinVersion)
		})
	}
}
