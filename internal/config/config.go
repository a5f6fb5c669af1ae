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
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/collectors"
	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/notify/setup"
	"github.com/seismo-agent/seismo/rules"
	"github.com/seismo-agent/seismo/store"
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
		HTTP: HTTPConfig{
			ListenAddress:         "127.0.0.1:9797",
			MaxConcurrentRequests: 64,
		},
		Log:         LogConfig{Level: "info", Format: "text"},
		Rules:       rules.DefaultConfig(),
		Collectors:  collectors.DefaultConfig(),
		Storage:     store.DefaultConfig(),
		Datasources: datasource.DefaultConfig(),
		Notify:      setup.DefaultConfig(),
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

// Validate checks the http section.
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
	if h.MaxConcurrentRequests <= 0 {
		errs.Addf("max_concurrent_requests", "must be positive, got %d", h.MaxConcurrentRequests)
	}
	return errs.Err()
}

// ExternalURLOrDefault returns ExternalURL, or http://<listen_address> when
// it is empty.
func (h *HTTPConfig) ExternalURLOrDefault() string {
	if h.ExternalURL != "" {
		return strings.TrimRight(h.ExternalURL, "/")
	}
	return "http://" + h.ListenAddress
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
