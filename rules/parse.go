package rules

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/detect"
	smodel "github.com/seismo-agent/seismo/internal/model"
)

// Error is one problem in a rule file, with its position and the group and
// rule it belongs to. It prints as
// `file:line:col: group "g", rule N "Name": message`.
type Error struct {
	File      string
	Line, Col int
	Group     string
	// Rule is the 1-based index of the rule within its group, 0 for errors
	// that are not about one rule.
	Rule int
	Name string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Group != "" || e.Rule > 0 {
		fmt.Fprintf(&b, "group %q", e.Group)
		if e.Rule > 0 {
			fmt.Fprintf(&b, ", rule %d", e.Rule)
			if e.Name != "" {
				fmt.Fprintf(&b, " %q", e.Name)
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a set of rule files, in file order.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// RuleType says what a rule does.
type RuleType int

// Rule types.
const (
	TypeAlerting RuleType = iota
	TypeRecording
	TypeAnomaly
)

func (t RuleType) String() string {
	switch t {
	case TypeAlerting:
		return "alerting"
	case TypeRecording:
		return "recording"
	case TypeAnomaly:
		return "anomaly"
	}
	return "unknown"
}

// Signal is one named PromQL input of a composite detector.
type Signal struct {
	Name   string
	Expr   string
	PerKey bool
}

// DetectorSpec is a rule's compiled `detector:` block.
type DetectorSpec struct {
	Type string
	Kind detect.Kind
	// Config is the decoded, validated config: a detect.UnivariateConfig or
	// a detect.CompositeConfig.
	Config detect.Config
	// Signals are the composite detector's inputs in the kind's order;
	// empty for univariate kinds.
	Signals []Signal
	// KeyLabel is the label that keys per-key signals (the config's
	// key_label), "" when the kind has none.
	KeyLabel string
	// Hash identifies the type and config; detector state is only carried
	// over to a rule whose detector has the same hash.
	Hash uint64

	// parsed holds each signal's expr as parsed, and where it is written,
	// for Lint.
	parsed map[string]parsedSignal
}

// parsedSignal is a composite detector's signal expr as parsed (nil when
// it does not parse), and where it is written.
type parsedSignal struct {
	expr      parser.Expr
	line, col int
}

// Composite reports whether the detector watches named signals.
func (d *DetectorSpec) Composite() bool { return len(d.Kind.Signals) > 0 }

// Rule is one compiled rule.
type Rule struct {
	Type          RuleType
	Name          string
	Expr          string
	For           time.Duration
	KeepFiringFor time.Duration
	// SuppressedBy names rules of the same group whose pending or firing
	// alerts suppress this rule's alerts (an inhibition written next to
	// the rule): one cause, one page.
	SuppressedBy []string
	Labels       labels.Labels
	Annotations  labels.Labels
	Detector     *DetectorSpec
	Draft        *smodel.Draft
	Enabled      bool
	// Index is the 1-based position in the group; Line the file line.
	Index int
	Line  int
	// Hash identifies the rule's whole definition; an unchanged rule keeps
	// all its state across a reload.
	Hash uint64

	expr parser.Expr
	// exprLine and exprCol are where expr is written, for Lint.
	exprLine, exprCol int
	// suppressedAt is the suppressed_by node, for error positions.
	suppressedAt *yaml.Node
}

// Group is one compiled rule group.
type Group struct {
	Name        string
	File        string
	Interval    time.Duration
	QueryOffset time.Duration
	Limit       int
	Labels      labels.Labels
	// Source names the datasource the group queries; "" is the default.
	Source string
	Rules  []*Rule
}

// Key identifies a group across reloads: file and name, as in Prometheus.
func (g *Group) Key() string { return g.File + ";" + g.Name }

// ParseOptions controls parsing.
type ParseOptions struct {
	// Lookup resolves detector types and Kinds lists them for messages;
	// nil means detect.Lookup and detect.Kinds.
	Lookup func(string) (detect.Kind, bool)
	Kinds  func() []string
	// DefaultInterval applies to groups without an interval.
	DefaultInterval time.Duration
	// Sources lists the datasource names groups may name; nil accepts any.
	Sources []string
	// TimeZone is the time_zone of detectors that have one (auto,
	// seasonal) where a rule sets none; empty leaves their default, UTC.
	TimeZone string
}

var promqlParser = parser.NewParser(parser.Options{})

// ParseFiles reads and parses every file and returns all groups, or every
// problem found in all files.
func ParseFiles(opts ParseOptions, files ...string) ([]*Group, error) {
	return parseFiles(opts, os.ReadFile, files...)
}

// parseFiles is ParseFiles reading each file with read.
func parseFiles(opts ParseOptions, read func(string) ([]byte, error), files ...string) ([]*Group, error) {
	var (
		groups []*Group
		errs   Errors
	)
	for _, f := range files {
		b, err := read(f)
		if err != nil {
			errs = append(errs, &Error{File: f, Msg: err.Error()})
			continue
		}
		gs, err := Parse(opts, f, b)
		var pe Errors
		if errors.As(err, &pe) {
			errs = append(errs, pe...)
			continue
		} else if err != nil {
			errs = append(errs, &Error{File: f, Msg: err.Error()})
			continue
		}
		groups = append(groups, gs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return groups, nil
}

// Parse parses one rule file's content. name is used in errors and as the
// groups' File. The error, if any, is an Errors holding every problem.
func Parse(opts ParseOptions, name string, content []byte) ([]*Group, error) {
	if opts.Lookup == nil {
		opts.Lookup, opts.Kinds = detect.Lookup, detect.Kinds
	}
	if opts.Kinds == nil {
		opts.Kinds = func() []string { return nil }
	}
	if opts.DefaultInterval <= 0 {
		opts.DefaultInterval = time.Minute
	}
	p := &fileParser{opts: opts, file: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(content))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		p.addYAMLError(err, content)
		return nil, p.errs
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		p.errAt(&second, "", 0, "", "multiple YAML documents are not supported")
	}
	groups := p.file0(&doc)
	sort.SliceStable(p.errs, func(i, j int) bool {
		a, b := p.errs[i], p.errs[j]
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return groups, nil
}

type fileParser struct {
	opts ParseOptions
	file string
	errs Errors
}

func (p *fileParser) errAt(n *yaml.Node, group string, rule int, name, format string, args ...any) {
	e := &Error{File: p.file, Group: group, Rule: rule, Name: name, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// addYAMLError turns a yaml.v3 syntax error ("yaml: line 3: ...") into a
// positioned Error.
func (p *fileParser) addYAMLError(err error, content []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	col := 1
	if line == 0 {
		// Reader errors (bad UTF-8, control characters, end of stream)
		// carry no position in yaml.v3: find it.
		line, col = yamlErrorPos(content, msg)
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Msg: msg})
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// pairs returns a mapping's key/value pairs, reporting duplicates and
// non-mapping nodes.
func (p *fileParser) pairs(n *yaml.Node, group string, rule int, name, what string) [][2]*yaml.Node {
	n = resolve(n)
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errAt(n, group, rule, name, "%s: want a mapping, got %s", what, kindName(n))
		return nil
	}
	seen := map[string]bool{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if seen[k.Value] {
			p.errAt(k, group, rule, name, "%s: duplicate key %q", what, k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (p *fileParser) str(n *yaml.Node, group string, rule int, name, what string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errAt(n, group, rule, name, "%s: want a string, got %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *fileParser) duration(n *yaml.Node, group string, rule int, name, what string) time.Duration {
	s, ok := p.str(n, group, rule, name, what)
	if !ok {
		return 0
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		p.errAt(n, group, rule, name, "%s: %v", what, err)
		return 0
	}
	return time.Duration(d)
}

func (p *fileParser) file0(doc *yaml.Node) []*Group {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	var groups []*Group
	seen := map[string]bool{}
	for _, kv := range p.pairs(root, "", 0, "", "rule file") {
		if kv[0].Value != "groups" {
			p.errAt(kv[0], "", 0, "", "unknown key %q (want groups)", kv[0].Value)
			continue
		}
		seq := resolve(kv[1])
		if seq.Kind != yaml.SequenceNode {
			p.errAt(seq, "", 0, "", "groups: want a list, got %s", kindName(seq))
			continue
		}
		for _, gn := range seq.Content {
			g := p.group(gn)
			if g == nil {
				continue
			}
			if seen[g.Name] {
				p.errAt(gn, g.Name, 0, "", "duplicate group name %q in file", g.Name)
			}
			seen[g.Name] = true
			groups = append(groups, g)
		}
	}
	return groups
}

func (p *fileParser) group(n *yaml.Node) *Group {
	g := &Group{File: p.file, Interval: p.opts.DefaultInterval}
	kvs := p.pairs(n, "", 0, "", "group")
	// The name first, so every other error can carry it.
	for _, kv := range kvs {
		if kv[0].Value == "name" {
			g.Name, _ = p.str(kv[1], "", 0, "", "name")
		}
	}
	if g.Name == "" {
		p.errAt(n, "", 0, "", "group name must be set")
	}
	var rulesNode *yaml.Node
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "name":
		case "interval":
			if d := p.duration(v, g.Name, 0, "", "interval"); d > 0 {
				g.Interval = d
			} else if d == 0 {
				p.errAt(v, g.Name, 0, "", "interval: must be positive")
			}
		case "query_offset":
			g.QueryOffset = p.duration(v, g.Name, 0, "", "query_offset")
		case "limit":
			s, _ := p.str(v, g.Name, 0, "", "limit")
			l, err := strconv.Atoi(s)
			if err != nil || l < 0 {
				p.errAt(v, g.Name, 0, "", "limit: want a non-negative integer, got %q", s)
			}
			g.Limit = l
		case "labels":
			g.Labels = p.labelMap(v, g.Name, 0, "", "labels", false)
		case "datasource":
			g.Source, _ = p.str(v, g.Name, 0, "", "datasource")
			if p.opts.Sources != nil && g.Source != "" && !contains(p.opts.Sources, g.Source) {
				p.errAt(v, g.Name, 0, "", "datasource: unknown datasource %q (have %s)", g.Source, strings.Join(p.opts.Sources, ", "))
			}
		case "rules":
			rulesNode = resolve(v)
		default:
			p.errAt(k, g.Name, 0, "", "unknown key %q in group", k.Value)
		}
	}
	if rulesNode != nil {
		if rulesNode.Kind != yaml.SequenceNode {
			p.errAt(rulesNode, g.Name, 0, "", "rules: want a list, got %s", kindName(rulesNode))
		} else {
			type ident struct {
				name   string
				labels uint64
			}
			seen := map[ident]int{}
			for i, rn := range rulesNode.Content {
				r := p.rule(g, i+1, rn)
				if r == nil {
					continue
				}
				if r.Type != TypeRecording {
					id := ident{r.Name, r.Labels.Hash()}
					if prev, dup := seen[id]; dup {
						p.errAt(rn, g.Name, r.Index, r.Name, "duplicate rule name with the same labels as rule %d: their alerts would collide", prev)
					}
					seen[id] = r.Index
				}
				g.Rules = append(g.Rules, r)
			}
			p.checkSuppressedBy(g)
		}
	}
	return g
}

// checkSuppressedBy reports suppressed_by names that are not alerting or
// anomaly rules of the group, or that name the rule itself.
func (p *fileParser) checkSuppressedBy(g *Group) {
	alerting := map[string]bool{}
	for _, r := range g.Rules {
		if r.Type != TypeRecording {
			alerting[r.Name] = true
		}
	}
	for _, r := range g.Rules {
		for _, c := range r.SuppressedBy {
			at := r.suppressedAt
			switch {
			case c == r.Name:
				p.errAt(at, g.Name, r.Index, r.Name, "suppressed_by: a rule cannot suppress itself")
			case !alerting[c]:
				p.errAt(at, g.Name, r.Index, r.Name, "suppressed_by: no alerting or anomaly rule %q in group %q", c, g.Name)
			}
		}
	}
}

// strList reads a string or a list of strings.
func (p *fileParser) strList(n *yaml.Node, group string, rule int, name, what string) []string {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		s, ok := p.str(n, group, rule, name, what)
		if !ok || s == "" {
			p.errAt(n, group, rule, name, "%s: want a rule name or a list of them", what)
			return nil
		}
		return []string{s}
	}
	if n.Kind != yaml.SequenceNode {
		p.errAt(n, group, rule, name, "%s: want a rule name or a list of them, got %s", what, kindName(n))
		return nil
	}
	var out []string
	for i, c := range n.Content {
		s, ok := p.str(c, group, rule, name, fmt.Sprintf("%s[%d]", what, i))
		if ok && s == "" {
			p.errAt(c, group, rule, name, "%s[%d]: empty rule name", what, i)
			continue
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *fileParser) labelMap(n *yaml.Node, group string, rule int, name, what string, annotations bool) labels.Labels {
	b := labels.NewScratchBuilder(0)
	for _, kv := range p.pairs(n, group, rule, name, what) {
		k, v := kv[0].Value, kv[1]
		if !model.UTF8Validation.IsValidLabelName(k) || (!annotations && k == model.MetricNameLabel) {
			p.errAt(kv[0], group, rule, name, "%s: invalid name %q", what, k)
			continue
		}
		s, ok := p.str(v, group, rule, name, what+"."+k)
		if !ok {
			continue
		}
		if !model.LabelValue(s).IsValid() {
			p.errAt(v, group, rule, name, "%s.%s: invalid UTF-8 value", what, k)
		}
		if err := checkTemplate(name, s); err != nil {
			p.errAt(v, group, rule, name, "%s.%s: %v", what, k, err)
		}
		b.Add(k, s)
	}
	b.Sort()
	return b.Labels()
}

var allowedRuleKeys = map[string]bool{
	"record": true, "alert": true, "anomaly": true, "expr": true, "for": true,
	"keep_firing_for": true, "labels": true, "annotations": true,
	"detector": true, "draft": true, "enabled": true, "suppressed_by": true,
}

func (p *fileParser) rule(g *Group, idx int, n *yaml.Node) *Rule {
	r := &Rule{Index: idx, Enabled: true, Line: n.Line}
	kvs := p.pairs(n, g.Name, idx, "", "rule")
	if kvs == nil {
		p.errAt(n, g.Name, idx, "", "empty rule")
		return nil
	}
	byKey := map[string]*yaml.Node{}
	var keyNode = map[string]*yaml.Node{}
	for _, kv := range kvs {
		byKey[kv[0].Value] = kv[1]
		keyNode[kv[0].Value] = kv[0]
	}
	// Type and name first, so the remaining errors can carry the name.
	var set []string
	for _, t := range []string{"alert", "record", "anomaly"} {
		if v, ok := byKey[t]; ok {
			set = append(set, t)
			r.Name, _ = p.str(v, g.Name, idx, "", t)
		}
	}
	switch len(set) {
	case 0:
		p.errAt(n, g.Name, idx, "", "one of alert, record or anomaly must be set")
	case 1:
		switch set[0] {
		case "alert":
			r.Type = TypeAlerting
		case "record":
			r.Type = TypeRecording
		case "anomaly":
			r.Type = TypeAnomaly
		}
	default:
		p.errAt(keyNode[set[1]], g.Name, idx, r.Name, "only one of alert, record or anomaly may be set, got %s", strings.Join(set, " and "))
	}
	if r.Name == "" && len(set) > 0 {
		p.errAt(byKey[set[0]], g.Name, idx, "", "%s: name must not be empty", set[0])
	}
	if r.Type == TypeRecording && r.Name != "" {
		if !model.UTF8Validation.IsValidMetricName(r.Name) || strings.ContainsAny(r.Name, "{}") {
			p.errAt(byKey["record"], g.Name, idx, r.Name, "invalid recording rule name %q", r.Name)
		}
	}
	gn, name := g.Name, r.Name
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		if !allowedRuleKeys[k.Value] {
			p.errAt(k, gn, idx, name, "unknown key %q in rule", k.Value)
			continue
		}
		switch k.Value {
		case "expr":
			r.Expr, _ = p.str(v, gn, idx, name, "expr")
			r.exprLine, r.exprCol = v.Line, v.Column
			if r.Expr != "" {
				e, err := promqlParser.ParseExpr(r.Expr)
				if err != nil {
					p.errAt(v, gn, idx, name, "expr: %v", oneLine(err))
				}
				r.expr = e
			}
		case "for":
			r.For = p.duration(v, gn, idx, name, "for")
		case "keep_firing_for":
			r.KeepFiringFor = p.duration(v, gn, idx, name, "keep_firing_for")
		case "suppressed_by":
			r.SuppressedBy = p.strList(v, gn, idx, name, "suppressed_by")
			r.suppressedAt = v
		case "labels":
			r.Labels = p.labelMap(v, gn, idx, name, "labels", false)
		case "annotations":
			r.Annotations = p.labelMap(v, gn, idx, name, "annotations", true)
		case "enabled":
			s, _ := p.str(v, gn, idx, name, "enabled")
			b, err := strconv.ParseBool(s)
			if err != nil {
				p.errAt(v, gn, idx, name, "enabled: want true or false, got %q", s)
			}
			r.Enabled = b
		case "draft":
			r.Draft = p.draft(v, gn, idx, name)
		}
	}
	switch r.Type {
	case TypeRecording:
		for _, k := range []string{"for", "keep_firing_for", "annotations", "detector", "draft", "suppressed_by"} {
			if n, ok := keyNode[k]; ok {
				p.errAt(n, gn, idx, name, "%s is not allowed in a recording rule", k)
			}
		}
	case TypeAlerting:
		if n, ok := keyNode["detector"]; ok {
			p.errAt(n, gn, idx, name, "detector is only allowed in an anomaly rule")
		}
	case TypeAnomaly:
		if dn, ok := byKey["detector"]; ok {
			r.Detector = p.detector(dn, gn, idx, name, r.Expr != "", keyNode["expr"])
		} else {
			p.errAt(n, gn, idx, name, "anomaly rule needs a detector block")
		}
	}
	if _, ok := byKey["expr"]; !ok && (r.Type != TypeAnomaly || (r.Detector != nil && !r.Detector.Composite())) {
		p.errAt(n, gn, idx, name, "expr must be set")
	}
	r.Hash = hashRule(g, r)
	return r
}

// oneLine flattens multi-line PromQL parser errors.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

var impacts = map[string]bool{"": true, "degraded_performance": true, "partial_outage": true, "major_outage": true}

func (p *fileParser) draft(n *yaml.Node, gn string, idx int, name string) *smodel.Draft {
	d := &smodel.Draft{}
	for _, kv := range p.pairs(n, gn, idx, name, "draft") {
		switch kv[0].Value {
		case "component":
			d.Component, _ = p.str(kv[1], gn, idx, name, "draft.component")
		case "impact":
			d.Impact, _ = p.str(kv[1], gn, idx, name, "draft.impact")
			if !impacts[d.Impact] {
				p.errAt(kv[1], gn, idx, name, "draft.impact: want degraded_performance, partial_outage or major_outage, got %q", d.Impact)
			}
		default:
			p.errAt(kv[0], gn, idx, name, "unknown key %q in draft (want component, impact)", kv[0].Value)
		}
	}
	return d
}

func (p *fileParser) detector(n *yaml.Node, gn string, idx int, name string, hasExpr bool, exprKey *yaml.Node) *DetectorSpec {
	kvs := p.pairs(n, gn, idx, name, "detector")
	var typeNode *yaml.Node
	for _, kv := range kvs {
		if kv[0].Value == "type" {
			typeNode = kv[1]
		}
	}
	if typeNode == nil {
		p.errAt(n, gn, idx, name, "detector.type must be set (one of %s)", strings.Join(p.kinds(), ", "))
		return nil
	}
	typ, _ := p.str(typeNode, gn, idx, name, "detector.type")
	kind, ok := p.opts.Lookup(typ)
	if !ok {
		p.errAt(typeNode, gn, idx, name, "detector.type: unknown detector %q (have %s)", typ, strings.Join(p.kinds(), ", "))
		return nil
	}
	cfg := kind.NewConfig()
	if z, ok := cfg.(detect.TimeZoned); ok && p.opts.TimeZone != "" {
		z.SetTimeZone(p.opts.TimeZone)
	}
	spec := &DetectorSpec{Type: typ, Kind: kind, Config: cfg}
	signals := map[string]detect.SignalSpec{}
	for _, s := range kind.Signals {
		signals[s.Name] = s
	}
	if len(kind.Signals) > 0 && hasExpr {
		p.errAt(exprKey, gn, idx, name, "expr is not used by composite detector %q: give its signals (%s) in the detector block", typ, signalNames(kind))
	}
	fields := yamlFields(reflect.TypeOf(cfg))
	cfgNode := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	got := map[string]string{}
	for _, kv := range kvs {
		k, v := kv[0], kv[1]
		if k.Value == "type" {
			continue
		}
		if _, isSignal := signals[k.Value]; isSignal {
			q, ok := p.str(v, gn, idx, name, "detector."+k.Value)
			if !ok {
				continue
			}
			e, err := promqlParser.ParseExpr(q)
			if err != nil {
				p.errAt(v, gn, idx, name, "detector.%s: %v", k.Value, oneLine(err))
			}
			got[k.Value] = q
			if spec.parsed == nil {
				spec.parsed = map[string]parsedSignal{}
			}
			spec.parsed[k.Value] = parsedSignal{expr: e, line: v.Line, col: v.Column}
			continue
		}
		if !fields[k.Value] {
			p.errAt(k, gn, idx, name, "detector: unknown key %q for type %q (have %s)", k.Value, typ, strings.Join(keysOf(fields, kind), ", "))
			continue
		}
		cfgNode.Content = append(cfgNode.Content, k, v)
	}
	for _, s := range kind.Signals {
		q, ok := got[s.Name]
		if !ok {
			if s.Required {
				p.errAt(n, gn, idx, name, "detector: signal %q of type %q must be set (%s)", s.Name, typ, s.Doc)
			}
			continue
		}
		spec.Signals = append(spec.Signals, Signal{Name: s.Name, Expr: q, PerKey: s.PerKey})
	}
	if len(cfgNode.Content) > 0 {
		if err := cfgNode.Decode(cfg); err != nil {
			p.addDecodeError(err, n, gn, idx, name)
			return nil
		}
	}
	if err := cfg.Validate(); err != nil {
		for _, e := range flatten(err) {
			p.errAt(n, gn, idx, name, "detector: %v", e)
		}
		return nil
	}
	switch cfg.(type) {
	case detect.UnivariateConfig, detect.CompositeConfig:
	default:
		p.errAt(typeNode, gn, idx, name, "detector %q has a config that builds no detector", typ)
		return nil
	}
	if f := reflect.Indirect(reflect.ValueOf(cfg)).FieldByName("KeyLabel"); f.IsValid() && f.Kind() == reflect.String {
		spec.KeyLabel = f.String()
	}
	spec.Hash = hashDetector(spec)
	return spec
}

func (p *fileParser) addDecodeError(err error, n *yaml.Node, gn string, idx int, name string) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, m := range te.Errors {
			line := n.Line
			if strings.HasPrefix(m, "line ") {
				if i := strings.Index(m, ":"); i > 0 {
					if l, err := strconv.Atoi(m[5:i]); err == nil {
						line = l
						m = strings.TrimSpace(m[i+1:])
					}
				}
			}
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: 1, Group: gn, Rule: idx, Name: name, Msg: "detector: " + m})
		}
		return
	}
	p.errAt(n, gn, idx, name, "detector: %v", err)
}

func flatten(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func (p *fileParser) kinds() []string {
	return p.opts.Kinds()
}

func signalNames(k detect.Kind) string {
	var s []string
	for _, x := range k.Signals {
		s = append(s, x.Name)
	}
	return strings.Join(s, ", ")
}

func keysOf(fields map[string]bool, k detect.Kind) []string {
	out := []string{"type"}
	for f := range fields {
		out = append(out, f)
	}
	for _, s := range k.Signals {
		out = append(out, s.Name)
	}
	sort.Strings(out[1:])
	return out
}

// yamlFields lists the YAML keys a config struct accepts (following inline
// embedded structs), so unknown keys are reported at their position.
func yamlFields(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k := range yamlFields(f.Type) {
				out[k] = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = true
	}
	return out
}

func hashDetector(d *DetectorSpec) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%#v\x00", d.Type, reflect.Indirect(reflect.ValueOf(d.Config)).Interface())
	for _, s := range d.Signals {
		fmt.Fprintf(h, "%s=%s\x00", s.Name, s.Expr)
	}
	return h.Sum64()
}

func hashRule(g *Group, r *Rule) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%d\x00%d\x00%s\x00%s\x00%t\x00", r.Type, r.Name, r.Expr, r.For, r.KeepFiringFor, r.Labels, r.Annotations, r.Enabled)
	if len(r.SuppressedBy) > 0 {
		fmt.Fprintf(h, "%q\x00", r.SuppressedBy)
	}
	if r.Draft != nil {
		fmt.Fprintf(h, "%s\x00%s\x00", r.Draft.Component, r.Draft.Impact)
	}
	if r.Detector != nil {
		fmt.Fprintf(h, "%d\x00", r.Detector.Hash)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%d", g.Labels, g.Source, g.QueryOffset)
	return h.Sum64()
}
