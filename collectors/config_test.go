package collectors

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		c := DefaultConfig()
		c.ScrapeConfigs = []ScrapeConfig{{JobName: "app", StaticConfigs: []StaticConfig{{Targets: []string{"localhost:8080"}}}}}
		c.ProbeConfigs = []ProbeConfig{{JobName: "health", Targets: []string{"http://localhost:8080/healthz"}}}
		return c
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{name: "defaults and one job", mutate: func(*Config) {}},
		{name: "interval and timeout", mutate: func(c *Config) {
			c.ScrapeConfigs[0].ScrapeInterval = 5 * time.Second
			c.ScrapeConfigs[0].ScrapeTimeout = 10 * time.Second
			c.Host.Interval = time.Millisecond
		}, want: []string{"scrape_configs[0].scrape_timeout: 10s is longer than scrape_interval 5s", "host.interval: must be at least 1s"}},
		{name: "duplicate and empty job names", mutate: func(c *Config) {
			c.ScrapeConfigs = append(c.ScrapeConfigs, c.ScrapeConfigs[0], ScrapeConfig{StaticConfigs: c.ScrapeConfigs[0].StaticConfigs})
			c.ProbeConfigs[0].JobName = "node"
		}, want: []string{`scrape_configs[1].job_name: duplicate job name "app"`, "scrape_configs[2].job_name: must not be empty", `probe_configs[0].job_name: duplicate job name "node" (also host.job_name)`}},
		{name: "targets, labels, scheme, path", mutate: func(c *Config) {
			sc := &c.ScrapeConfigs[0]
			sc.StaticConfigs[0].Targets = append(sc.StaticConfigs[0].Targets, "http://x:1/metrics")
			sc.StaticConfigs[0].Labels = map[string]string{"\xff": "x", "__scheme__": "ftp", "__meta_x": "ok"}
			sc.Scheme, sc.MetricsPath = "ftp", "metrics"
		}, want: []string{"scrape_configs[0].static_configs[0].targets[1]: want host:port", "scrape_configs[0].static_configs[0].labels.\xff: invalid label name", "scrape_configs[0].static_configs[0].labels.__scheme__: want http or https", "scrape_configs[0].scheme: want http or https", "scrape_configs[0].metrics_path: must start with /"}},
		{name: "no targets at all", mutate: func(c *Config) { c.ScrapeConfigs[0].StaticConfigs = nil }, want: []string{"scrape_configs[0].static_configs: a job needs static_configs or file_sd_configs"}},
		{name: "file_sd", mutate: func(c *Config) {
			c.ScrapeConfigs[0].FileSDConfigs = []FileSDConfig{{Files: []string{"targets.txt", "[.json"}}, {}}
		}, want: []string{"scrape_configs[0].file_sd_configs[0].files[0]: want a .json, .yml or .yaml file", "scrape_configs[0].file_sd_configs[0].files[1]: bad glob", "scrape_configs[0].file_sd_configs[1].files: must not be empty"}},
		{name: "auth exclusivity", mutate: func(c *Config) {
			c.ScrapeConfigs[0].BasicAuth = &httpconf.BasicAuth{}
			c.ScrapeConfigs[0].Authorization = &httpconf.Authorization{Type: "Basic"}
			c.ScrapeConfigs[0].TLSConfig.CertFile = "c.pem"
		}, want: []string{"scrape_configs[0].basic_auth.username: must not be empty", "scrape_configs[0].authorization: basic_auth and authorization are mutually exclusive", "scrape_configs[0].authorization.type: use basic_auth", "scrape_configs[0].tls_config.cert_file: cert_file and key_file must be set together"}},
		{name: "probe", mutate: func(c *Config) {
			c.ProbeConfigs[0].Targets = []string{"localhost:8080", "ftp://u:hunter2@x/", "http://u:hunter2@x/"}
			c.ProbeConfigs[0].ValidStatusCodes = []int{99}
			c.ProbeConfigs[0].Timeout = time.Minute
		}, want: []string{"probe_configs[0].targets[0]: want an absolute http(s) URL", "probe_configs[0].targets[1]: want an absolute http(s) URL, got \"ftp://u:xxxxx@x/\"", "probe_configs[0].targets[2]: put credentials in basic_auth", "probe_configs[0].valid_status_codes[0]", "probe_configs[0].timeout"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mutate(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
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

func TestConfigResolve(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte("secret\n"), 0o600))
	c := DefaultConfig()
	c.ScrapeConfigs = []ScrapeConfig{{
		JobName:          "a",
		HTTPClientConfig: HTTPClientConfig{BasicAuth: &httpconf.BasicAuth{Username: "u", PasswordFile: "pw"}, TLSConfig: httpconf.TLSConfig{CAFile: "ca.pem"}},
		FileSDConfigs:    []FileSDConfig{{Files: []string{"sd/*.json"}}},
	}, {
		JobName:          "b",
		HTTPClientConfig: HTTPClientConfig{BearerTokenFile: "missing"},
	}}
	err := c.Resolve(dir)
	require.ErrorContains(t, err, "scrape_configs[1].bearer_token_file: read secret file")
	sc := c.ScrapeConfigs[0]
	require.Equal(t, "secret", string(sc.BasicAuth.Password))
	require.Equal(t, filepath.Join(dir, "ca.pem"), sc.TLSConfig.CAFile)
	require.Equal(t, filepath.Join(dir, "sd/*.json"), sc.FileSDConfigs[0].Files[0])
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"1024", 1024, false}, {"10MB", 10 << 20, false}, {"512KiB", 512 << 10, false}, {"1.5GB", 3 << 29, false}, {"10XB", 0, true}, {"-1", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var b ByteSize
			err := b.UnmarshalText([]byte(tc.in))
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, b)
		})
	}
}
