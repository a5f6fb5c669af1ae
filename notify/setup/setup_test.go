package setup_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/alertmanager"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/file"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
	"github.com/seismo-agent/seismo/notify/setup"
	"github.com/seismo-agent/seismo/notify/slack"
	"github.com/seismo-agent/seismo/notify/webhook"
)

func TestDefaultIsValid(t *testing.T) {
	c := setup.DefaultConfig()
	require.NoError(t, c.Resolve(t.TempDir()))
	require.NoError(t, c.Validate())
	var out bytes.Buffer
	built, err := setup.Build(&c, setup.Deps{Stdout: &out})
	require.NoError(t, err)
	require.Len(t, built.Receivers["stdout"], 1)
	_, err = built.Receivers["stdout"][0].Notifier.Notify(context.Background(), notifytest.Firing())
	require.NoError(t, err)
	require.Contains(t, out.String(), `"LatencyUpCPUFlat"`)
}

func TestValidateReportsEveryProblemWithPaths(t *testing.T) {
	c := setup.DefaultConfig()
	c.Route.Receiver = "missing"
	c.Receivers = append(c.Receivers,
		setup.Receiver{Name: "stdout"},
		setup.Receiver{Name: "team",
			SlackConfigs:        []slack.Config{{APIURL: "not a url/SECRET"}},
			WebhookConfigs:      []webhook.Config{{}},
			AlertmanagerConfigs: []alertmanager.Config{{URLs: []configutil.Secret{"ftp://x/SECRET"}}},
			FileConfigs:         []file.Config{{}},
		})
	c.Drafts.Receivers = []string{"nobody"}
	c.Drafts.TimeZone = "Mars/Olympus"
	c.QueueCapacity = 0
	require.NoError(t, c.Resolve(t.TempDir()))
	err := c.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`receivers[1].name: duplicate receiver "stdout"`,
		`receivers[2].slack_configs[0].api_url: want an absolute http(s) URL`,
		`receivers[2].webhook_configs[0].url: required`,
		`receivers[2].alertmanager_configs[0].urls[0]: want an absolute http(s) URL`,
		`receivers[2].file_configs[0].path: required`,
		`route.receiver: undefined receiver "missing"`,
		`drafts.time_zone: unknown time zone "Mars/Olympus"`,
		`drafts.receivers[0]: undefined receiver "nobody"`,
		`queue_capacity: must be positive`,
	} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "SECRET")
}

func TestResolveSecretsAndTemplates(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook"), []byte("https://hooks.example/services/SECRET\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmpl"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmpl", "a.tmpl"), []byte(`{{ define "draft.title" }}Custom {{ .Component }}{{ end }}`), 0o600))
	c := setup.DefaultConfig()
	c.Templates = []string{"tmpl/*.tmpl"}
	c.Receivers = append(c.Receivers, setup.Receiver{Name: "team", SlackConfigs: []slack.Config{{APIURLFile: "hook"}}})
	c.Drafts.Receivers = []string{"team"}
	require.NoError(t, c.Resolve(dir))
	require.NoError(t, c.Validate())
	require.Equal(t, configutil.Secret("https://hooks.example/services/SECRET"), c.Receivers[1].SlackConfigs[0].APIURL)
	require.Equal(t, 10*time.Second, c.Receivers[1].SlackConfigs[0].Timeout, "defaults filled")
	built, err := setup.Build(&c, setup.Deps{})
	require.NoError(t, err)
	inc := draft.NewIncident("k", nil)
	a := notifytest.Firing()
	inc.Observe([]*model.Alert{a}, notifytest.T0)
	d, err := built.Drafts.Render(inc, notifytest.T0)
	require.NoError(t, err)
	require.Equal(t, "Custom Storefront", d.Title)

	c.Templates = []string{filepath.Join(dir, "broken.tmpl")}
	require.NoError(t, os.WriteFile(c.Templates[0], []byte(`{{ define "x" }}{{ end `), 0o600))
	err = c.Validate()
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "templates:"), err.Error())
}

func TestAlertmanagerTimings(t *testing.T) {
	am := setup.Receiver{Name: "am", AlertmanagerConfigs: []alertmanager.Config{{URLs: []configutil.Secret{"http://am:9093"}}}}
	tests := []struct {
		name  string
		route notify.RouteConfig
		want  string
	}{
		{"root defaults expire alerts", notify.RouteConfig{Receiver: "am"},
			`route.repeat_interval: receiver "am" sends to Alertmanager with ends_at_ahead 5m0s, but repeat_interval 4h0m0s plus group_interval 5m0s`},
		{"child recipe is fine", notify.RouteConfig{Receiver: "stdout", Routes: []notify.RouteConfig{
			{Receiver: "am", GroupBy: []string{"..."}, GroupInterval: 30 * time.Second, RepeatInterval: time.Minute}}}, ""},
		{"child inherits too long", notify.RouteConfig{Receiver: "stdout", Routes: []notify.RouteConfig{{Receiver: "am", GroupInterval: 30 * time.Second}}},
			`route.routes[0].repeat_interval: receiver "am"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := setup.DefaultConfig()
			def := notify.DefaultRoute()
			tt.route.GroupWait, tt.route.GroupInterval, tt.route.RepeatInterval, tt.route.GroupBy =
				def.GroupWait, cmp.Or(tt.route.GroupInterval, def.GroupInterval), cmp.Or(tt.route.RepeatInterval, def.RepeatInterval), def.GroupBy
			c.Route = tt.route
			c.Receivers = append(c.Receivers, am)
			require.NoError(t, c.Resolve(t.TempDir()))
			err := c.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
