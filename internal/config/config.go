// Package config owns seismo's agent config file: its top-level structure,
// the layering of embedded default or file < SEISMO_* environment < flags,
// strict decoding (an unknown key is an error naming its path and file:line),
// validation that reports every problem at once, and the resolution of
// relative paths against the config file's directory.
//
// # Adding a section
//
// A subsystem owns its section type in its own package, with koanf tags:
//
//	// in package rules
//	type Config struct {
//		Files    []string      `koanf:"files"`
//		Interval time.Duration `koanf:"interval"`
//	}
//	func DefaultConfig() Config { return Config{Interval: 15 * time.Second} }
//	func (c *Config) Validate() error { ... } // configutil.FieldErrors, paths relative to the section
//	func (c *Config) Resolve(baseDir string) error { ... } // optional: relative paths, *_file secrets
//
// and the section is added here with two lines: a field in Config
// (`Rules rules.Config `koanf:"rules"“) and its default in Default()
// (`Rules: rules.DefaultConfig(),`). Load calls Resolve and Validate of every
// section automatically (see sectionHooks) and prefixes each error path with
// the section's key, so "files[0]: no such file" becomes
// "seismo.yml:12:7: rules.files[0]: no such file". Every key of the section
// must be described in configs/seismo.yml; the configs test loads it.
package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
	"github.com/seismo-agent/seismo/notify/setup"
	"github.com/seismo-agent/seismo/rules"
	"github.com/seismo-agent/seismo/store"
	"github.com/seismo-agent/seismo/web"
)

// Config is the whole agent configuration. The zero value is not useful:
// start from Default() or Load.
type Config struct {
	// DataDir holds all persistent state (alert states, detector snapshots,
	// notification outbox). Relative paths are resolved against the config
	// file's directory, or the working directory for the embedded default.
	DataDir string `koanf:"data_dir"`

	// ShutdownTimeout bounds how long SIGTERM/SIGINT wait for subsystems to
	// drain before the process exits anyway.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`

	HTTP HTTPConfig `koanf:"http"`
	Log  LogConfig  `koanf:"log"`

	// Subsystem sections are added below, one line each (see the package
	// comment), e.g.:
	//   Collectors collectors.Config `koanf:"collectors"`
	Rules rules.Config `koanf:"rules"`
	// Collectors, Storage and Datasources: what is sampled, how long it is
	// kept in the embedded store, and the named remote PromQL sources.
	Collectors  collectors.Config `koanf:"collectors"`
	Storage     store.Config      `koanf:"storage"`
	Datasources datasource.Config `koanf:"datasources"`
	// Notify routes alerts to receivers (Slack, webhook, Alertmanager,
	// file) and writes status-update drafts; see docs/notify.md.
	Notify setup.Config `koanf:"notify"`

	// File is the path of the config file this was loaded from, empty for
	// the embedded default. Set by Load, never decoded.
	File string `koanf:"-"`
	// FileEmpty is whether File sets nothing (configutil.Blank). Set by
	// Load, never decoded.
	FileEmpty bool `koanf:"-"`
}

// HTTPConfig configures the agent's own HTTP server.
type HTTPConfig struct {
	// ListenAddress is host:port. Loopback by default: expose it
	// deliberately.
	ListenAddress string `koanf:"listen_address"`
	// ExternalURL is how people reach this agent (used in alert links);
	// empty means http://<listen_address>.
	ExternalURL string `koanf:"external_url"`
	// MaxConcurrentRequests bounds concurrent API requests (mounted under
	// /api/); health, readiness and /metrics are never limited.
	MaxConcurrentRequests int `koanf:"max_concurrent_requests"`
	// MaxQueuedRequests bounds API requests waiting for a slot (0: none
	// wait); more get 503 with Retry-After at once. QueueTimeout bounds the
	// wait, past which the request gets 503 with Retry-After.
	MaxQueuedRequests int           `koanf:"max_queued_requests"`
	QueueTimeout      time.Duration `koanf:"queue_timeout"`
	// Console bounds the console's pages (GET / and the pages under it)
	// the same way, in slots and a queue of their own, so that API clients
	// cannot keep the console waiting nor the reverse (restart to apply).
	Console PoolConfig `koanf:"console"`
	// RoutePrefix is the path under which every endpoint and the console
	// are served ("/seismo"), for a reverse proxy that hosts the agent
	// under a path. Empty means the path of ExternalURL, or the root.
	RoutePrefix string `koanf:"route_prefix"`

	// WebConfigFile is a web config file in the format of Prometheus'
	// exporter-toolkit (--web.config.file): TLS, bcrypt basic-auth users,
	// response headers. Applied on reload; a bad file fails the reload.
	WebConfigFile string `koanf:"web_config_file"`
	// Authorization, when its credentials (or credentials_file) are set,
	// is accepted as "Authorization: <type> <credentials>" (type Bearer by
	// default) besides any basic-auth user.
	Authorization httpconf.Authorization `koanf:"authorization"`
	// AuthExemptHealth leaves /-/healthy and /-/ready open when
	// authentication is configured.
	AuthExemptHealth bool `koanf:"auth_exempt_health"`
	// EnableLifecycle allows POST /-/reload; EnableAdminAPI allows the
	// endpoints that change state (silences). Off, they answer 403.
	EnableLifecycle bool `koanf:"enable_lifecycle"`
	EnableAdminAPI  bool `koanf:"enable_admin_api"`

	// Connection and request limits (restart to apply).
	ReadHeaderTimeout   time.Duration `koanf:"read_header_timeout"`
	ReadTimeout         time.Duration `koanf:"read_timeout"`
	WriteTimeout        time.Duration `koanf:"write_timeout"`
	IdleTimeout         time.Duration `koanf:"idle_timeout"`
	MaxHeaderBytes      int           `koanf:"max_header_bytes"`
	MaxRequestBodyBytes int64         `koanf:"max_request_body_bytes"`

	// Limits of /api/v1/query and /api/v1/query_range (restart to apply);
	// rule evaluation has its own.
	QueryTimeout    time.Duration `koanf:"query_timeout"`
	QueryMaxSamples int           `koanf:"query_max_samples"`
	QueryMaxPoints  int           `koanf:"query_max_points"`
	// QueryMaxConcurrency bounds API queries evaluated at once (more wait
	// their turn up to query_timeout); 0 means half the usable CPUs, at
	// least one, so queries cannot starve rule evaluation.
	QueryMaxConcurrency int `koanf:"query_max_concurrency"`
}

// PoolConfig bounds one pool of HTTP handlers: requests served at once,
// requests waiting, blocked, for a slot (0: none wait), and how long they
// wait; past either bound a request gets 503 with Retry-After.
// MaxRequestsPerSecond paces the requests let in (0: not paced); only the
// console's pool has the key: the API's slots pace its slow queries.
type PoolConfig struct {
	MaxConcurrentRequests int           `koanf:"max_concurrent_requests"`
	MaxQueuedRequests     int           `koanf:"max_queued_requests"`
	QueueTimeout          time.Duration `koanf:"queue_timeout"`
	MaxRequestsPerSecond  float64       `koanf:"max_requests_per_second"`
}

// Limits are the web server's limits for the pool; 0 queued (no queue)
// and 0 per second (not paced) become web's negative.
func (p PoolConfig) Limits() web.PoolLimits {
	return web.PoolLimits{
		MaxConcurrentRequests: p.MaxConcurrentRequests,
		MaxQueuedRequests:     cmp.Or(p.MaxQueuedRequests, -1),
		QueueTimeout:          p.QueueTimeout,
		MaxRequestsPerSecond:  cmp.Or(p.MaxRequestsPerSecond, -1),
	}
}

// validate reports bad values under prefix (e.g. "console.").
func (p PoolConfig) validate(errs *configutil.Errors, prefix string) {
	if p.MaxConcurrentRequests <= 0 {
		errs.Addf(prefix+"max_concurrent_requests", "must be positive, got %d", p.MaxConcurrentRequests)
	}
	if p.MaxQueuedRequests < 0 {
		errs.Addf(prefix+"max_queued_requests", "must not be negative, got %d", p.MaxQueuedRequests)
	}
	if p.QueueTimeout <= 0 {
		errs.Addf(prefix+"queue_timeout", "must be positive, got %s", p.QueueTimeout)
	}
	if !(p.MaxRequestsPerSecond >= 0) { // NaN too
		errs.Addf(prefix+"max_requests_per_second", "must not be negative (0: not paced), got %v", p.MaxRequestsPerSecond)
	}
}

// APIPool is the API's pool: max_concurrent_requests, max_queued_requests
// and queue_timeout at the top of the http section, where they were
// before the console got a pool of its own.
func (h *HTTPConfig) APIPool() PoolConfig {
	return PoolConfig{MaxConcurrentRequests: h.MaxConcurrentRequests, MaxQueuedRequests: h.MaxQueuedRequests, QueueTimeout: h.QueueTimeout}
}

// QueryConcurrency is QueryMaxConcurrency with 0 resolved to half the
// usable CPUs (GOMAXPROCS), at least one.
func (h *HTTPConfig) QueryConcurrency() int {
	if h.QueryMaxConcurrency > 0 {
		return h.QueryMaxConcurrency
	}
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// QueryCPUShare is the share of time each API query turn may be in use so
// that API queries together take at most half the usable CPUs even when
// there are fewer CPUs than turns (one CPU, one turn: 0.5). 1 means no
// pause.
func (h *HTTPConfig) QueryCPUShare() float64 {
	return min(1, float64(runtime.GOMAXPROCS(0))/2/float64(h.QueryConcurrency()))
}

// LogConfig configures the agent's structured log.
type LogConfig struct {
	Level  string `koanf:"level"`  // debug, info, warn, error
	Format string `koanf:"format"` // text or json
}

// Default returns the built-in defaults that every file, environment
// variable and flag is layered on. Subsystem sections add their
// DefaultConfig() here.
func Default() Config {
	return Config{
		DataDir:         "data",
		ShutdownTimeout: 4 * time.Second,
		HTTP:            DefaultHTTPConfig(),
		Log:             LogConfig{Level: "info", Format: "text"},
		Rules:           rules.DefaultConfig(),
		Collectors:      collectors.DefaultConfig(),
		Storage:         store.DefaultConfig(),
		Datasources:     datasource.DefaultConfig(),
		Notify:          setup.DefaultConfig(),
	}
}

// Validate checks the top-level fields and every section and returns all
// problems at once as configutil.FieldErrors with full field paths (nil if
// the config is valid). Load already calls it.
func (c *Config) Validate() error {
	var errs configutil.Errors
	if c.DataDir == "" {
		errs.Addf("data_dir", "must not be empty")
	}
	if c.ShutdownTimeout <= 0 {
		errs.Addf("shutdown_timeout", "must be positive, got %s", c.ShutdownTimeout)
	}
	for _, s := range sections(c) {
		if s.validate != nil {
			errs.Merge(s.key, s.validate())
		}
	}
	if d := c.Rules.Datasource; d != "" && d != "local" {
		known := []string{"local"}
		found := false
		for _, r := range c.Datasources.Remote {
			known = append(known, r.Name)
			found = found || r.Name == d
		}
		if !found {
			errs.Addf("rules.datasource", "unknown datasource %q (have %s)", d, strings.Join(known, ", "))
		}
	}
	return errs.Err()
}

// DefaultHTTPConfig returns the http section's defaults.
func DefaultHTTPConfig() HTTPConfig {
	l := web.DefaultLimits()
	return HTTPConfig{
		ListenAddress:         "127.0.0.1:9797",
		MaxConcurrentRequests: 64,
		MaxQueuedRequests:     1024,
		QueueTimeout:          5 * time.Second,
		Console:               defaultConsolePool(),
		AuthExemptHealth:      true,
		ReadHeaderTimeout:     l.ReadHeaderTimeout,
		ReadTimeout:           l.ReadTimeout,
		WriteTimeout:          l.WriteTimeout,
		IdleTimeout:           l.IdleTimeout,
		MaxHeaderBytes:        l.MaxHeaderBytes,
		MaxRequestBodyBytes:   l.MaxRequestBodyBytes,
		QueryTimeout:          30 * time.Second,
		QueryMaxSamples:       5_000_000,
		QueryMaxPoints:        11_000,
	}
}

func defaultConsolePool() PoolConfig {
	d := web.DefaultConsolePool()
	return PoolConfig{MaxConcurrentRequests: d.MaxConcurrentRequests, MaxQueuedRequests: d.MaxQueuedRequests,
		QueueTimeout: d.QueueTimeout, MaxRequestsPerSecond: d.MaxRequestsPerSecond}
}

// AccessConfig is what the web server enforces, from this section. Call
// it on a resolved config (secrets read).
func (h *HTTPConfig) AccessConfig() web.AccessConfig {
	a := web.AccessConfig{
		WebConfigFile:    h.WebConfigFile,
		AuthExemptHealth: h.AuthExemptHealth,
		EnableLifecycle:  h.EnableLifecycle,
		EnableAdminAPI:   h.EnableAdminAPI,
	}
	if h.Authorization.Credentials != "" {
		a.BearerType, a.BearerToken = h.Authorization.Type, string(h.Authorization.Credentials)
	}
	return a
}

// Limits are the web server's connection and request limits.
func (h *HTTPConfig) Limits() web.Limits {
	return web.Limits{
		ReadHeaderTimeout:   h.ReadHeaderTimeout,
		ReadTimeout:         h.ReadTimeout,
		WriteTimeout:        h.WriteTimeout,
		IdleTimeout:         h.IdleTimeout,
		MaxHeaderBytes:      h.MaxHeaderBytes,
		MaxRequestBodyBytes: h.MaxRequestBodyBytes,
	}
}

// Resolve reads the authorization credentials_file and makes
// web_config_file absolute against baseDir.
func (h *HTTPConfig) Resolve(baseDir string) error {
	h.WebConfigFile = configutil.ResolvePath(baseDir, h.WebConfigFile)
	cc := httpconf.ClientConfig{Authorization: &h.Authorization}
	return cc.Resolve(baseDir)
}

// Validate checks the http section. It reads the web config file, so a
// bad one is reported by "seismo check config" and fails a reload.
func (h *HTTPConfig) Validate() error {
	var errs configutil.Errors
	if _, port, err := net.SplitHostPort(h.ListenAddress); err != nil {
		errs.Addf("listen_address", "want host:port, got %q: %v", h.ListenAddress, err)
	} else if port == "" {
		errs.Addf("listen_address", "missing port in %q", h.ListenAddress)
	}
	if h.ExternalURL != "" {
		// Error texts never repeat the URL whole: it may carry credentials.
		u, err := url.Parse(h.ExternalURL)
		switch {
		case err != nil:
			errs.Addf("external_url", "not a URL")
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
			errs.Addf("external_url", "want an absolute http(s) URL, got %q", u.Redacted())
		}
	}
	h.APIPool().validate(&errs, "")
	h.Console.validate(&errs, "console.")
	if err := checkRoutePrefix(h.RoutePrefix); err != nil {
		errs.Addf("route_prefix", "%v", err)
	}
	cc := httpconf.ClientConfig{Authorization: &h.Authorization}
	errs.Merge("", cc.Validate())
	if h.WebConfigFile != "" {
		ac := h.AccessConfig()
		ac.BearerToken = "" // checked above, with its field path
		_, err := web.NewAccess(ac)
		errs.Merge("web_config_file", err) // one line per problem in the file

	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"read_header_timeout", h.ReadHeaderTimeout}, {"read_timeout", h.ReadTimeout},
		{"write_timeout", h.WriteTimeout}, {"idle_timeout", h.IdleTimeout}, {"query_timeout", h.QueryTimeout},
	} {
		if d.v <= 0 {
			errs.Addf(d.key, "must be positive, got %s", d.v)
		}
	}
	if h.QueryTimeout > 0 && h.WriteTimeout > 0 && h.WriteTimeout <= h.QueryTimeout {
		errs.Addf("write_timeout", "must exceed query_timeout (%s), or answers to slow queries are cut off", h.QueryTimeout)
	}
	if h.MaxHeaderBytes < 4096 {
		errs.Addf("max_header_bytes", "must be at least 4096, got %d", h.MaxHeaderBytes)
	}
	if h.MaxRequestBodyBytes < 1024 {
		errs.Addf("max_request_body_bytes", "must be at least 1024, got %d", h.MaxRequestBodyBytes)
	}
	if h.QueryMaxSamples <= 0 {
		errs.Addf("query_max_samples", "must be positive, got %d", h.QueryMaxSamples)
	}
	if h.QueryMaxPoints <= 0 {
		errs.Addf("query_max_points", "must be positive, got %d", h.QueryMaxPoints)
	}
	if h.QueryMaxConcurrency < 0 {
		errs.Addf("query_max_concurrency", "must not be negative, got %d", h.QueryMaxConcurrency)
	}
	return errs.Err()
}

// checkRoutePrefix accepts "" or an absolute URL path without query,
// fragment, empty or dot segments.
func checkRoutePrefix(p string) error {
	if p == "" || p == "/" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("want a path starting with /, got %q", p)
	}
	if strings.ContainsAny(p, "?#%\\ ") {
		return fmt.Errorf("want a plain path without ?, #, %%, \\ or spaces, got %q", p)
	}
	for _, seg := range strings.Split(strings.Trim(p, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("want a path without empty, . or .. segments, got %q", p)
		}
	}
	return nil
}

// RoutePrefixOrDefault returns the path prefix the agent serves under,
// without a trailing slash: RoutePrefix, else the path of ExternalURL, else
// "" (the root).
func (h *HTTPConfig) RoutePrefixOrDefault() string {
	p := h.RoutePrefix
	if p == "" && h.ExternalURL != "" {
		if u, err := url.Parse(h.ExternalURL); err == nil {
			p = u.Path
		}
	}
	return strings.TrimRight(p, "/")
}

// ExternalURLOrDefault returns ExternalURL, or
// http://<listen_address><route_prefix> when it is empty.
func (h *HTTPConfig) ExternalURLOrDefault() string {
	if h.ExternalURL != "" {
		return strings.TrimRight(h.ExternalURL, "/")
	}
	return "http://" + h.ListenAddress + h.RoutePrefixOrDefault()
}

// Validate checks the log section.
func (l *LogConfig) Validate() error {
	var errs configutil.Errors
	if _, err := ParseLevel(l.Level); err != nil {
		errs.Addf("level", "%v", err)
	}
	switch l.Format {
	case "text", "json":
	default:
		errs.Addf("format", "want text or json, got %q", l.Format)
	}
	return errs.Err()
}

// ParseLevel parses a log level name: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("want debug, info, warn or error, got %q", s)
}
