package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/config"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/rules"
	"github.com/seismo-agent/seismo/store"
)

type replayFlags struct {
	ruleFiles   []string
	builtin     bool
	noBuiltin   bool
	openMetrics string
	csv         string
	remoteURL   string
	start, end  string
	output      string
	plot        string
	interval    time.Duration
	configFile  string
}

func registerReplay(app *kingpin.Application, cli *cliEnv) {
	cmd := app.Command("replay", "Evaluate rules over recorded data as fast as it allows and report every alert transition.")
	f := &replayFlags{}
	cmd.Arg("rule-file", "Rule file(s). Without any, the built-in pack is replayed.").StringsVar(&f.ruleFiles)
	cmd.Flag("builtin", "Also replay the built-in rule pack (default when no rule file is given).").BoolVar(&f.builtin)
	cmd.Flag("no-builtin", "Never replay the built-in rule pack.").BoolVar(&f.noBuiltin)
	cmd.Flag("openmetrics", "Recording in OpenMetrics text with timestamps (as promtool tsdb create-blocks-from openmetrics reads).").
		PlaceHolder("FILE").StringVar(&f.openMetrics)
	cmd.Flag("csv", "Recording as CSV: a header time,<series>,... then one row per instant (RFC 3339 or Unix seconds).").
		PlaceHolder("FILE").StringVar(&f.csv)
	cmd.Flag("remote-url", "Evaluate against a Prometheus-compatible API instead of a recording (needs --start and --end).").
		PlaceHolder("URL").StringVar(&f.remoteURL)
	cmd.Flag("start", "Start of the replay (RFC 3339 or Unix seconds); default the recording's start.").StringVar(&f.start)
	cmd.Flag("end", "End of the replay; default the recording's end.").StringVar(&f.end)
	cmd.Flag("interval", "Evaluation interval of the built-in pack and of groups without one (default 15s, or the agent config's).").DurationVar(&f.interval)
	cmd.Flag("config", "Agent config whose rules section (files, built-in pack, names) is replayed; rule-file arguments are added.").
		PlaceHolder("FILE").StringVar(&f.configFile)
	cmd.Flag("output", "Output format: text or json (one object per line).").Default("text").EnumVar(&f.output, "text", "json")
	cmd.Flag("plot", "Write an SVG chart of every alerted series with its baseline band and alert spans.").PlaceHolder("FILE.svg").StringVar(&f.plot)
	cmd.Action(cli.action(func(ctx context.Context) error {
		return runReplay(ctx, cli, f)
	}))
}

func runReplay(ctx context.Context, cli *cliEnv, f *replayFlags) error {
	inputs := 0
	for _, in := range []string{f.openMetrics, f.csv, f.remoteURL} {
		if in != "" {
			inputs++
		}
	}
	if inputs != 1 {
		return &exitError{code: exitUsage, err: errors.New("replay: give exactly one of --openmetrics, --csv or --remote-url")}
	}
	if f.remoteURL != "" {
		return runRemoteReplay(ctx, cli, f)
	}
	st, err := store.New(store.Options{Config: store.Config{Retention: 100 * 365 * 24 * time.Hour, MaxSeries: 1 << 20}})
	if err != nil {
		return err
	}
	loadStart := time.Now()
	var stats rules.LoadStats
	if f.openMetrics != "" {
		b, err := os.ReadFile(f.openMetrics)
		if err != nil {
			return err
		}
		stats, err = rules.LoadOpenMetrics(st, b)
		if err != nil {
			return fmt.Errorf("%s: %w", f.openMetrics, err)
		}
	} else {
		fh, err := os.Open(f.csv)
		if err != nil {
			return err
		}
		stats, err = rules.LoadCSV(st, fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.csv, err)
		}
	}
	if stats.Samples == 0 {
		return errors.New("replay: the recording holds no samples")
	}
	loadTime := time.Since(loadStart)
	start, end := stats.Start, stats.End
	if f.start != "" {
		if start, err = parseReplayTime(f.start); err != nil {
			return fmt.Errorf("--start: %w", err)
		}
	}
	if f.end != "" {
		if end, err = parseReplayTime(f.end); err != nil {
			return fmt.Errorf("--end: %w", err)
		}
	}
	res, evalTime, err := replayAndReport(ctx, cli, f, rules.NewQueryableSource(st), rules.RecordTo(st), start, end)
	if err != nil {
		return err
	}
	fmt.Fprintf(cli.stderr, "replayed %d samples of %d series over %s: %d evaluations, %d transitions; load %s, evaluation %s (%.0f samples/s)\n",
		stats.Samples, stats.Series, end.Sub(start), res.Evaluations, len(res.Transitions),
		loadTime.Round(time.Millisecond), evalTime.Round(time.Millisecond),
		float64(stats.Samples)/(loadTime+evalTime).Seconds())
	return nil
}

// runRemoteReplay evaluates the rules against a remote API at each tick.
func runRemoteReplay(ctx context.Context, cli *cliEnv, f *replayFlags) error {
	if f.start == "" || f.end == "" {
		return &exitError{code: exitUsage, err: errors.New("replay: --remote-url needs --start and --end")}
	}
	start, err := parseReplayTime(f.start)
	if err != nil {
		return fmt.Errorf("--start: %w", err)
	}
	end, err := parseReplayTime(f.end)
	if err != nil {
		return fmt.Errorf("--end: %w", err)
	}
	src, err := datasource.NewRemote(datasource.RemoteConfig{Name: "remote", URL: f.remoteURL, Timeout: datasource.DefaultRemoteTimeout})
	if err != nil {
		return err
	}
	res, evalTime, err := replayAndReport(ctx, cli, f, src, nil, start, end)
	if err != nil {
		return err
	}
	fmt.Fprintf(cli.stderr, "replayed %s against %s: %d evaluations, %d transitions in %s (%.0f evaluations/s)\n",
		end.Sub(start), f.remoteURL, res.Evaluations, len(res.Transitions), evalTime.Round(time.Millisecond),
		float64(res.Evaluations)/evalTime.Seconds())
	return nil
}

// replayAndReport runs the replay over src, prints transitions as they
// happen and writes the plot; it returns the result and the time spent.
func replayAndReport(ctx context.Context, cli *cliEnv, f *replayFlags, src datasource.Source,
	record func(context.Context, time.Time, promql.Vector) error, start, end time.Time) (*rules.ReplayResult, time.Duration, error) {
	cfg := rules.DefaultConfig()
	if f.configFile != "" {
		agentCfg, err := config.Load(config.LoadOptions{File: f.configFile})
		if err != nil {
			return nil, 0, fmt.Errorf("load config:\n%w", err)
		}
		cfg = agentCfg.Rules
		cfg.Builtin.Enabled = cfg.Builtin.Enabled && !f.noBuiltin || f.builtin
	} else {
		cfg.Builtin.Enabled = !f.noBuiltin && (f.builtin || len(f.ruleFiles) == 0)
	}
	cfg.Files = append(cfg.Files, f.ruleFiles...)
	if f.interval > 0 {
		cfg.EvaluationInterval = f.interval
		cfg.Builtin.Interval = f.interval
	}

	out := &transitionWriter{w: cli.stdout, json: f.output == "json"}
	opts := rules.ReplayOptions{
		Config: cfg, Source: src, Record: record, Start: start, End: end,
		OnTransition: out.write, Trace: f.plot != "",
	}
	if isTerminal(cli.stderr) {
		opts.Progress = func(at time.Time) {
			fmt.Fprintf(cli.stderr, "\rreplayed to %s (%.0f%%)", at.UTC().Format(time.RFC3339), 100*at.Sub(start).Seconds()/end.Sub(start).Seconds())
		}
	}
	evalStart := time.Now()
	res, err := rules.Replay(ctx, opts)
	if opts.Progress != nil {
		fmt.Fprint(cli.stderr, "\r\033[K")
	}
	if err != nil {
		return nil, 0, err
	}
	if out.err != nil {
		return nil, 0, out.err
	}
	evalTime := time.Since(evalStart)
	if f.plot != "" {
		var b bytes.Buffer
		if err := rules.WriteSVG(&b, res); err != nil {
			return nil, 0, err
		}
		if err := os.WriteFile(f.plot, b.Bytes(), 0o644); err != nil {
			return nil, 0, err
		}
	}
	if !out.json {
		printReplaySummary(cli.stdout, res, end)
	}
	return res, evalTime, nil
}

// printReplaySummary tells, per alert, how often it fired and for how long
// in total: the backtest's answer at a glance.
func printReplaySummary(w io.Writer, res *rules.ReplayResult, end time.Time) {
	type tally struct {
		fired   int
		firing  time.Duration
		since   time.Time
		pending int
		// suppressed counts firings that were not sent: a cause fired.
		suppressed int
	}
	var order []string
	byAlert := map[string]*tally{}
	for _, tr := range res.Transitions {
		k := tr.Rule + " " + tr.Labels.DropMetricName().String()
		t := byAlert[k]
		if t == nil {
			t = &tally{}
			byAlert[k] = t
			order = append(order, k)
		}
		switch {
		case tr.To == model.StateFiring:
			t.fired++
			t.since = tr.Time
			if tr.SuppressedBy != "" {
				t.suppressed++
			}
		case tr.From == model.StateFiring && !t.since.IsZero():
			t.firing += tr.Time.Sub(t.since)
			t.since = time.Time{}
		}
		if tr.To == model.StatePending {
			t.pending++
		}
	}
	fmt.Fprintln(w, "\nsummary:")
	n := 0
	for _, k := range order {
		t := byAlert[k]
		if !t.since.IsZero() {
			t.firing += end.Sub(t.since)
		}
		if t.fired == 0 && t.pending == 0 {
			continue
		}
		n++
		sup := ""
		if t.suppressed > 0 {
			sup = fmt.Sprintf(" (%d suppressed: not sent)", t.suppressed)
		}
		fmt.Fprintf(w, "  %s: fired %d time(s)%s, firing %s in total\n", k, t.fired, sup, t.firing)
	}
	if n == 0 {
		fmt.Fprintln(w, "  no alert fired")
	}
}

func parseReplayTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	var sec float64
	if _, err := fmt.Sscanf(s, "%g", &sec); err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 or Unix seconds, got %q", s)
	}
	return time.Unix(0, int64(sec*1e9)).UTC(), nil
}

// transitionWriter prints transitions as text lines or JSON objects.
type transitionWriter struct {
	w    io.Writer
	json bool
	err  error
}

type jsonTransition struct {
	Time        time.Time         `json:"time"`
	Alert       string            `json:"alert"`
	Group       string            `json:"group"`
	Labels      map[string]string `json:"labels"`
	From        string            `json:"from"`
	State       string            `json:"state"`
	Value       float64           `json:"value"`
	Score       float64           `json:"score"`
	Expected    float64           `json:"expected"`
	Lower       float64           `json:"lower"`
	Upper       float64           `json:"upper"`
	Explanation *json.RawMessage  `json:"explanation,omitempty"`
	// SuppressedBy names the rule whose alert suppresses this one: it
	// would not be sent. SuppressedHang: as one hang with it.
	SuppressedBy   string `json:"suppressedBy,omitempty"`
	SuppressedHang bool   `json:"suppressedHang,omitempty"`
}

func (tw *transitionWriter) write(tr rules.Transition) {
	if tw.err != nil {
		return
	}
	if tw.json {
		jt := jsonTransition{
			Time: tr.Time.UTC(), Alert: tr.Rule, Group: tr.Group, Labels: tr.Labels.Map(),
			From: tr.From.String(), State: tr.To.String(), Value: finite(tr.Value),
			Score: finite(tr.Score), Expected: finite(tr.Expected), Lower: finite(tr.Lower), Upper: finite(tr.Upper),
			SuppressedBy: tr.SuppressedBy, SuppressedHang: tr.SuppressedHang,
		}
		if tr.Explanation != nil {
			if b, err := json.Marshal(tr.Explanation); err == nil {
				raw := json.RawMessage(b)
				jt.Explanation = &raw
			}
		}
		b, err := json.Marshal(jt)
		if err != nil {
			tw.err = err
			return
		}
		_, tw.err = fmt.Fprintf(tw.w, "%s\n", b)
		return
	}
	if tr.To == model.StateInactive || tr.To == model.StateWarmingUp {
		return // JSON output has these; text keeps to what people act on
	}
	lbls := tr.Labels.DropMetricName()
	line := fmt.Sprintf("%s  %-10s %s %s value=%s", tr.Time.UTC().Format(time.RFC3339), strings.ToUpper(tr.To.String()), tr.Rule, lbls.String(), fmtFloat(tr.Value))
	if tr.Score != 0 {
		line += fmt.Sprintf(" score=%.2f", tr.Score)
	}
	if tr.SuppressedBy != "" {
		line += " suppressed_by=" + tr.SuppressedBy
		if tr.SuppressedHang {
			line += " (one hang)"
		}
	}
	if tr.Explanation != nil && tr.Explanation.Summary != "" {
		line += "\n    " + tr.Explanation.Summary
	}
	_, tw.err = fmt.Fprintln(tw.w, line)
}

func fmtFloat(v float64) string { return fmt.Sprintf("%.4g", v) }

// finite maps NaN and ±Inf to 0 so that the JSON stays valid.
func finite(v float64) float64 {
	if v != v || v > 1e308 || v < -1e308 {
		return 0
	}
	return v
}
