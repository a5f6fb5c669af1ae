package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/oklog/run"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/web"
)

// A service is one long-running subsystem in the agent's run group.
type service struct {
	name string
	// run works until ctx ends and then returns nil; any other return stops
	// the whole agent.
	run func(ctx context.Context) error
	// started, if not nil, is closed once the service is serving; /-/ready
	// and systemd's READY=1 wait for every started channel.
	started <-chan struct{}
}

// A reloader is one subsystem's part of a config reload. Reload is
// build-then-swap across all subsystems:
//
//  1. the new config is loaded and fully validated;
//  2. every reloader's prepare builds that subsystem's next state from it
//     without touching the running state (no goroutines started, nothing
//     that would need releasing if another subsystem fails);
//  3. only if every prepare succeeded, every commit runs, in order. A commit
//     must not fail and should be quick (swap a pointer, hand state over).
//
// If any step fails, nothing is committed: the old config keeps running.
type reloader struct {
	name    string
	prepare func(ctx context.Context, cfg *config.Config) (commit func(), err error)
}

// agentOptions are what newAgent needs; tests fill them with fakes.
type agentOptions struct {
	logger *slog.Logger
	// load reads the config again from the same file, environment and
	// flags as at start-up.
	load func() (*config.Config, error)
	// notify sends a state to systemd (daemon.SdNotify); nil does nothing.
	notify func(state string)
	// watchdog is the systemd watchdog interval; 0 disables pings.
	watchdog time.Duration
	now      func() time.Time
}

// agent owns the running subsystems, the HTTP server and the current config,
// and serialises reloads in its main loop.
type agent struct {
	opts    agentOptions
	logger  *slog.Logger
	web     *web.Server
	set     *metrics.Set // the agent's own metrics (seismo_build_info, seismo_config_*)
	version buildVersion

	mu        sync.Mutex // guards cfg
	cfg       *config.Config
	services  []service
	reloaders []reloader

	// hup coalesces reload requests from SIGHUP; reloads carries requests
	// from POST /-/reload, which wait for the result.
	hup     chan struct{}
	reloads chan chan error
	// stopped is closed when the main loop has returned, so that reload
	// requests made during shutdown fail at once instead of hanging.
	stopped chan struct{}

	// startedAt is when the agent was built, for the console's uptime.
	startedAt time.Time
	// ui collects, while wire runs, what the console reads (console.go).
	ui consoleSources

	reloadOK      *metrics.Gauge
	reloadSuccess *metrics.Gauge
	reloadsTotal  *metrics.Counter
	reloadsFailed *metrics.Counter
}

// newAgent creates the agent for cfg with its HTTP server bound. Subsystems
// are added by wire (see run.go) before run is called.
func newAgent(cfg *config.Config, opts agentOptions) (*agent, error) {
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.notify == nil {
		opts.notify = func(string) {}
	}
	a := &agent{
		opts:    opts,
		logger:  opts.logger,
		set:     metrics.NewSet(),
		version: getBuildVersion(),
		cfg:     cfg,
		hup:     make(chan struct{}, 1),
		reloads: make(chan chan error),
		stopped: make(chan struct{}),
	}
	a.startedAt = opts.now()
	a.set.NewGauge(fmt.Sprintf(`seismo_build_info{version=%q,revision=%q,goversion=%q}`,
		a.version.Version, a.version.Revision, a.version.GoVersion), func() float64 { return 1 })
	a.reloadOK = a.set.NewGauge(`seismo_config_last_reload_successful`, nil)
	a.reloadSuccess = a.set.NewGauge(`seismo_config_last_reload_success_timestamp_seconds`, nil)
	a.reloadsTotal = a.set.NewCounter(`seismo_config_reloads_total`)
	a.reloadsFailed = a.set.NewCounter(`seismo_config_reload_failures_total`)
	a.reloadOK.Set(1) // the start-up config loaded, or we would not be here
	a.reloadSuccess.Set(float64(opts.now().Unix()))

	httpSet := metrics.NewSet()
	access, err := web.NewAccess(cfg.HTTP.AccessConfig())
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	api := cfg.HTTP.APIPool().Limits()
	w, err := web.New(web.Options{
		ListenAddress:         cfg.HTTP.ListenAddress,
		MaxConcurrentRequests: api.MaxConcurrentRequests,
		MaxQueuedRequests:     api.MaxQueuedRequests,
		QueueTimeout:          api.QueueTimeout,
		Console:               cfg.HTTP.Console.Limits(),
		RoutePrefix:           cfg.HTTP.RoutePrefixOrDefault(),
		Reload:                a.requestReload,
		Set:                   httpSet,
		Logger:                opts.logger.With("component", "web"),
		// A quarter of the drain budget: the HTTP server stops last.
		ShutdownTimeout: cfg.ShutdownTimeout / 4,
		Access:          access,
		Limits:          cfg.HTTP.Limits(),
	})
	if err != nil {
		return nil, err
	}
	w.RegisterMetrics(a.set)
	a.web = w
	warnCleartext(opts.logger, cfg.HTTP.ListenAddress, access)
	return a, nil
}

// warnCleartext warns when credentials would cross a network unencrypted:
// authentication without TLS on an address other than loopback.
func warnCleartext(logger *slog.Logger, listen string, access *web.Access) {
	host, _, _ := net.SplitHostPort(listen)
	ip := net.ParseIP(host)
	if access.AuthRequired() && !access.TLS() && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		logger.Warn("http authentication is configured without TLS on a non-loopback address: passwords and tokens cross the network in clear text; add tls_server_config to the web config file",
			"listen_address", listen)
	}
}

// config returns the config currently in force.
func (a *agent) config() *config.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}

// addService adds a subsystem to the run group.
func (a *agent) addService(s service) { a.services = append(a.services, s) }

// addReloader adds a subsystem's part of reload; reloaders commit in the
// order they were added.
func (a *agent) addReloader(r reloader) { a.reloaders = append(a.reloaders, r) }

// metricsSet returns a new metric set shown on /metrics, for one subsystem.
func (a *agent) metricsSet() *metrics.Set {
	s := metrics.NewSet()
	a.web.RegisterMetrics(s)
	return s
}

// run runs the HTTP server, every service and the main loop until ctx ends
// or one of them fails, and returns the first failure (nil after a clean
// stop).
//
// Shutdown is ordered: readiness goes to 503, then the services stop one at
// a time in the order they were added (data-flow order, so collectors and
// rules stop before notify, which can still deliver what they sent), then
// the main loop (which keeps feeding the watchdog during the drain), and the
// HTTP server last, so /-/healthy answers until the end.
func (a *agent) run(ctx context.Context) error {
	defer a.web.Close()

	// stage is one member of the shutdown order, with its own context.
	type stage struct {
		ctx    context.Context
		cancel context.CancelFunc
		done   chan struct{}
	}
	newStage := func() *stage {
		c, cancel := context.WithCancel(context.WithoutCancel(ctx))
		return &stage{ctx: c, cancel: cancel, done: make(chan struct{})}
	}
	services := make([]*stage, len(a.services))
	for i := range services {
		services[i] = newStage()
	}
	loop, web := newStage(), newStage()
	order := append(append(services, loop), web)
	stop := sync.OnceFunc(func() {
		a.web.SetReady(false)
		a.opts.notify("STOPPING=1")
		for _, st := range order {
			st.cancel()
			<-st.done
		}
	})

	var g run.Group
	// The first actor turns the parent context's end into a shutdown.
	parentDone := make(chan struct{})
	g.Add(func() error {
		select {
		case <-ctx.Done():
		case <-parentDone:
		}
		return nil
	}, func(error) { close(parentDone); stop() })
	add := func(st *stage, name string, fn func(context.Context) error) {
		g.Add(func() error {
			defer close(st.done)
			err := fn(st.ctx)
			if err != nil && !(errors.Is(err, context.Canceled) && st.ctx.Err() != nil) {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}, func(error) { stop() })
	}
	for i, s := range a.services {
		add(services[i], s.name, s.run)
	}
	add(loop, "main loop", a.loop)
	add(web, "http", a.web.Run)
	err := g.Run()
	// Every stage has finished: the store's last snapshot and the rules'
	// state are written, so a log ends with this line after a clean stop.
	// An error is the caller's to report.
	if err == nil {
		a.logger.Info("agent stopped")
	}
	return err
}

// loop is the agent's main loop: it declares readiness once every service
// has started, performs reloads one at a time, and pings the systemd
// watchdog, so a loop stuck in a reload stops the pings and gets the
// agent restarted.
func (a *agent) loop(ctx context.Context) error {
	defer close(a.stopped)
	var ping <-chan time.Time
	if a.opts.watchdog > 0 {
		t := time.NewTicker(a.opts.watchdog / 2)
		defer t.Stop()
		ping = t.C
	}
	// Services are waited for inside the loop so the watchdog keeps being
	// pinged while a slow one starts.
	pending := make([]<-chan struct{}, 0, len(a.services))
	for _, s := range a.services {
		if s.started != nil {
			pending = append(pending, s.started)
		}
	}
	var started <-chan struct{}
	ready := func() {
		a.web.SetReady(true)
		a.opts.notify("READY=1")
		a.logger.Info("agent ready", "listen_address", a.web.Addr().String())
	}
	if len(pending) == 0 {
		ready()
	} else {
		started = pending[0]
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-started:
			pending = pending[1:]
			if len(pending) > 0 {
				started = pending[0]
			} else {
				started = nil
				ready()
			}
		case <-ping:
			a.opts.notify("WATCHDOG=1")
		case <-a.hup:
			_ = a.reload(ctx) // reload logs and counts its own failure
		case reply := <-a.reloads:
			reply <- a.reload(ctx)
		}
	}
}

// errAgentStopped answers reload requests made during shutdown.
var errAgentStopped = errors.New("agent is shutting down")

// requestReload asks the main loop to reload and waits for the outcome or
// for ctx. It is what POST /-/reload calls.
func (a *agent) requestReload(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case a.reloads <- reply:
	case <-a.stopped:
		return errAgentStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hangup asks for a reload without waiting (SIGHUP). Requests made while one
// is pending are merged into it.
func (a *agent) hangup() {
	select {
	case a.hup <- struct{}{}:
	default:
	}
}

// loadForReload loads the config for a reload. A config file that sets
// nothing where the running one set something is most likely being
// written (see configutil.Blank): loaded as it is, it would swap every
// rule and receiver for the defaults (a SIGHUP storm drill lost five
// resolves that way). It is read again and refused if it stays blank. A
// config that was blank from the start stays allowed.
func (a *agent) loadForReload(ctx context.Context) (*config.Config, error) {
	for try := 0; ; try++ {
		cfg, err := a.opts.load()
		if err != nil || !cfg.FileEmpty || a.config().FileEmpty {
			return cfg, err
		}
		if try == configutil.BlankRereads {
			return nil, fmt.Errorf("config %s sets no key, where the running config set some (a write in progress? write the file elsewhere and rename it into place)", cfg.File)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(configutil.BlankRereadDelay):
		}
	}
}

// reload loads the config again and applies it build-then-swap (see
// reloader). On failure the old config keeps running.
func (a *agent) reload(ctx context.Context) error {
	start := a.opts.now()
	a.opts.notify(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", monotonicUsec()))
	defer a.opts.notify("READY=1")
	a.reloadsTotal.Inc()

	err := a.applyNewConfig(ctx)
	if err != nil {
		a.reloadsFailed.Inc()
		a.reloadOK.Set(0)
		a.logger.Error("config reload failed; the previous config keeps running", "err", err)
		return err
	}
	a.reloadOK.Set(1)
	a.reloadSuccess.Set(float64(a.opts.now().Unix()))
	a.logger.Info("config reloaded", "config", configName(a.config()), "duration", a.opts.now().Sub(start))
	return nil
}

func (a *agent) applyNewConfig(ctx context.Context) error {
	cfg, err := a.loadForReload(ctx)
	if err != nil {
		return err
	}
	commits := make([]func(), 0, len(a.reloaders))
	for _, r := range a.reloaders {
		commit, err := r.prepare(ctx, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		if commit != nil {
			commits = append(commits, commit)
		}
	}
	for _, commit := range commits {
		commit()
	}
	a.mu.Lock()
	a.cfg = cfg
	a.mu.Unlock()
	return nil
}
