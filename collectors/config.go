package collectors

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/httpconf"
)

// Defaults for Config.
const (
	DefaultScrapeInterval = 15 * time.Second
	DefaultScrapeTimeout  = 10 * time.Second
	DefaultMetricsPath    = "/metrics"
	DefaultRefresh        = 5 * time.Minute
	DefaultBodySizeLimit  = 50 << 20

	// MinInterval bounds memory: retention / interval samples per series.
	MinInterval = time.Second
)

// Config is the "collectors" section of the agent config. Job definitions
// follow Prometheus' scrape_configs so existing jobs can be pasted in.
type Config struct {
	// ScrapeInterval and ScrapeTimeout are the defaults of every job, like
	// Prometheus' global section.
	ScrapeInterval time.Duration `koanf:"scrape_interval" yaml:"scrape_interval"`
	ScrapeTimeout  time.Duration `koanf:"scrape_timeout" yaml:"scrape_timeout"`
	// ProcPath and SysPath root every host and cgroup file read (for
	// containers with the host's /proc mounted elsewhere, and for tests).
	ProcPath string `koanf:"proc_path" yaml:"proc_path"`
	SysPath  string `koanf:"sys_path" yaml:"sys_path"`

	ScrapeConfigs []ScrapeConfig `koanf:"scrape_configs" yaml:"scrape_configs"`
	Host          HostConfig     `koanf:"host" yaml:"host"`
	Cgroup        CgroupConfig   `koanf:"cgroup" yaml:"cgroup"`
	ProbeConfigs  []ProbeConfig  `koanf:"probe_configs" yaml:"probe_configs"`
}

// DefaultConfig returns the section's defaults: host and cgroup collection
// on, no scrape or probe jobs.
func DefaultConfig() Config {
	return Config{
		ScrapeInterval: DefaultScrapeInterval,
		ScrapeTimeout:  DefaultScrapeTimeout,
		ProcPath:       "/proc",
		SysPath:        "/sys",
		Host:           HostConfig{Enabled: true, JobName: "node"},
		Cgroup:         CgroupConfig{Enabled: true, JobName: "cgroup"},
	}
}

// ScrapeConfig is one scrape job, named and shaped like an entry of
// Prometheus' scrape_configs (without relabelling and service discovery
// other than static and file).
type ScrapeConfig struct {
	JobName        string        `koanf:"job_name" yaml:"job_name"`
	ScrapeInterval time.Duration `koanf:"scrape_interval" yaml:"scrape_interval"`
	ScrapeTimeout  time.Duration `koanf:"scrape_timeout" yaml:"scrape_timeout"`
	MetricsPath    string        `koanf:"metrics_path" yaml:"metrics_path"`
	Scheme         string        `koanf:"scheme" yaml:"scheme"`
	// HonorLabels keeps the target's own job, instance and static-label
	// values on conflict; otherwise they are renamed exported_<name>.
	HonorLabels bool `koanf:"honor_labels" yaml:"honor_labels"`

	HTTPClientConfig `koanf:",squash" yaml:",inline"`

	// BodySizeLimit is the largest uncompressed body accepted ("10MB",
	// "512KiB" or bytes); 0 means the default 50MiB.
	BodySizeLimit ByteSize `koanf:"body_size_limit" yaml:"body_size_limit"`
	// SampleLimit and LabelLimit fail a scrape with more samples, or a
	// series with more labels (after adding target labels); 0 is no limit.
	SampleLimit int `koanf:"sample_limit" yaml:"sample_limit"`
	LabelLimit  int `koanf:"label_limit" yaml:"label_limit"`

	StaticConfigs []StaticConfig `koanf:"static_configs" yaml:"static_configs"`
	FileSDConfigs []FileSDConfig `koanf:"file_sd_configs" yaml:"file_sd_configs"`
}

// HTTPClientConfig is how a scrape or probe authenticates.
type HTTPClientConfig struct {
	BasicAuth     *httpconf.BasicAuth     `koanf:"basic_auth" yaml:"basic_auth"`
	Authorization *httpconf.Authorization `koanf:"authorization" yaml:"authorization"`
	// BearerTokenFile is Prometheus' older spelling of
	// authorization.credentials_file.
	BearerTokenFile string             `koanf:"bearer_token_file" yaml:"bearer_token_file"`
	TLSConfig       httpconf.TLSConfig `koanf:"tls_config" yaml:"tls_config"`
}

// clientConfig is the shared part, pointing at the same BasicAuth and
// Authorization.
func (h *HTTPClientConfig) clientConfig() httpconf.ClientConfig {
	return httpconf.ClientConfig{BasicAuth: h.BasicAuth, Authorization: h.Authorization, TLSConfig: h.TLSConfig}
}

// StaticConfig is a fixed list of host:port targets sharing labels.
type StaticConfig struct {
	Targets []string          `koanf:"targets" yaml:"targets" json:"targets"`
	Labels  map[string]string `koanf:"labels" yaml:"labels" json:"labels"`
}

// FileSDConfig discovers targets from Prometheus file_sd files (JSON or
// YAML lists of static configs), re-read when they change and every
// RefreshInterval.
type FileSDConfig struct {
	Files           []string      `koanf:"files" yaml:"files"`
	RefreshInterval time.Duration `koanf:"refresh_interval" yaml:"refresh_interval"`
}

// HostConfig collects host CPU, load, memory and PSI (node_exporter names).
type HostConfig struct {
	Enabled  bool          `koanf:"enabled" yaml:"enabled"`
	JobName  string        `koanf:"job_name" yaml:"job_name"`
	Interval time.Duration `koanf:"interval" yaml:"interval"` // 0: collectors.scrape_interval
	// Instance is the instance label; empty means "localhost".
	Instance string `koanf:"instance" yaml:"instance"`
}

// CgroupConfig collects CPU usage, throttling and pressure of one cgroup.
type CgroupConfig struct {
	Enabled  bool          `koanf:"enabled" yaml:"enabled"`
	JobName  string        `koanf:"job_name" yaml:"job_name"`
	Interval time.Duration `koanf:"interval" yaml:"interval"`
	Instance string        `koanf:"instance" yaml:"instance"`
	// Path is the cgroup to watch, relative to the hierarchy root ("/"
	// included); empty means the agent's own, from /proc/self/cgroup.
	Path string `koanf:"path" yaml:"path"`
}

// ProbeConfig is an HTTP probe job (blackbox_exporter's http prober).
type ProbeConfig struct {
	JobName  string        `koanf:"job_name" yaml:"job_name"`
	Interval time.Duration `koanf:"interval" yaml:"interval"`
	Timeout  time.Duration `koanf:"timeout" yaml:"timeout"`
	// Targets are absolute http(s) URLs.
	Targets []string          `koanf:"targets" yaml:"targets"`
	Labels  map[string]string `koanf:"labels" yaml:"labels"`
	Method  string            `koanf:"method" yaml:"method"` // default GET
	// ValidStatusCodes count as success; empty means any 2xx.
	ValidStatusCodes []int `koanf:"valid_status_codes" yaml:"valid_status_codes"`

	HTTPClientConfig `koanf:",squash" yaml:",inline"`
}

// ByteSize is a size in bytes that also accepts units: "10MB", "512KiB",
// "1GB" (powers of 1024, as Prometheus' body_size_limit).
type ByteSize int64

// UnmarshalText parses a size with an optional unit.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return fmt.Errorf("invalid size %q", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}[unit]
	if mult == 0 {
		return fmt.Errorf("invalid size unit in %q: want B, KB, MB or GB", s)
	}
	*b = ByteSize(f * mult)
	return nil
}

// Validate reports every problem with field paths relative to the section.
// It expects defaults to have been applied (DefaultConfig).
func (c *Config) Validate() error {
	var errs configutil.Errors
	if c.ScrapeInterval < MinInterval {
		errs.Addf("scrape_interval", "must be at least %s, got %s", MinInterval, c.ScrapeInterval)
	}
	if c.ScrapeTimeout <= 0 {
		errs.Addf("scrape_timeout", "must be positive, got %s", c.ScrapeTimeout)
	} else if c.ScrapeTimeout > c.ScrapeInterval {
		errs.Addf("scrape_timeout", "%s is longer than scrape_interval %s", c.ScrapeTimeout, c.ScrapeInterval)
	}
	jobs := map[string]string{}
	claim := func(path, name string) {
		if name == "" {
			errs.Addf(path, "must not be empty")
			return
		}
		if prev, dup := jobs[name]; dup {
			errs.Addf(path, "duplicate job name %q (also %s)", name, prev)
			return
		}
		jobs[name] = path
	}
	for i := range c.ScrapeConfigs {
		sc := &c.ScrapeConfigs[i]
		p := fmt.Sprintf("scrape_configs[%d]", i)
		claim(p+".job_name", sc.JobName)
		errs.Merge(p, sc.validate(c.ScrapeInterval, c.ScrapeTimeout))
	}
	if c.Host.Enabled {
		claim("host.job_name", c.Host.JobName)
		validateInterval(&errs, "host.interval", c.Host.Interval)
	}
	if c.Cgroup.Enabled {
		claim("cgroup.job_name", c.Cgroup.JobName)
		validateInterval(&errs, "cgroup.interval", c.Cgroup.Interval)
		if c.Cgroup.Path != "" && !strings.HasPrefix(c.Cgroup.Path, "/") {
			errs.Addf("cgroup.path", "must start with /, got %q", c.Cgroup.Path)
		}
	}
	if (c.Host.Enabled || c.Cgroup.Enabled) && (c.ProcPath == "" || c.SysPath == "") {
		errs.Addf("proc_path", "proc_path and sys_path must be set when host or cgroup collection is enabled")
	}
	for i := range c.ProbeConfigs {
		pc := &c.ProbeConfigs[i]
		p := fmt.Sprintf("probe_configs[%d]", i)
		claim(p+".job_name", pc.JobName)
		errs.Merge(p, pc.validate(c.ScrapeInterval))
	}
	return errs.Err()
}

func validateInterval(errs *configutil.Errors, path string, d time.Duration) {
	if d != 0 && d < MinInterval {
		errs.Addf(path, "must be at least %s, got %s", MinInterval, d)
	}
}

var schemeRE = regexp.MustCompile(`^https?$`)

func (sc *ScrapeConfig) validate(defInterval, defTimeout time.Duration) error {
	var errs configutil.Errors
	validateInterval(&errs, "scrape_interval", sc.ScrapeInterval)
	interval, timeout := sc.intervals(defInterval, defTimeout)
	if sc.ScrapeTimeout < 0 {
		errs.Addf("scrape_timeout", "must not be negative, got %s", sc.ScrapeTimeout)
	} else if timeout > interval {
		errs.Addf("scrape_timeout", "%s is longer than scrape_interval %s", timeout, interval)
	}
	if sc.MetricsPath != "" && !strings.HasPrefix(sc.MetricsPath, "/") {
		errs.Addf("metrics_path", "must start with /, got %q", sc.MetricsPath)
	}
	if sc.Scheme != "" && !schemeRE.MatchString(sc.Scheme) {
		errs.Addf("scheme", "want http or https, got %q", sc.Scheme)
	}
	if sc.BodySizeLimit < 0 || sc.SampleLimit < 0 || sc.LabelLimit < 0 {
		errs.Addf("sample_limit", "limits must not be negative")
	}
	errs.Merge("", sc.HTTPClientConfig.validate())
	if len(sc.StaticConfigs) == 0 && len(sc.FileSDConfigs) == 0 {
		errs.Addf("static_configs", "a job needs static_configs or file_sd_configs")
	}
	for i, st := range sc.StaticConfigs {
		p := fmt.Sprintf("static_configs[%d]", i)
		for j, t := range st.Targets {
			if err := validateHostPort(t); err != nil {
				errs.Addf(fmt.Sprintf("%s.targets[%d]", p, j), "%v", err)
			}
		}
		errs.Merge(p+".labels", validateLabels(st.Labels))
	}
	for i, fs := range sc.FileSDConfigs {
		p := fmt.Sprintf("file_sd_configs[%d]", i)
		if len(fs.Files) == 0 {
			errs.Addf(p+".files", "must not be empty")
		}
		for j, f := range fs.Files {
			ext := filepath.Ext(f)
			if ext != ".json" && ext != ".yml" && ext != ".yaml" {
				errs.Addf(fmt.Sprintf("%s.files[%d]", p, j), "want a .json, .yml or .yaml file (glob), got %q", f)
			}
			if _, err := filepath.Match(f, ""); err != nil {
				errs.Addf(fmt.Sprintf("%s.files[%d]", p, j), "bad glob: %v", err)
			}
		}
		if fs.RefreshInterval < 0 {
			errs.Addf(p+".refresh_interval", "must not be negative")
		}
	}
	return errs.Err()
}

// intervals returns the job's interval and timeout with defaults applied;
// the timeout never exceeds the interval unless set explicitly.
func (sc *ScrapeConfig) intervals(defInterval, defTimeout time.Duration) (time.Duration, time.Duration) {
	interval, timeout := sc.ScrapeInterval, sc.ScrapeTimeout
	if interval == 0 {
		interval = defInterval
	}
	if timeout == 0 {
		timeout = min(defTimeout, interval)
	}
	return interval, timeout
}

func validateHostPort(t string) error {
	host, port, err := net.SplitHostPort(t)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", t)
	}
	if host == "" || port == "" {
		return fmt.Errorf("want host:port, got %q", t)
	}
	return nil
}

func validateLabels(ls map[string]string) error {
	var errs configutil.Errors
	for k, v := range ls {
		switch {
		case !model.UTF8Validation.IsValidLabelName(k):
			errs.Addf(k, "invalid label name")
		case k == labelScheme && v != "http" && v != "https":
			errs.Addf(k, "want http or https, got %q", v)
		case k == labelMetricsPath && !strings.HasPrefix(v, "/"):
			errs.Addf(k, "must start with /, got %q", v)
		}
	}
	return errs.Err()
}

func (h *HTTPClientConfig) validate() error {
	var errs configutil.Errors
	cc := h.clientConfig()
	errs.Merge("", cc.Validate())
	if h.BearerTokenFile != "" && (h.Authorization != nil || h.BasicAuth != nil) {
		errs.Addf("bearer_token_file", "bearer_token_file, authorization and basic_auth are mutually exclusive")
	}
	return errs.Err()
}

func (pc *ProbeConfig) validate(defInterval time.Duration) error {
	var errs configutil.Errors
	validateInterval(&errs, "interval", pc.Interval)
	interval := pc.Interval
	if interval == 0 {
		interval = defInterval
	}
	if pc.Timeout < 0 || pc.Timeout > interval {
		errs.Addf("timeout", "must be between 0 and the interval %s, got %s", interval, pc.Timeout)
	}
	if len(pc.Targets) == 0 {
		errs.Addf("targets", "must not be empty")
	}
	for i, t := range pc.Targets {
		u, err := url.Parse(t)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			errs.Addf(fmt.Sprintf("targets[%d]", i), "want an absolute http(s) URL, got %q", redactURL(t))
		case u.User != nil:
			// The URL becomes the instance label: no secret may be in it.
			errs.Addf(fmt.Sprintf("targets[%d]", i), "put credentials in basic_auth, not in the URL %q", redactURL(t))
		}
	}
	for i, code := range pc.ValidStatusCodes {
		if code < 100 || code > 599 {
			errs.Addf(fmt.Sprintf("valid_status_codes[%d]", i), "not an HTTP status code: %d", code)
		}
	}
	errs.Merge("labels", validateLabels(pc.Labels))
	errs.Merge("", pc.HTTPClientConfig.validate())
	return errs.Err()
}

// Resolve fills per-job defaults, makes file paths relative to the config
// file's directory absolute and reads *_file secrets.
func (c *Config) Resolve(baseDir string) error {
	var errs configutil.Errors
	for i := range c.ScrapeConfigs {
		sc := &c.ScrapeConfigs[i]
		p := fmt.Sprintf("scrape_configs[%d]", i)
		// List elements decode from zero: fill per-job defaults here.
		if sc.MetricsPath == "" {
			sc.MetricsPath = DefaultMetricsPath
		}
		if sc.Scheme == "" {
			sc.Scheme = "http"
		}
		errs.Merge(p, sc.HTTPClientConfig.resolve(baseDir))
		for j := range sc.FileSDConfigs {
			for k, f := range sc.FileSDConfigs[j].Files {
				sc.FileSDConfigs[j].Files[k] = configutil.ResolvePath(baseDir, f)
			}
		}
	}
	for i := range c.ProbeConfigs {
		errs.Merge(fmt.Sprintf("probe_configs[%d]", i), c.ProbeConfigs[i].HTTPClientConfig.resolve(baseDir))
	}
	return errs.Err()
}

func (h *HTTPClientConfig) resolve(baseDir string) error {
	var errs configutil.Errors
	cc := h.clientConfig()
	errs.Merge("", cc.Resolve(baseDir))
	h.TLSConfig = cc.TLSConfig
	if h.BearerTokenFile != "" {
		s, err := configutil.ResolveSecret("", h.BearerTokenFile, baseDir)
		if err != nil {
			errs.Addf("bearer_token_file", "%v", err)
		}
		h.Authorization, h.BearerTokenFile = &httpconf.Authorization{Type: "Bearer", Credentials: s}, ""
	}
	return errs.Err()
}

// redactURL hides a password in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
