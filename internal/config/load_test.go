package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoadEmbeddedDefault(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	cfg, err := Load(LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9797", cfg.HTTP.ListenAddress)
	require.Equal(t, filepath.Join(wd, "data"), cfg.DataDir, "relative data_dir of the embedded default resolves against the working directory")
	require.Equal(t, "info", cfg.Log.Level)
	require.Equal(t, 4*time.Second, cfg.ShutdownTimeout)
	require.Empty(t, cfg.File)
}

func TestLoadLayers(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "seismo.yml", `
data_dir: state
http:
  listen_address: 127.0.0.1:1111
  max_concurrent_requests: 5
log:
  level: warn
`)
	tests := []struct {
		name  string
		env   []string
		flags map[string]any
		check func(t *testing.T, c *Config)
	}{
		{
			name: "file over defaults",
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "127.0.0.1:1111", c.HTTP.ListenAddress)
				require.Equal(t, 5, c.HTTP.MaxConcurrentRequests)
				require.Equal(t, "warn", c.Log.Level)
				require.Equal(t, "text", c.Log.Format, "keys absent from the file keep their defaults")
				require.Equal(t, filepath.Join(dir, "state"), c.DataDir, "relative paths resolve against the file's directory")
				require.Equal(t, file, c.File)
			},
		},
		{
			name: "env over file, typed as YAML scalars",
			env: []string{
				"SEISMO_HTTP__LISTEN_ADDRESS=127.0.0.1:2222",
				"SEISMO_HTTP__MAX_CONCURRENT_REQUESTS=7",
				"SEISMO_SHUTDOWN_TIMEOUT=1m30s",
				"SEISMO_DATA_DIR=/var/lib/seismo",
				"PATH=/usr/bin", // not ours: ignored
			},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "127.0.0.1:2222", c.HTTP.ListenAddress)
				require.Equal(t, 7, c.HTTP.MaxConcurrentRequests)
				require.Equal(t, 90*time.Second, c.ShutdownTimeout)
				require.Equal(t, "/var/lib/seismo", c.DataDir)
			},
		},
		{
			name:  "flags over env",
			env:   []string{"SEISMO_HTTP__LISTEN_ADDRESS=127.0.0.1:2222", "SEISMO_LOG__LEVEL=error"},
			flags: map[string]any{"http.listen_address": "127.0.0.1:3333"},
			check: func(t *testing.T, c *Config) {
				require.Equal(t, "127.0.0.1:3333", c.HTTP.ListenAddress)
				require.Equal(t, "error", c.Log.Level)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(LoadOptions{File: file, Env: tt.env, Flags: tt.flags})
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   []string
		flags map[string]any
		// want are substrings that must all appear, each on its own line
		// of the error, in this order.
		want []string
	}{
		{
			name: "unknown keys with positions and a suggestion",
			yaml: "http:\n  listn_address: 127.0.0.1:1\nbogus: 1\n",
			want: []string{
				`bad.yml:2:3: http.listn_address: unknown key (did you mean "listen_address"?)`,
				`bad.yml:3:1: bogus: unknown key`,
			},
		},
		{
			name: "every problem at once, decode and validation",
			yaml: `data_dir: ""
shutdown_timeout: 5
http:
  external_url: ftp://x
  max_concurrent_requests: many
log:
  level: loud
  format: xml
`,
			want: []string{
				`bad.yml:1:11: data_dir: must not be empty`,
				`bad.yml:2:19: shutdown_timeout: want a duration with a unit such as 15s, got 5`,
				`bad.yml:4:17: http.external_url: want an absolute http(s) URL, got "ftp://x"`,
				`bad.yml:5:28: http.max_concurrent_requests: expected type 'int'`,
				`bad.yml:7:10: log.level: want debug, info, warn or error, got "loud"`,
				`bad.yml:8:11: log.format: want text or json, got "xml"`,
			},
		},
		{
			name: "remote mode, HA and shard keys",
			yaml: `rules:
  datasource: central
  replica_label: replica
  shard: {index: 3, total: 3}
datasources:
  remote: [{name: vm, url: "http://127.0.0.1:8428"}]
`,
			want: []string{
				`bad.yml:2:15: rules.datasource: unknown datasource "central" (have local, vm)`,
				`bad.yml:3:18: rules.replica_label: "replica" is not one of external_labels`,
				`bad.yml:4:18: rules.shard.index: must be between 0 and total-1 (2), got 3`,
			},
		},
		{
			name: "URL credentials are not repeated",
			yaml: "http:\n  external_url: ftp://user:hunter2@example.com\n",
			want: []string{`bad.yml:2:17: http.external_url: want an absolute http(s) URL, got "ftp://user:xxxxx@example.com"`},
		},
		{
			name: "bad duration text",
			yaml: "shutdown_timeout: soon\n",
			want: []string{`bad.yml:1:19: shutdown_timeout: want a duration such as 15s or 1m30s, got "soon"`},
		},
		{
			name: "listen address without port",
			yaml: "http:\n  listen_address: localhost\n",
			want: []string{`bad.yml:2:19: http.listen_address: want host:port, got "localhost"`},
		},
		{
			name: "route prefix not a plain path",
			yaml: "http:\n  route_prefix: seismo\n",
			want: []string{`bad.yml:2:17: http.route_prefix: want a path starting with /, got "seismo"`},
		},
		{
			name: "route prefix with a dot segment",
			yaml: "http:\n  route_prefix: /a/../b\n",
			want: []string{`bad.yml:2:17: http.route_prefix: want a path without empty, . or .. segments, got "/a/../b"`},
		},
		{
			name: "section given as a scalar",
			yaml: "http: yes\n",
			want: []string{`bad.yml:1:7: http: want a mapping, got "yes"`},
		},
		{
			name: "unknown and invalid environment variables",
			env:  []string{"SEISMO_HTTP__LISTN=x", "SEISMO_LOG__LEVEL=loud"},
			want: []string{
				`$SEISMO_HTTP__LISTN: http.listn: unknown key`,
				`$SEISMO_LOG__LEVEL: log.level: want debug, info, warn or error, got "loud"`,
			},
		},
		{
			name:  "unknown and invalid flags",
			flags: map[string]any{"nope": "1", "log.format": "xml"},
			want: []string{
				`flag: nope: unknown key`,
				`flag: log.format: want text or json, got "xml"`,
			},
		},
		{
			name: "syntax error names file and line",
			yaml: "http:\n  listen_address: [\n",
			want: []string{`config bad.yml: yaml: line 2: did not find expected node content`},
		},
		{
			name: "duplicate key",
			yaml: "log:\n  level: info\n  level: debug\n",
			want: []string{`bad.yml: yaml: unmarshal errors:`, `mapping key "level" already defined at line 2`},
		},
		{
			name: "top level is a list",
			yaml: "- a\n- b\n",
			want: []string{`bad.yml:1:1: want a mapping of keys at the top level, got a list`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "bad.yml", tt.yaml)
			_, err := Load(LoadOptions{File: file, Env: tt.env, Flags: tt.flags})
			require.Error(t, err)
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(file)+string(filepath.Separator), "")
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				require.GreaterOrEqual(t, i, 0, "want %q in order in:\n%s", w, msg)
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestLoadYAMLAnchorsAndMergeKeys(t *testing.T) {
	file := writeFile(t, t.TempDir(), "seismo.yml", `
x-common: &common
  level: debug
log:
  <<: *common
  format: json
`)
	_, err := Load(LoadOptions{File: file})
	require.ErrorContains(t, err, "x-common: unknown key", "top-level anchors still need a real key")

	file = writeFile(t, t.TempDir(), "seismo.yml", `
log: &log
  <<: {level: debug, format: text}
  format: json
`)
	cfg, err := Load(LoadOptions{File: file})
	require.NoError(t, err)
	require.Equal(t, LogConfig{Level: "debug", Format: "json"}, cfg.Log)

	file = writeFile(t, t.TempDir(), "seismo.yml", "log:\n  <<: {levl: debug}\n")
	_, err = Load(LoadOptions{File: file})
	require.ErrorContains(t, err, `:2:8: log.levl: unknown key (did you mean "level"?)`, "merged keys are checked where they are written")
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(LoadOptions{File: filepath.Join(t.TempDir(), "nope.yml")})
	require.ErrorContains(t, err, "nope.yml")
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadEmptyFileGivesDefaults(t *testing.T) {
	file := writeFile(t, t.TempDir(), "empty.yml", "# nothing set\n")
	cfg, err := Load(LoadOptions{File: file})
	require.NoError(t, err)
	def := Default()
	require.Equal(t, def.HTTP, cfg.HTTP)
	require.Equal(t, def.Log, cfg.Log)
}

func TestEnvName(t *testing.T) {
	require.Equal(t, "SEISMO_HTTP__LISTEN_ADDRESS", EnvName("http.listen_address"))
	require.Equal(t, "SEISMO_DATA_DIR", EnvName("data_dir"))
}

// fakeSection stands for a subsystem's config section.
type fakeSection struct {
	Dir      string `koanf:"dir"`
	Resolved bool   `koanf:"-"`
}

func (s *fakeSection) Validate() error {
	var errs configutil.Errors
	errs.Addf("dir", "bad %q", s.Dir)
	errs.Addf("other[1].x", "also bad")
	return errs.Err()
}

func (s *fakeSection) Resolve(baseDir string) error {
	s.Dir = configutil.ResolvePath(baseDir, s.Dir)
	s.Resolved = true
	return nil
}

// plainSection has neither Validate nor Resolve.
type plainSection struct {
	N int `koanf:"n"`
}

func TestSectionsAreValidatedAndResolvedWithTheirPrefix(t *testing.T) {
	cfg := struct {
		Name  string       `koanf:"name"`
		Rules fakeSection  `koanf:"rules"`
		Plain plainSection `koanf:"plain"`
		Skip  fakeSection  `koanf:"-"`
	}{Rules: fakeSection{Dir: "rules.d"}}

	hooks := sections(&cfg)
	require.Len(t, hooks, 2, "struct fields with a koanf key, not the skipped one")
	require.Equal(t, "rules", hooks[0].key)
	require.Equal(t, "plain", hooks[1].key)
	require.Nil(t, hooks[1].validate)
	require.Nil(t, hooks[1].resolve)

	require.NoError(t, hooks[0].resolve("/etc/seismo"))
	require.True(t, cfg.Rules.Resolved)
	require.Equal(t, "/etc/seismo/rules.d", cfg.Rules.Dir)

	var errs configutil.Errors
	errs.Merge(hooks[0].key, hooks[0].validate())
	var paths []string
	for _, e := range leafErrors(errs.Err()) {
		var fe *configutil.FieldError
		require.True(t, errors.As(e, &fe))
		paths = append(paths, fe.Path)
	}
	require.Equal(t, []string{"rules.dir", "rules.other[1].x"}, paths)
}

func TestKnownKey(t *testing.T) {
	type inner struct {
		A int `koanf:"a"`
	}
	type Squashed struct {
		S string `koanf:"s"`
	}
	type root struct {
		Squashed `koanf:",squash"`
		In       inner             `koanf:"in"`
		Labels   map[string]string `koanf:"labels"`
		List     []inner           `koanf:"list"`
		Ptr      *inner            `koanf:"ptr"`
	}
	typ := reflect.TypeFor[root]()
	tests := []struct {
		key  string
		want bool
	}{
		{"in.a", true},
		{"in.b", false},
		{"s", true},
		{"labels.team", true},
		{"list", true},
		{"list.a", false},
		{"ptr.a", true},
		{"nope", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			require.Equal(t, tt.want, knownKey(typ, tt.key))
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"listen_address", "listn_address", 1},
		{"level", "lvel", 1},
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, editDistance(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}

func TestDecodeMergesStructsAndReplacesListsAndMaps(t *testing.T) {
	type item struct {
		A int `koanf:"a"`
		B int `koanf:"b"`
	}
	type section struct {
		X      int               `koanf:"x"`
		Y      int               `koanf:"y"`
		Items  []item            `koanf:"items"`
		Labels map[string]string `koanf:"labels"`
	}
	type root struct {
		S section `koanf:"s"`
		T section `koanf:"t"`
	}
	defaults := func() root {
		s := section{X: 1, Y: 2, Items: []item{{A: 1, B: 2}, {A: 3, B: 4}}, Labels: map[string]string{"team": "core"}}
		return root{S: s, T: s}
	}
	tests := []struct {
		name string
		yaml string
		want func(r *root)
	}{
		{
			name: "struct keys merge",
			yaml: "s: {x: 10}",
			want: func(r *root) { r.S.X = 10 },
		},
		{
			name: "list replaces the default list, elements start from zero",
			yaml: "s: {items: [{a: 9}]}",
			want: func(r *root) { r.S.Items = []item{{A: 9}} },
		},
		{
			name: "map replaces the default map",
			yaml: "s: {labels: {env: prod}}",
			want: func(r *root) { r.S.Labels = map[string]string{"env": "prod"} },
		},
		{
			name: "empty key keeps defaults",
			yaml: "s:\nt: {y: null}",
			want: func(*root) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.yaml), &data))
			got, want := defaults(), defaults()
			tt.want(&want)
			require.NoError(t, decode(data, &got))
			require.Equal(t, want, got)
		})
	}
}

func TestRoutePrefixOrDefault(t *testing.T) {
	tests := []struct {
		name             string
		h                HTTPConfig
		prefix, external string
	}{
		{"root", HTTPConfig{ListenAddress: "127.0.0.1:9797"}, "", "http://127.0.0.1:9797"},
		{"set", HTTPConfig{ListenAddress: "127.0.0.1:9797", RoutePrefix: "/seismo/"}, "/seismo", "http://127.0.0.1:9797/seismo"},
		{"from external URL", HTTPConfig{ListenAddress: ":1", ExternalURL: "https://ops.example.com/seismo/"}, "/seismo", "https://ops.example.com/seismo"},
		{"explicit wins", HTTPConfig{ListenAddress: ":1", ExternalURL: "https://ops.example.com/x", RoutePrefix: "/"}, "", "https://ops.example.com/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Default().HTTP // the limits' defaults; the test varies the addresses
			h.ListenAddress, h.ExternalURL, h.RoutePrefix = tt.h.ListenAddress, tt.h.ExternalURL, tt.h.RoutePrefix
			tt.h = h
			require.NoError(t, tt.h.Validate())
			require.Equal(t, tt.prefix, tt.h.RoutePrefixOrDefault())
			require.Equal(t, tt.external, tt.h.ExternalURLOrDefault())
		})
	}
}

func TestRedactedYAML(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "seismo.yml", `http:
  listen_address: 127.0.0.1:1111
collectors:
  scrape_configs:
    - job_name: shop
      basic_auth: {username: u, password: hunter2}
      static_configs: [{targets: ["127.0.0.1:8080"]}]
`)
	cfg, err := Load(LoadOptions{File: file})
	require.NoError(t, err)
	b, err := cfg.RedactedYAML()
	require.NoError(t, err)
	out := string(b)
	require.NotContains(t, out, "hunter2")
	require.Contains(t, out, "password: <secret>")
	require.Contains(t, out, "listen_address: 127.0.0.1:1111")
	require.Contains(t, out, "shutdown_timeout: 4s")
	require.Contains(t, out, "job_name: shop")
	// The rendering is itself a config the agent accepts.
	again := writeFile(t, dir, "again.yml", strings.ReplaceAll(out, "<secret>", "x"))
	_, err = Load(LoadOptions{File: again})
	require.NoError(t, err)
}

// TestLoadFileEmpty: a file that sets no key (empty, blank or comments
// only) says so, for a reload to tell a file being written from a config;
// the embedded default and a file with keys do not.
func TestLoadFileEmpty(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{
		"":                       true,
		"\n  \n":                 true,
		"# written next\n":       true,
		"log: {level: debug}\n":  false,
		"data_dir: state # x\n":  false,
		"---\n# a document\n---": true,
	} {
		cfg, err := Load(LoadOptions{File: writeFile(t, dir, "seismo.yml", content)})
		require.NoError(t, err, "%q", content)
		require.Equal(t, want, cfg.FileEmpty, "%q", content)
	}
	cfg, err := Load(LoadOptions{})
	require.NoError(t, err)
	require.False(t, cfg.FileEmpty, "the embedded default")
}
