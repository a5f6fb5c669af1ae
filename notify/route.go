package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

// GroupByAll is the group_by value that groups by every label, so each alert
// is its own group.
const GroupByAll = "..."

// RouteConfig is one node of the routing tree as written in the config file.
// A zero GroupWait, GroupInterval or RepeatInterval, or a nil GroupBy, in a
// child route inherits the parent's value.
type RouteConfig struct {
	Receiver string   `koanf:"receiver"`
	GroupBy  []string `koanf:"group_by"`
	// Matchers select alerts: `severity="page"`, `team=~"db|web"`, `env!="dev"`.
	Matchers []string `koanf:"matchers"`
	// Continue keeps matching sibling routes after this one matched.
	Continue       bool          `koanf:"continue"`
	GroupWait      time.Duration `koanf:"group_wait"`
	GroupInterval  time.Duration `koanf:"group_interval"`
	RepeatInterval time.Duration `koanf:"repeat_interval"`
	Routes         []RouteConfig `koanf:"routes"`
}

// DefaultRoute returns the root route defaults: Alertmanager's timings.
func DefaultRoute() RouteConfig {
	return RouteConfig{
		GroupBy:        []string{"alertname"},
		GroupWait:      30 * time.Second,
		GroupInterval:  5 * time.Minute,
		RepeatInterval: 4 * time.Hour,
	}
}

// Validate checks the tree; receivers lists the defined receiver names.
func (r *RouteConfig) Validate(receivers []string) error {
	var errs configutil.Errors
	r.validate(&errs, "", receivers, true)
	return errs.Err()
}

func (r *RouteConfig) validate(errs *configutil.Errors, path string, receivers []string, root bool) {
	if root && r.Receiver == "" {
		errs.Addf(configutil.Join(path, "receiver"), "the root route needs a default receiver")
	}
	if r.Receiver != "" && !slices.Contains(receivers, r.Receiver) {
		errs.Addf(configutil.Join(path, "receiver"), "undefined receiver %q", r.Receiver)
	}
	if root && len(r.Matchers) > 0 {
		errs.Addf(configutil.Join(path, "matchers"), "the root route matches every alert and takes no matchers")
	}
	for i, m := range r.Matchers {
		if _, err := ParseMatcher(m); err != nil {
			errs.Addf(configutil.Join(path, fmt.Sprintf("matchers[%d]", i)), "%v", err)
		}
	}
	if slices.Contains(r.GroupBy, GroupByAll) && len(r.GroupBy) > 1 {
		errs.Addf(configutil.Join(path, "group_by"), "%q cannot be combined with other labels", GroupByAll)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"group_wait", r.GroupWait}, {"group_interval", r.GroupInterval}, {"repeat_interval", r.RepeatInterval}} {
		if d.v < 0 {
			errs.Addf(configutil.Join(path, d.name), "must not be negative")
		}
	}
	if root && r.GroupInterval == 0 {
		errs.Addf(configutil.Join(path, "group_interval"), "must be positive")
	}
	if root && r.RepeatInterval == 0 {
		errs.Addf(configutil.Join(path, "repeat_interval"), "must be positive")
	}
	for i := range r.Routes {
		r.Routes[i].validate(errs, configutil.Join(path, fmt.Sprintf("routes[%d]", i)), receivers, false)
	}
}

// Route is a compiled routing tree node.
type Route struct {
	// ID is the node's position in the tree ("0", "0.1"), part of group keys.
	ID             string
	Receiver       string
	GroupBy        []string
	GroupByAll     bool
	Matchers       []*labels.Matcher
	Continue       bool
	GroupWait      time.Duration
	GroupInterval  time.Duration
	RepeatInterval time.Duration
	Routes         []*Route
}

// CompileRoute builds the tree from a validated config.
func CompileRoute(rc RouteConfig) (*Route, error) {
	return compile(rc, nil, "0")
}

func compile(rc RouteConfig, parent *Route, id string) (*Route, error) {
	r := &Route{ID: id, Receiver: rc.Receiver, GroupBy: rc.GroupBy, Continue: rc.Continue,
		GroupWait: rc.GroupWait, GroupInterval: rc.GroupInterval, RepeatInterval: rc.RepeatInterval}
	if parent != nil {
		if r.Receiver == "" {
			r.Receiver = parent.Receiver
		}
		if r.GroupBy == nil {
			r.GroupBy = parent.GroupBy
		}
		if r.GroupWait == 0 {
			r.GroupWait = parent.GroupWait
		}
		if r.GroupInterval == 0 {
			r.GroupInterval = parent.GroupInterval
		}
		if r.RepeatInterval == 0 {
			r.RepeatInterval = parent.RepeatInterval
		}
	}
	r.GroupByAll = slices.Contains(r.GroupBy, GroupByAll)
	for _, s := range rc.Matchers {
		m, err := ParseMatcher(s)
		if err != nil {
			return nil, err
		}
		r.Matchers = append(r.Matchers, m)
	}
	for i, c := range rc.Routes {
		cr, err := compile(c, r, fmt.Sprintf("%s.%d", id, i))
		if err != nil {
			return nil, err
		}
		r.Routes = append(r.Routes, cr)
	}
	return r, nil
}

// Match returns the routes an alert with the label set ls goes to, depth
// first, as Alertmanager does: the deepest matching routes win; a route
// without matching children matches itself; siblings after a match are tried
// only when the matching route has continue set.
func (r *Route) Match(ls labels.Labels) []*Route {
	for _, m := range r.Matchers {
		if !m.Matches(ls.Get(m.Name)) {
			return nil
		}
	}
	var all []*Route
	for _, c := range r.Routes {
		matches := c.Match(ls)
		all = append(all, matches...)
		if matches != nil && !c.Continue {
			break
		}
	}
	if len(all) == 0 {
		all = append(all, r)
	}
	return all
}

// groupLabels returns the group_by label values of a.
func (r *Route) groupLabels(a *model.Alert) map[string]string {
	out := map[string]string{}
	if r.GroupByAll {
		return a.Labels.Map()
	}
	for _, n := range r.GroupBy {
		if v := a.Labels.Get(n); v != "" {
			out[n] = v
		}
	}
	return out
}

// ParseMatcher parses `name="value"`, `name!="v"`, `name=~"re"`,
// `name!~"re"`; the value may be unquoted.
func ParseMatcher(s string) (*labels.Matcher, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, "=!")
	if i <= 0 {
		return nil, fmt.Errorf("bad matcher %q: want name=\"value\"", s)
	}
	name := strings.TrimSpace(s[:i])
	rest := s[i:]
	var mt labels.MatchType
	switch {
	case strings.HasPrefix(rest, "=~"):
		mt, rest = labels.MatchRegexp, rest[2:]
	case strings.HasPrefix(rest, "!~"):
		mt, rest = labels.MatchNotRegexp, rest[2:]
	case strings.HasPrefix(rest, "!="):
		mt, rest = labels.MatchNotEqual, rest[2:]
	case strings.HasPrefix(rest, "="):
		mt, rest = labels.MatchEqual, rest[1:]
	default:
		return nil, fmt.Errorf("bad matcher %q: unknown operator", s)
	}
	v := strings.TrimSpace(rest)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`)
	}
	if !validLabelName(name) {
		return nil, fmt.Errorf("bad matcher %q: invalid label name %q", s, name)
	}
	m, err := labels.NewMatcher(mt, name, v)
	if err != nil {
		return nil, fmt.Errorf("bad matcher %q: %w", s, err)
	}
	return m, nil
}

func validLabelName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
