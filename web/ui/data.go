package ui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seismo-agent/seismo/internal/apiv1"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
)

// callAPI serves a GET of path by h in-process and decodes the "data" of
// its answer into out.
func callAPI(r *http.Request, h http.Handler, path string, out any) error {
	if h == nil {
		return fmt.Errorf("%s: %w", path, errNotWired)
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	rec := &recorder{header: http.Header{}, Code: http.StatusOK}
	h.ServeHTTP(rec, req)
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		return fmt.Errorf("%s: answer %d is not JSON: %w", path, rec.Code, err)
	}
	if rec.Code != http.StatusOK || body.Status != "success" {
		return fmt.Errorf("%s: %d %s", path, rec.Code, body.Error)
	}
	return json.Unmarshal(body.Data, out)
}

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	Code   int
	Body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.Code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.Body.Write(b)
}

// alertView is an alert of /api/v1/alerts as the console shows it.
type alertView struct {
	apiv1.Alert

	// Filled by the console.
	Chart      template.HTML `json:"-"`
	Matchers   string        `json:"-"`
	SilencedBy []string      `json:"-"`
	// HoldsBack names the alerts suppressed by this one (their
	// suppressedBy is its rule, and their labels agree with its own):
	// what this page stands for.
	HoldsBack []string `json:"-"`
}

// holdsBack fills each alert's HoldsBack from the others' suppressedBy:
// a suppressed alert names its cause's rule, and the cause is the alert
// of that rule whose labels agree with its own on every label both carry
// (alertname and severity aside), as the rules engine matches them
// (model.SameCause).
func holdsBack(alerts []*alertView) {
	for _, x := range alerts {
		if x.SuppressedBy == "" {
			continue
		}
		for _, a := range alerts {
			if a != x && a.Name() == x.SuppressedBy && model.SameCause(labels.FromMap(a.Labels), labels.FromMap(x.Labels)) {
				a.HoldsBack = append(a.HoldsBack, x.Name()+labelSuffix(x.Labels))
			}
		}
	}
	for _, a := range alerts {
		slices.Sort(a.HoldsBack)
	}
}

// labelSuffix is ls without alertname, as {k="v", ...}, or "" when that
// leaves none.
func labelSuffix(ls map[string]string) string {
	l := labels.FromMap(ls)
	l = labels.NewBuilder(l).Del(labels.AlertName).Labels()
	if l.IsEmpty() {
		return ""
	}
	return l.String()
}

// Name is the alert's alertname.
func (a *alertView) Name() string { return a.Labels[labels.AlertName] }

// Summary is the summary annotation (the rule author's words, usually
// quoting the explanation), else the explanation's summary.
func (a *alertView) Summary() string {
	if s := a.Annotations["summary"]; s != "" {
		return s
	}
	if a.Explanation != nil {
		return a.Explanation.Summary
	}
	return ""
}

// Num is the alert's value as a number.
func (a *alertView) Num() float64 {
	v, err := strconv.ParseFloat(a.Value, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

type alertsPage struct {
	Alerts []*alertView
	// Others counts warming-up and resolved alerts, not shown.
	Others int
}

func (c *Console) alertsData(r *http.Request) (any, error) {
	var d struct {
		Alerts  []*alertView `json:"alerts"`
		Omitted int          `json:"omitted"`
	}
	// Only the active alerts: an agent with thousands of anomaly rules
	// warming up would otherwise encode and decode all of them per page.
	if err := callAPI(r, c.opts.Alerts, "/api/v1/alerts?state=firing&state=pending", &d); err != nil {
		return alertsPage{}, err
	}
	p := alertsPage{Others: d.Omitted}
	for _, a := range d.Alerts {
		if a.State != "firing" && a.State != "pending" {
			p.Others++
			continue
		}
		a.Matchers = matchers(a.Labels)
		if c.opts.SilencedBy != nil {
			a.SilencedBy = c.opts.SilencedBy(labels.FromMap(a.Labels))
		}
		if c.opts.Chart != nil {
			var b strings.Builder
			if err := c.opts.Chart(&b, labels.FromMap(a.Labels)); err != nil {
				c.opts.Logger.Warn("console chart failed", "alert", a.Name(), "err", err)
			} else {
				a.Chart = template.HTML(b.String()) // built by rules.WriteSVG, which escapes every text
			}
		}
		p.Alerts = append(p.Alerts, a)
	}
	holdsBack(p.Alerts)
	// Firing first, then pending; within each, alerts a detector explained
	// (they say what is wrong) before plain ones, then the oldest first.
	slices.SortStableFunc(p.Alerts, func(a, b *alertView) int {
		if a.State != b.State {
			if a.State == "firing" {
				return -1
			}
			return 1
		}
		if (a.Explanation == nil) != (b.Explanation == nil) {
			if a.Explanation != nil {
				return -1
			}
			return 1
		}
		return cmp.Compare(timeOf(a.ActiveAt).UnixNano(), timeOf(b.ActiveAt).UnixNano())
	})
	return p, nil
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// matchers renders labels as silence matchers, alertname first:
// alertname="X", instance="a".
func matchers(ls map[string]string) string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == labels.AlertName) != (keys[j] == labels.AlertName) {
			return keys[i] == labels.AlertName
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(ls[k])
	}
	return strings.Join(parts, ", ")
}

func (c *Console) rulesData(r *http.Request) (any, error) {
	var d struct {
		Groups []*apiv1.Group `json:"groups"`
	}
	err := callAPI(r, c.opts.Rules, "/api/v1/rules", &d)
	return d.Groups, err
}

func (c *Console) draftsData(r *http.Request) (any, error) {
	var d []*draft.Incident
	err := callAPI(r, c.opts.Drafts, "/api/v1/drafts", &d)
	for _, inc := range d {
		// The newest draft first: it is the one to post next.
		slices.Reverse(inc.Drafts)
	}
	return d, err
}

type silencesPage struct {
	Silences []*notify.Silence
	// Matchers prefills the form (from ?matchers=, as the alerts page's
	// "Silence" links set it).
	Matchers string
}

func (c *Console) silencesData(r *http.Request) (any, error) {
	p := silencesPage{Matchers: r.URL.Query().Get("matchers")}
	err := callAPI(r, c.opts.Silences, "/api/v1/silences", &p.Silences)
	// Active and pending first, the newest first.
	slices.SortStableFunc(p.Silences, func(a, b *notify.Silence) int {
		if (a.Status == "expired") != (b.Status == "expired") {
			if a.Status == "expired" {
				return 1
			}
			return -1
		}
		return b.StartsAt.Compare(a.StartsAt)
	})
	return p, err
}

type statusPage struct {
	Status  Status
	Uptime  time.Duration
	Config  string
	Targets []Target
}

func (c *Console) statusData(*http.Request) (any, error) {
	var p statusPage
	if c.opts.Status != nil {
		p.Status = c.opts.Status()
		if !p.Status.StartedAt.IsZero() {
			p.Uptime = c.opts.Now().Sub(p.Status.StartedAt).Truncate(time.Second)
		}
	}
	if c.opts.Targets != nil {
		p.Targets = c.opts.Targets()
	}
	if c.opts.Config == nil {
		return p, nil
	}
	b, err := c.opts.Config()
	p.Config = string(b)
	return p, err
}

// heldBy words each reason /api/v1/alerts gives in heldBy: a badge's
// word and its title.
var heldBy = map[string][2]string{
	apiv1.HeldByEpisode:       {"incident open", "held while the detector's incident is open: it may come in waves, and the series has not been calm long enough to end it"},
	apiv1.HeldByMove:          {"moved", "held while the series stays beyond every estimate of normal it had before the move, for a day at most"},
	apiv1.HeldByLingering:     {"lingering", "held while the series lingers away from the normal it had when the alert fired, for a day at most"},
	apiv1.HeldByKeepFiringFor: {"keep_firing_for", "held for the rule's keep_firing_for"},
}

// funcs are the templates' helpers.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"num":  num,
		"unit": withUnit,
		"ago": func(t any) string {
			var tt time.Time
			switch v := t.(type) {
			case time.Time:
				tt = v
			case *time.Time:
				tt = timeOf(v)
			}
			if tt.IsZero() {
				return "never"
			}
			return humanDuration(c.opts.Now().Sub(tt)) + " ago"
		},
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"heldWord": func(by string) string { return heldBy[by][0] },
		"heldWhy": func(by string) string {
			if w, ok := heldBy[by]; ok {
				return w[1]
			}
			return "held while the detector's incident lasts, while the series stays away from its earlier normal, or for keep_firing_for"
		},
		"seconds": func(s float64) string { return humanDuration(time.Duration(s * float64(time.Second))) },
		"dur":     humanDuration,
		"labels":  sortedLabels,
		"percent": func(a, b int) int {
			if b == 0 {
				return 0
			}
			return 100 * a / b
		},
		"sub": func(a, b int) int { return a - b },
	}
}

type kv struct{ K, V string }

func sortedLabels(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		if k != labels.AlertName {
			out = append(out, kv{k, v})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.K, b.K) })
	return out
}

// num prints a value with four significant digits.
func num(v any) string {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case *float64:
		if x == nil {
			return "—"
		}
		f = *x
	case int:
		f = float64(x)
	default:
		return fmt.Sprint(v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// withUnit prints a value in its explanation unit: seconds as ms below one
// second, ratios as percent.
func withUnit(v float64, unit string) string {
	switch unit {
	case "s":
		if math.Abs(v) < 1 {
			return num(v*1000) + " ms"
		}
		return num(v) + " s"
	case "ratio":
		return num(v*100) + " %"
	case "":
		return num(v)
	}
	return num(v) + " " + unit
}

func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + humanDuration(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Truncate(time.Second).String()
}
