package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/rules"
)

func registerCheckRules(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "check", checkHelp).
		Command("rules", "Validate rule files; print every problem as file:line:col: group \"g\", rule N \"Name\": message and exit 1 if any.")
	files := cmd.Arg("file", "Rule file(s) to check.").Required().Strings()
	typesURL := cmd.Flag("datasource-url", "Prometheus-compatible API whose /api/v1/metadata tells counters from gauges for the warnings (default: by their names).").PlaceHolder("URL").String()
	cmd.Action(cli.action(func(ctx context.Context) error {
		return checkRules(ctx, cli, *files, *typesURL)
	}))
}

// checkRules parses each file on its own so that one broken file does not
// hide the result of the others. With typesURL, the warnings tell
// counters by that API's metric metadata (rules.LintTyped); a metadata
// call that fails is an error, as the user asked for it.
func checkRules(ctx context.Context, cli *cliEnv, files []string, typesURL string) error {
	var types rules.Types
	if typesURL != "" {
		r, err := datasource.NewRemote(datasource.RemoteConfig{Name: "check", URL: typesURL})
		if err != nil {
			return err
		}
		known, err := r.MetricTypes(ctx)
		_ = r.Close()
		if err != nil {
			return fmt.Errorf("metric types from %s: %w", typesURL, err)
		}
		types = func(_, metric string) string { return known[metric] }
	}
	failed := 0
	for _, f := range files {
		fmt.Fprintf(cli.stdout, "Checking %s\n", f)
		groups, err := rules.ParseFiles(rules.ParseOptions{}, f)
		if err != nil {
			failed++
			var es rules.Errors
			if errors.As(err, &es) {
				fmt.Fprintf(cli.stdout, "  FAILED: %d problem(s):\n", len(es))
			} else {
				fmt.Fprintln(cli.stdout, "  FAILED:")
			}
			fmt.Fprintln(cli.stdout, err)
			continue
		}
		n := 0
		for _, g := range groups {
			n += len(g.Rules)
		}
		fmt.Fprintf(cli.stdout, "  SUCCESS: %d rules found\n", n)
		for _, w := range rules.LintTyped(groups, types) {
			fmt.Fprintf(cli.stdout, "  WARNING: %v\n", w)
		}
	}
	if failed > 0 {
		return &exitError{code: 1}
	}
	return nil
}

func registerTestRules(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "test", "Run unit tests.").
		Command("rules", "Run rule unit tests (promtool's test-file format; anomaly rules too); exit 1 if any fails.")
	files := cmd.Arg("test-file", "Unit-test file(s).").Required().Strings()
	cmd.Action(cli.action(func(ctx context.Context) error {
		ok, err := rules.RunUnitTests(ctx, cli.stdout, rules.UnitTestOptions{}, *files...)
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: 1}
		}
		return nil
	}))
}

// wireRules builds the rules manager from cfg over the collection side's
// sources and registers it with the agent: its evaluation loops as a
// service, its part of reload, /api/v1/rules and /api/v1/alerts. notify
// receives alerts due for sending; recording rule results go to the store.
func wireRules(a *agent, cfg *config.Config, c *collected, notify rules.NotifyFunc) (*rules.Manager, error) {
	a.ui.history = rules.NewHistory(consoleChartWindow)
	m, err := rules.NewManager(rules.Options{
		History:     a.ui.history,
		Source:      c.local,
		Sources:     c.sources,
		Notify:      debugAlerts(a.logger, notify),
		Record:      c.record,
		DataDir:     cfg.DataDir,
		ExternalURL: cfg.HTTP.ExternalURLOrDefault(),
		Logger:      a.logger,
		Metrics:     a.metricsSet(),
	})
	if err != nil {
		return nil, err
	}
	if err := m.ApplyConfig(cfg.Rules); err != nil {
		m.Close()
		return nil, fmt.Errorf("rules:\n%w", err)
	}
	a.addService(service{name: "rules", run: m.Run, started: m.Started()})
	// Datasources reload with the rules that query them: the new sources
	// are built, the rules checked against them, and both swapped together.
	a.addReloader(reloader{name: "rules", prepare: func(_ context.Context, next *config.Config) (func(), error) {
		sources, remotes, err := c.buildSources(next.Datasources)
		if err != nil {
			return nil, fmt.Errorf("datasources: %w", err)
		}
		commit, err := m.PrepareSources(next.Rules, sources)
		if err != nil {
			return nil, err
		}
		return func() {
			commit()
			c.useSources(sources, remotes)
		}, nil
	}})
	a.web.Handle("GET /api/v1/rules", m.RulesHandler())
	a.web.Handle("GET /api/v1/alerts", m.AlertsHandler())
	a.ui.rules, a.ui.alerts = m.RulesHandler(), m.AlertsHandler()
	return m, nil
}

// debugAlerts logs each alert handed to next at debug level.
func debugAlerts(logger *slog.Logger, next rules.NotifyFunc) rules.NotifyFunc {
	logger = logger.With("component", "rules")
	return func(ctx context.Context, alerts ...*model.Alert) {
		if logger.Enabled(ctx, slog.LevelDebug) {
			for _, al := range alerts {
				logAlert(logger, slog.LevelDebug, "alert sent", al)
			}
		}
		next(ctx, alerts...)
	}
}

func logAlert(logger *slog.Logger, level slog.Level, msg string, al *model.Alert) {
	logger.Log(context.Background(), level, msg, "alertname", al.Name(), "state", al.State.String(),
		"labels", al.Labels.String(), "value", al.Value, "flapping", al.Flapping, "starts_at", al.StartsAt)
}
