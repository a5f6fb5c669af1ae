// Package ui is the agent's web console: server-rendered pages for the
// alerts with their explanations and live charts, the rules and detectors,
// the status-update drafts, silences, and the agent's status, config and
// targets. It reads the same /api/v1 handlers that clients use, called
// in-process, so the console never shows anything the API does not; charts
// come from the rules engine's live history (the replay --plot picture).
//
// Pages are html/template with a little vanilla JavaScript and CSS
// embedded in the binary: no build step, nothing fetched from elsewhere.
// Every page re-fetches its own content as a fragment (?fragment=1) every
// few seconds, and every link and fetch goes through the route prefix.
package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Status is what the status page says about the agent.
type Status struct {
	Version, Revision, GoVersion string
	StartedAt                    time.Time
	// ConfigFile is the config's path, or "<embedded default>".
	ConfigFile string
	// LastReloadOK and LastReloadAt describe the last reload (or start).
	LastReloadOK bool
	LastReloadAt time.Time
}

// Target is one collector target, as Prometheus' /targets shows it.
type Target struct {
	Job, Instance string
	Labels        labels.Labels
	Interval      time.Duration
	Health        string // up, down, unknown
	LastScrape    time.Time
	LastDuration  time.Duration
	LastError     string
}

// Options are what the console reads. The handlers are the agent's own
// API handlers; any that is nil leaves its page empty with a note.
type Options struct {
	// Prefix is the route prefix without trailing slash ("" or "/seismo");
	// every link and fetch the pages make starts with it.
	Prefix string
	// Alerts, Rules, Silences and Drafts serve GET /api/v1/alerts,
	// /api/v1/rules, /api/v1/silences and /api/v1/drafts.
	Alerts, Rules, Silences, Drafts http.Handler
	// SilencedBy returns the IDs of the active silences that mute an
	// alert with the given labels.
	SilencedBy func(alert labels.Labels) []string
	// Chart writes the SVG chart of the alert with the given labels.
	Chart func(w io.Writer, alert labels.Labels) error
	// Targets lists the collectors' targets.
	Targets func() []Target
	// Status describes the agent; Config renders its config as YAML with
	// secrets redacted.
	Status func() Status
	Config func() ([]byte, error)
	// Refresh is how often pages re-fetch their content; 0 means 5s.
	Refresh time.Duration
	// CacheFor is how long a rendered page is served again to every
	// client that asks for the same URL, so that many open consoles (or a
	// flood of requests) cost one rendering per page per CacheFor. 0 means
	// 1s; negative turns the cache off.
	CacheFor time.Duration
	Logger   *slog.Logger
	Now      func() time.Time
}

// Console serves the pages. Create it with New and mount Routes.
type Console struct {
	opts   Options
	tmpl   *template.Template
	static http.Handler
	cache  pageCache
}

// New parses the embedded templates.
func New(opts Options) (*Console, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.CacheFor == 0 {
		opts.CacheFor = time.Second
	}
	c := &Console{opts: opts, cache: pageCache{ttl: opts.CacheFor, pages: map[string]*cachedPage{}}}
	t, err := template.New("").Funcs(c.funcs()).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	c.tmpl = t
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return c, nil
}

// Routes returns the console's patterns and handlers, to be mounted on the
// agent's server with web.Server.HandleConsole (which adds the route
// prefix and the console's own concurrency slots).
func (c *Console) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /{$}":           c.page("alerts", c.alertsData),
		"GET /rules":         c.page("rules", c.rulesData),
		"GET /drafts":        c.page("drafts", c.draftsData),
		"GET /silences":      c.page("silences", c.silencesData),
		"GET /status":        c.page("status", c.statusData),
		"GET /static/{file}": http.HandlerFunc(c.serveStatic),
	}
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	c.static.ServeHTTP(w, r)
}

// pageData is what every page template gets.
type pageData struct {
	Page, Title string
	Prefix      string
	RefreshMS   int64
	Now         time.Time
	Data        any
	Err         string
}

var titles = map[string]string{
	"alerts": "Alerts", "rules": "Rules", "drafts": "Drafts", "silences": "Silences", "status": "Status",
}

// page renders a whole page, or only its content for ?fragment=1 (what
// the page's script fetches to refresh itself). A page depends only on its
// URL, so one rendering serves every request for that URL within
// CacheFor; requests that arrive while it renders wait for it.
func (c *Console) page(name string, load func(r *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := c.cache.get(r.Context(), name+"?"+r.URL.RawQuery, c.opts.Now(), func() ([]byte, error) {
			// Rendered for everyone who waits: a client that leaves
			// does not cancel it.
			return c.render(name, load, r.WithContext(context.WithoutCancel(r.Context())))
		})
		if err != nil {
			if r.Context().Err() != nil {
				return // the client left
			}
			c.opts.Logger.Error("console page failed", "page", name, "err", err)
			http.Error(w, "console page failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	})
}

func (c *Console) render(name string, load func(r *http.Request) (any, error), r *http.Request) ([]byte, error) {
	pd := pageData{
		Page: name, Title: titles[name], Prefix: c.opts.Prefix,
		RefreshMS: c.opts.Refresh.Milliseconds(), Now: c.opts.Now(),
	}
	data, err := load(r)
	pd.Data = data
	if err != nil {
		pd.Err = err.Error()
	}
	tmpl := "layout"
	if r.URL.Query().Get("fragment") == "1" {
		tmpl = name
	}
	var buf bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&buf, tmpl, pd); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxCachedPages bounds the page cache; past it, entries that are done are
// dropped (URLs differ only by their query, which clients choose).
const maxCachedPages = 256

// pageCache keeps each rendered page for ttl and renders a page once for
// all the requests that want it at the same time.
type pageCache struct {
	ttl   time.Duration
	mu    sync.Mutex
	pages map[string]*cachedPage
}

type cachedPage struct {
	done chan struct{} // closed once body and err are set
	at   time.Time     // when rendering started
	body []byte
	err  error
}

// get returns the page cached under key if it is younger than ttl (waiting
// for it if it is being rendered), or renders it.
func (pc *pageCache) get(ctx context.Context, key string, now time.Time, render func() ([]byte, error)) ([]byte, error) {
	if pc.ttl < 0 {
		return render()
	}
	pc.mu.Lock()
	p, ok := pc.pages[key]
	if ok && !p.isDone() || ok && p.err == nil && now.Sub(p.at) < pc.ttl && !now.Before(p.at) {
		pc.mu.Unlock()
		select {
		case <-p.done:
			return p.body, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if len(pc.pages) >= maxCachedPages {
		for k, old := range pc.pages {
			if old.isDone() {
				delete(pc.pages, k)
			}
		}
	}
	p = &cachedPage{done: make(chan struct{}), at: now}
	pc.pages[key] = p
	pc.mu.Unlock()

	p.body, p.err = render()
	close(p.done)
	return p.body, p.err
}

func (p *cachedPage) isDone() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

var errNotWired = errors.New("not available in this agent")
