package setup_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/internal/testpki"
	"github.com/seismo-agent/seismo/notify/alertmanager"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
	"github.com/seismo-agent/seismo/notify/setup"
	"github.com/seismo-agent/seismo/notify/slack"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// TestReceiverTLS delivers through each integration to an HTTPS server
// that demands a client certificate from the test CA: with the receiver's
// tls_config the notification arrives; without it the handshake fails.
func TestReceiverTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.New(t, dir)
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	got := make(chan string, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.URL.Path + " from " + r.TLS.PeerCertificates[0].Subject.CommonName
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.Pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	good := httpconf.TLSConfig{CAFile: "ca.pem", CertFile: "client.pem", KeyFile: "client-key.pem"}
	for _, tc := range []struct {
		name string
		tls  httpconf.TLSConfig
		ok   bool
	}{
		{"with client certificate", good, true},
		{"without client certificate", httpconf.TLSConfig{CAFile: "ca.pem"}, false},
		{"without the CA", httpconf.TLSConfig{ServerName: "localhost", CertFile: "client.pem", KeyFile: "client-key.pem"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setup.DefaultConfig()
			c.Route.Receiver = "tls"
			c.Route.RepeatInterval, c.Route.GroupInterval = time.Minute, time.Minute // re-sent within ends_at_ahead
			c.Receivers = []setup.Receiver{{
				Name:                "tls",
				SlackConfigs:        []slack.Config{{APIURL: configutil.Secret(srv.URL + "/slack"), TLSConfig: tc.tls}},
				WebhookConfigs:      []webhook.Config{{URL: configutil.Secret(srv.URL + "/hook"), TLSConfig: tc.tls}},
				AlertmanagerConfigs: []alertmanager.Config{{URLs: []configutil.Secret{configutil.Secret(srv.URL)}, TLSConfig: tc.tls}},
			}}
			require.NoError(t, c.Resolve(dir))
			if tc.tls.CAFile != "" {
				require.Equal(t, filepath.Join(dir, "ca.pem"), c.Receivers[0].WebhookConfigs[0].TLSConfig.CAFile, "relative to the config file")
			}
			require.NoError(t, c.Validate())
			built, err := setup.Build(&c, setup.Deps{})
			require.NoError(t, err)
			for _, in := range built.Receivers["tls"] {
				_, err := in.Notifier.Notify(context.Background(), notifytest.Firing())
				if !tc.ok {
					require.Error(t, err, in.Type)
					continue
				}
				require.NoError(t, err, in.Type)
				require.Contains(t, <-got, " from "+testpki.ClientName)
			}
		})
	}
}

func TestReceiverTLSErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	c := setup.DefaultConfig()
	c.Receivers = append(c.Receivers, setup.Receiver{
		Name:                "bad",
		WebhookConfigs:      []webhook.Config{{URL: "https://127.0.0.1/hook", TLSConfig: httpconf.TLSConfig{CAFile: "missing.pem"}}},
		AlertmanagerConfigs: []alertmanager.Config{{URLs: []configutil.Secret{"https://127.0.0.1"}, TLSConfig: httpconf.TLSConfig{KeyFile: "k.pem"}}},
		SlackConfigs:        []slack.Config{{APIURL: "http://hooks.slack.example/services/SECRET"}},
	})
	require.NoError(t, c.Resolve(dir))
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"receivers[1].webhook_configs[0].tls_config: read ca_file: open " + filepath.Join(dir, "missing.pem"),
		"receivers[1].alertmanager_configs[0].tls_config.cert_file: cert_file and key_file must be set together",
		"receivers[1].slack_configs[0].api_url: must use https",
	} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), "SECRET")
	_, err = setup.Build(&c, setup.Deps{})
	require.ErrorContains(t, err, "receivers[1].webhook_configs[0].tls_config: read ca_file")
}
