package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/web"
)

// runFlags are the flags of "seismo run". Flags override SEISMO_*
// environment variables, which override the config file.
type runFlags struct {
	configFile string
	// overrides maps config key paths to flags; only flags the user set
	// are applied.
	overrides map[string]*string
}

func registerRun(app *kingpin.Application, cli *cliEnv) {
	cmd := app.Command("run", "Run the agent (without --config: the embedded default config). "+
		"Any config key can also be set by a SEISMO_* environment variable: "+
		"SEISMO_HTTP__LISTEN_ADDRESS sets http.listen_address (\"__\" is one level deeper). "+
		"Precedence: flags > environment > file. SIGHUP, or POST /-/reload with http.enable_lifecycle, reloads the config.")
	f := &runFlags{overrides: map[string]*string{}}
	cmd.Flag("config", "Agent config file (YAML). Relative paths inside it are resolved against its directory.").
		PlaceHolder("FILE").StringVar(&f.configFile)
	// Each override flag sets one config key; add more here as needed.
	for _, o := range []struct{ flag, key, help string }{
		{"http.listen-address", "http.listen_address", "Address to serve HTTP on (overrides http.listen_address)."},
		{"web.config.file", "http.web_config_file", "Web config file (Prometheus' format) with TLS and basic-auth users (overrides http.web_config_file)."},
		{"log.level", "log.level", "Log level: debug, info, warn, error (overrides log.level)."},
		{"log.format", "log.format", "Log format: text or json (overrides log.format)."},
		{"data-dir", "data_dir", "Directory for persistent state (overrides data_dir)."},
	} {
		f.overrides[o.key] = cmd.Flag(o.flag, o.help).PlaceHolder("VALUE").String()
	}
	cmd.Action(cli.action(func(ctx context.Context) error {
		return runAgent(ctx, cli, f)
	}))
}

// loadOptions is what config.Load reads at start-up and on every reload.
func (f *runFlags) loadOptions(environ []string) config.LoadOptions {
	flags := map[string]any{}
	for key, v := range f.overrides {
		if *v != "" {
			flags[key] = *v
		}
	}
	return config.LoadOptions{File: f.configFile, Env: environ, Flags: flags}
}

// runAgent loads the config, builds the agent and runs it until SIGINT or
// SIGTERM. The first such signal drains within shutdown_timeout; a second
// one, or the timeout, exits at once.
func runAgent(ctx context.Context, cli *cliEnv, f *runFlags) error {
	// Subscribe first so that a signal during start-up is not lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	load := func() (*config.Config, error) { return config.Load(f.loadOptions(cli.environ)) }
	cfg, err := load()
	if err != nil {
		return fmt.Errorf("load config:\n%w", err)
	}
	logger, level, err := newLogger(cli.stderr, cfg.Log)
	if err != nil {
		return err
	}
	logger.Info("starting seismo", "version", getBuildVersion().Version, "config", configName(cfg))
	tuneGC := setAgentGC(cli.environ)

	a, err := newAgent(cfg, agentOptions{
		logger:   logger,
		load:     load,
		notify:   sdNotify,
		watchdog: sdWatchdog(),
	})
	if err != nil {
		return err
	}
	if err := wire(a, cfg, level); err != nil {
		a.web.Close()
		return err
	}
	var steps []func()
	var untune func()
	if tuneGC {
		steps = append(steps, (&headroom{cur: agentGCPercent, live: liveHeap}).step)
	}
	if !envSet(cli.environ, "GOMAXPROCS") && runtime.GOMAXPROCS(0) > 1 {
		f := newProcsFollower(newProcsPolicy(tuneTick, procsQuiet, procsWiden, procsNarrow), processCPU, logger)
		steps, untune = append(steps, f.step), f.stop
	}
	if len(steps) > 0 {
		a.addService(service{name: "runtime", run: tuneRuntime(tuneTick, untune, steps...)})
	}

	done := make(chan error, 1)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() { done <- a.run(runCtx) }()

	for {
		select {
		case err := <-done:
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				logger.Info("SIGHUP received, reloading config")
				a.hangup()
				continue
			}
			timeout := a.config().ShutdownTimeout
			logger.Info("shutting down", "signal", sig.String(), "timeout", timeout)
			cancel()
			return drain(logger, done, sigs, timeout)
		}
	}
}

// drain waits for the agent to stop, at most timeout; another SIGINT or
// SIGTERM cuts the wait short.
func drain(logger *slog.Logger, done <-chan error, sigs <-chan os.Signal, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case err := <-done:
			return err // the agent logs its clean stop
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				continue // too late to reload
			}
			return &exitError{code: 1, err: fmt.Errorf("second signal (%s) during shutdown: exiting at once", sig)}
		case <-deadline.C:
			return &exitError{code: 1, err: errors.New("shutdown did not finish within shutdown_timeout: exiting anyway")}
		}
	}
}

// wire builds every subsystem from cfg and registers it with the agent: its
// Run in the run group (a.addService), its part of reload (a.addReloader),
// its HTTP handlers (a.web.Handle) and its metrics (a.metricsSet). Add new
// subsystems here, in data-flow order (collectors, store, rules, notify).
func wire(a *agent, cfg *config.Config, level *slog.LevelVar) error {
	a.addReloader(reloader{name: "log", prepare: func(_ context.Context, next *config.Config) (func(), error) {
		lvl, err := config.ParseLevel(next.Log.Level)
		if err != nil {
			return nil, err // unreachable after Validate; kept for safety
		}
		cur := a.config()
		if next.Log.Format != cur.Log.Format {
			a.logger.Warn("log.format changed; restart seismo to apply it", "old", cur.Log.Format, "new", next.Log.Format)
		}
		return func() { level.Set(lvl) }, nil
	}})
	a.addReloader(httpReloader(a))
	if err := checkDataDir(cfg.DataDir); err != nil {
		return err
	}
	// Collection side: store, collectors, datasources and /api/v1/query.
	// Its result (store, local and named sources, record) is what the
	// rules engine reads.
	c, err := wireCollect(a, cfg)
	if err != nil {
		return err
	}
	notifyFn, notifySvc, err := wireNotify(a, cfg)
	if err != nil {
		return err
	}
	if _, err := wireRules(a, cfg, c, notifyFn); err != nil {
		return err
	}
	a.addService(notifySvc)
	return wireConsole(a)
}

// checkDataDir creates the data directory if needed and makes sure it is
// writable, so that a wrong data_dir fails at start-up and not at the first
// alert.
func checkDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("data_dir %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func configName(cfg *config.Config) string {
	if cfg.File == "" {
		return "<embedded default>"
	}
	return cfg.File
}

// signalContext returns a context cancelled by SIGINT or SIGTERM, for
// commands other than run (which handles its own signals).
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
}

// httpReloader applies the http section on reload: access control at once,
// and a warning for each setting that needs a restart.
func httpReloader(a *agent) reloader {
	return reloader{name: "http", prepare: func(_ context.Context, next *config.Config) (func(), error) {
		cur := a.config()
		if next.HTTP.ListenAddress != cur.HTTP.ListenAddress {
			a.logger.Warn("http.listen_address changed; restart seismo to apply it",
				"old", cur.HTTP.ListenAddress, "new", next.HTTP.ListenAddress)
		}
		if next.HTTP.RoutePrefixOrDefault() != cur.HTTP.RoutePrefixOrDefault() {
			a.logger.Warn("http.route_prefix changed; restart seismo to apply it",
				"old", cur.HTTP.RoutePrefixOrDefault(), "new", next.HTTP.RoutePrefixOrDefault())
		}
		if next.HTTP.APIPool() != cur.HTTP.APIPool() {
			a.logger.Warn("http.max_concurrent_requests, max_queued_requests or queue_timeout changed; restart seismo to apply them")
		}
		if next.HTTP.Console != cur.HTTP.Console {
			a.logger.Warn("http.console (slots, queue or pace) changed; restart seismo to apply it")
		}
		if next.HTTP.Limits() != cur.HTTP.Limits() || next.HTTP.QueryTimeout != cur.HTTP.QueryTimeout ||
			next.HTTP.QueryMaxSamples != cur.HTTP.QueryMaxSamples || next.HTTP.QueryMaxPoints != cur.HTTP.QueryMaxPoints ||
			next.HTTP.QueryMaxConcurrency != cur.HTTP.QueryMaxConcurrency {
			a.logger.Warn("http timeouts or size limits changed; restart seismo to apply them")
		}
		// TLS, users, the bearer token and the lifecycle and admin switches
		// apply at once; a bad web config file fails the whole reload.
		access, err := web.NewAccess(next.HTTP.AccessConfig())
		if err != nil {
			return nil, err
		}
		return func() {
			a.web.SetAccess(access)
			warnCleartext(a.logger, cur.HTTP.ListenAddress, access) // the address in force
		}, nil
	}}
}
