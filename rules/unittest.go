package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/detect"
	smodel "github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/store"
)

// unitTestFile is promtool's rule unit-test file format.
type unitTestFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	GroupEvalOrder     []string       `yaml:"group_eval_order"`
	Tests              []unitTestCase `yaml:"tests"`
}

type unitTestCase struct {
	Name           string            `yaml:"name"`
	Interval       model.Duration    `yaml:"interval"`
	InputSeries    []inputSeries     `yaml:"input_series"`
	AlertRuleTests []alertTestCase   `yaml:"alert_rule_test"`
	PromQLTests    []promqlTestCase  `yaml:"promql_expr_test"`
	ExternalLabels map[string]string `yaml:"external_labels"`
	ExternalURL    string            `yaml:"external_url"`
}

type inputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

type alertTestCase struct {
	EvalTime  model.Duration `yaml:"eval_time"`
	Alertname string         `yaml:"alertname"`
	ExpAlerts []expAlert     `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type promqlTestCase struct {
	Expr       string         `yaml:"expr"`
	EvalTime   model.Duration `yaml:"eval_time"`
	ExpSamples []expSample    `yaml:"exp_samples"`
}

type expSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// UnitTestOptions configure RunUnitTests.
type UnitTestOptions struct {
	Lookup func(string) (detect.Kind, bool)
	Kinds  func() []string
}

// RunUnitTests runs promtool-format rule unit tests (alerting, recording
// and anomaly rules alike), writes a report per file to w and returns
// whether all passed. Files that cannot be run count as failed.
func RunUnitTests(ctx context.Context, w io.Writer, opts UnitTestOptions, files ...string) (bool, error) {
	ok := true
	for _, f := range files {
		fmt.Fprintf(w, "Unit Testing: %s\n", f)
		problems, err := runUnitTestFile(ctx, opts, f)
		if err != nil {
			fmt.Fprintf(w, "  FAILED:\n    %s\n", strings.ReplaceAll(err.Error(), "\n", "\n    "))
			ok = false
			continue
		}
		if len(problems) > 0 {
			ok = false
			fmt.Fprintf(w, "  FAILED:\n")
			for _, p := range problems {
				fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(p, "\n", "\n    "))
			}
			continue
		}
		fmt.Fprintf(w, "  SUCCESS\n")
	}
	return ok, nil
}

func runUnitTestFile(ctx context.Context, opts UnitTestOptions, path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf unitTestFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&tf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tf.EvaluationInterval == 0 {
		tf.EvaluationInterval = model.Duration(time.Minute)
	}
	dir := filepath.Dir(path)
	var files []string
	for _, rf := range tf.RuleFiles {
		m, err := filepath.Glob(filepath.Join(dir, rf))
		if err != nil || len(m) == 0 {
			return nil, fmt.Errorf("%s: rule_files: no file matches %q", path, rf)
		}
		files = append(files, m...)
	}
	var problems []string
	for i, tc := range tf.Tests {
		name := tc.Name
		if name == "" {
			name = "#" + strconv.Itoa(i+1)
		}
		ps, err := tc.run(ctx, opts, files, time.Duration(tf.EvaluationInterval), tf.GroupEvalOrder)
		if err != nil {
			return nil, fmt.Errorf("%s: test %s: %w", path, name, err)
		}
		for _, p := range ps {
			problems = append(problems, "test "+name+": "+p)
		}
	}
	return problems, nil
}

func (tc *unitTestCase) run(ctx context.Context, opts UnitTestOptions, files []string, evalInterval time.Duration, order []string) ([]string, error) {
	interval := time.Duration(tc.Interval)
	if interval == 0 {
		interval = evalInterval
	}
	st, err := store.New(store.Options{Config: store.Config{Retention: 100 * 365 * 24 * time.Hour, MaxSeries: 1 << 20}})
	if err != nil {
		return nil, err
	}
	app := st.Appender()
	for _, in := range tc.InputSeries {
		lset, err := promqlParser.ParseMetric(in.Series)
		if err != nil {
			return nil, fmt.Errorf("input series %q: %w", in.Series, err)
		}
		vals, err := ParseSeriesValues(in.Values)
		if err != nil {
			return nil, fmt.Errorf("input series %q: %w", in.Series, err)
		}
		var ref store.SeriesRef
		for i, v := range vals {
			if v.Omitted {
				continue
			}
			ref, err = app.Append(ref, lset, int64(i)*interval.Milliseconds(), v.Value)
			if err != nil {
				return nil, err
			}
		}
	}
	app.Commit()
	src := newEngineSource(st)
	m, err := NewManager(Options{Source: src, Record: RecordTo(st), Lookup: opts.Lookup, Kinds: opts.Kinds, ExternalURL: tc.ExternalURL})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	cfg := DefaultConfig()
	cfg.Builtin.Enabled = false
	cfg.WatchFiles = false
	cfg.Files = files
	cfg.EvaluationInterval = evalInterval
	if err := m.ApplyConfig(cfg); err != nil {
		return nil, err
	}
	m.mu.Lock()
	groups := m.groups
	m.mu.Unlock()
	if len(order) > 0 {
		pos := map[string]int{}
		for i, n := range order {
			pos[n] = i
		}
		slices.SortStableFunc(groups, func(a, b *groupState) int { return pos[a.spec.Name] - pos[b.spec.Name] })
	}

	var maxEval time.Duration
	for _, at := range tc.AlertRuleTests {
		maxEval = max(maxEval, time.Duration(at.EvalTime))
	}
	if steps := maxEval / evalInterval; steps >= maxUnitTestSteps {
		return nil, fmt.Errorf("eval_time %s is %d evaluations of %s, more than %d", model.Duration(maxEval), steps, model.Duration(evalInterval), maxUnitTestSteps)
	}
	var problems []string
	epoch := time.Unix(0, 0).UTC()
	for ts := time.Duration(0); ts <= maxEval; ts += evalInterval {
		for _, g := range groups {
			if _, err := g.eval(ctx, epoch.Add(ts)); err != nil {
				problems = append(problems, fmt.Sprintf("eval at %s: %v", model.Duration(ts), err))
			}
		}
		for _, at := range tc.AlertRuleTests {
			et := time.Duration(at.EvalTime)
			if et < ts || et >= ts+evalInterval {
				continue
			}
			if p := checkAlerts(m, at); p != "" {
				problems = append(problems, p)
			}
		}
	}
	for _, pt := range tc.PromQLTests {
		if p := checkPromQL(ctx, src, epoch, pt); p != "" {
			problems = append(problems, p)
		}
	}
	return problems, nil
}

func checkAlerts(m *Manager, at alertTestCase) string {
	var got []string
	for _, a := range m.Alerts() {
		if a.Name() == at.Alertname && a.State == smodel.StateFiring {
			got = append(got, alertString(a.Labels.Map(), a.Annotations))
		}
	}
	var exp []string
	for _, e := range at.ExpAlerts {
		l := map[string]string{labels.AlertName: at.Alertname}
		for k, v := range e.ExpLabels {
			l[k] = v
		}
		exp = append(exp, alertString(l, e.ExpAnnotations))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if slices.Equal(got, exp) {
		return ""
	}
	return fmt.Sprintf("alertname: %s, time: %s,\n    exp:%s\n    got:%s", at.Alertname, at.EvalTime, listString(exp), listString(got))
}

func alertString(l, ann map[string]string) string {
	if ann == nil {
		ann = map[string]string{}
	}
	return fmt.Sprintf("labels:%s annotations:%s", labels.FromMap(l), labels.FromMap(ann))
}

func listString(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[\n        " + strings.Join(s, "\n        ") + "\n      ]"
}

func checkPromQL(ctx context.Context, src *engineSource, epoch time.Time, pt promqlTestCase) string {
	vec, err := src.Instant(ctx, pt.Expr, epoch.Add(time.Duration(pt.EvalTime)))
	if err != nil {
		return fmt.Sprintf("expr: %q, time: %s, err: %v", pt.Expr, pt.EvalTime, err)
	}
	var got, exp []string
	for _, s := range vec {
		got = append(got, fmt.Sprintf("%s %s", s.Metric, strconv.FormatFloat(s.F, 'g', -1, 64)))
	}
	for _, e := range pt.ExpSamples {
		l, err := promqlParser.ParseMetric(e.Labels)
		if e.Labels == "" {
			l, err = labels.EmptyLabels(), nil
		}
		if err != nil {
			return fmt.Sprintf("expr: %q, time: %s, bad exp labels %q: %v", pt.Expr, pt.EvalTime, e.Labels, err)
		}
		exp = append(exp, fmt.Sprintf("%s %s", l, strconv.FormatFloat(e.Value, 'g', -1, 64)))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if slices.Equal(got, exp) {
		return ""
	}
	return fmt.Sprintf("expr: %q, time: %s,\n    exp:%s\n    got:%s", pt.Expr, pt.EvalTime, listString(exp), listString(got))
}

// Bounds of a unit test, so that a typo ("1x10000000000", "eval_time: 100y")
// gets an error instead of exhausting memory or running for hours.
const (
	// maxSeriesValues bounds the values one input series expands to.
	maxSeriesValues = 1_000_000
	// maxUnitTestSteps bounds the evaluations of one test case.
	maxUnitTestSteps = 1_000_000
)

// SeriesValue is one value of an expanded series; Omitted marks `_`.
type SeriesValue struct {
	Value   float64
	Omitted bool
}

// ParseSeriesValues expands promtool's series notation: `1 2 3`, `a+bxN`
// and `a-bxN` (N+1 values from a stepping by b), `axN` (a repeated N+1
// times), `_` (no sample), `_xN` (N missing samples) and `stale`.
func ParseSeriesValues(s string) ([]SeriesValue, error) {
	var out []SeriesValue
	for _, tok := range strings.Fields(s) {
		switch {
		case tok == "_":
			out = append(out, SeriesValue{Omitted: true})
			continue
		case tok == "stale":
			out = append(out, SeriesValue{Value: math.Float64frombits(value.StaleNaN)})
			continue
		}
		base, times, hasX := cutTimes(tok)
		n := 0
		if hasX {
			var err error
			n, err = strconv.Atoi(times)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad repetition in %q", tok)
			}
		}
		if len(out)+n+1 > maxSeriesValues {
			return nil, fmt.Errorf("%q: series longer than %d values", tok, maxSeriesValues)
		}
		if base == "_" {
			if !hasX {
				return nil, fmt.Errorf("bad value %q", tok)
			}
			for range n {
				out = append(out, SeriesValue{Omitted: true})
			}
			continue
		}
		start, step, err := splitStep(base)
		if err != nil {
			return nil, fmt.Errorf("bad value %q: %w", tok, err)
		}
		if !hasX {
			if step != 0 {
				return nil, fmt.Errorf("bad value %q: a step needs xN", tok)
			}
			out = append(out, SeriesValue{Value: start})
			continue
		}
		for i := 0; i <= n; i++ {
			out = append(out, SeriesValue{Value: start + float64(i)*step})
		}
	}
	return out, nil
}

// cutTimes splits "1+2x3" into "1+2" and "3".
func cutTimes(tok string) (string, string, bool) {
	i := strings.LastIndexByte(tok, 'x')
	if i < 0 {
		return tok, "", false
	}
	return tok[:i], tok[i+1:], true
}

// splitStep splits "a+b" or "a-b" (a may be signed or have an exponent).
func splitStep(s string) (start, step float64, err error) {
	for i := 1; i < len(s); i++ {
		if (s[i] == '+' || s[i] == '-') && s[i-1] != 'e' && s[i-1] != 'E' {
			a, err1 := strconv.ParseFloat(s[:i], 64)
			b, err2 := strconv.ParseFloat(s[i+1:], 64)
			if err := errors.Join(err1, err2); err != nil {
				return 0, 0, err
			}
			if s[i] == '-' {
				b = -b
			}
			return a, b, nil
		}
	}
	a, err := strconv.ParseFloat(s, 64)
	return a, 0, err
}
