package rules

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// Lint returns what is legal in the groups but most likely a mistake, as
// warnings with the position of the rule's expr: a rule is loaded and
// evaluated whatever they say. `seismo check rules` prints them, and the
// agent logs them when it loads the rules.
//
// Two checks. First, an alerting or univariate anomaly rule that judges
// a counter's value rather than its rate. A counter only grows, and falls to
// 0 at each restart of the process that counts: `auto` on
// http_requests_total learns a rise, stays quiet through an outage that
// stops the requests (a total that stops growing is still the highest it
// has been), and pages at each restart, as a drop to 0. What the rule
// meant is rate(http_requests_total[1m]). A counter is known by its name,
// as Prometheus' naming conventions give it: a name ending in _total (for
// counters only) or _bucket (a histogram's buckets, which
// histogram_quantile reads as counts since the process started unless
// they are given as rates). _count and _sum are left alone: gauges are
// named so too (pg_stat_activity_count). LintTyped tells counters by
// the datasources' metadata where it knows them. Second, a univariate
// anomaly rule whose expr is a comparison with a number (see
// thresholdOp).
func Lint(groups []*Group) Errors {
	return LintTyped(groups, nil)
}

// Types answers a metric's type, as a datasource's metadata gives it
// ("counter", "gauge", "histogram", "summary", ...), for the datasource
// a group queries; "" where it does not know.
type Types func(source, metric string) string

// LintTyped is Lint with the metrics' types from the datasources'
// metadata where types knows them (nil: names only). A series is a
// counter when its type, or its family's, says so: a counter named
// against convention (requests_served) is caught, and a gauge that
// happens to end in _total (a pool's connections_total) is not warned
// of. Where the type is unknown the name decides, as in Lint.
func LintTyped(groups []*Group, types Types) Errors {
	var out Errors
	for _, g := range groups {
		var typeOf func(string) string
		if types != nil {
			src := g.Source
			typeOf = func(name string) string { return types(src, name) }
		}
		isCounter := func(name string) bool { return counterNamed(name, typeOf) }
		for _, r := range g.Rules {
			warn := func(line, col int, msg string) {
				out = append(out, &Error{File: g.File, Line: line, Col: col, Group: g.Name, Rule: r.Index, Name: r.Name, Msg: msg})
			}
			if r.Type == TypeAnomaly && r.Detector != nil && r.Detector.Composite() {
				// A signal on a raw counter: the surge detector fed
				// sum(http_requests_total) as its traffic sees a total.
				for _, sig := range r.Detector.Signals {
					ps := r.Detector.parsed[sig.Name]
					if name := rawCounter(ps.expr, isCounter); name != "" {
						warn(ps.line, ps.col, counterMsg("detector."+sig.Name, name))
					}
				}
				continue
			}
			if r.expr == nil || r.Type == TypeRecording || r.Type == TypeAnomaly && r.Detector == nil {
				continue
			}
			if op := thresholdOp(r.expr); op != "" && r.Type == TypeAnomaly {
				warn(r.exprLine, r.exprCol, fmt.Sprintf("expr: a comparison (%s) with a number: an anomaly rule judges the values themselves, "+
					"and the comparison hides those on its other side, which the detector then takes for missing samples; "+
					"leave the threshold out, or make it an alert rule", op))
			}
			if name := rawCounter(r.expr, isCounter); name != "" {
				warn(r.exprLine, r.exprCol, counterMsg("expr", name))
			}
		}
	}
	return out
}

// counterMsg words the warning for the counter name judged raw in what
// ("expr", "detector.requests").
func counterMsg(what, name string) string {
	return fmt.Sprintf("%s: %s is a counter, judged without rate(), irate() or increase(): "+
		"its value only grows and falls to 0 at a restart; rate(%s[1m]) is what moves with the service", what, name, name)
}

// thresholdOp returns the operator of expr when expr is a comparison
// with a number (`rate(x[1m]) > 5`, with or without bool), else "". On an
// anomaly rule it is a threshold written where the detector is meant to
// find one: without bool, the series leaves the result on the comparison's
// other side and the detector sees a gap, not the normal values it should
// learn; with bool, it judges 0s and 1s.
func thresholdOp(expr parser.Expr) string {
	for {
		p, ok := expr.(*parser.ParenExpr)
		if !ok {
			break
		}
		expr = p.Expr
	}
	b, ok := expr.(*parser.BinaryExpr)
	if !ok || !b.Op.IsComparisonOperator() {
		return ""
	}
	if isNumber(b.LHS) || isNumber(b.RHS) {
		return b.Op.String()
	}
	return ""
}

// isNumber reports whether e is a number literal, perhaps in parentheses
// or negated.
func isNumber(e parser.Expr) bool {
	switch e := e.(type) {
	case *parser.NumberLiteral:
		return true
	case *parser.ParenExpr:
		return isNumber(e.Expr)
	case *parser.UnaryExpr:
		return isNumber(e.Expr)
	}
	return false
}

// countsCounter lists the functions and aggregations under which a counter
// is used as one: its rate or increase, its resets, whether or how many of
// its series there are, or when it was last written.
var countsCounter = map[string]bool{
	"rate": true, "irate": true, "increase": true, "resets": true, "changes": true,
	"absent": true, "absent_over_time": true, "present_over_time": true, "count_over_time": true,
	"timestamp": true, "count": true, "group": true, "count_values": true,
}

// counterNamed reports whether the series name is a counter's: by its
// type, or its family's, where typeOf (which may be nil) knows one, and
// by its name (see Lint) where not. A family is the name less _total
// (OpenMetrics names a counter's family without it), or less _bucket,
// _count or _sum (a histogram's or a summary's, whose series of those
// names are counters).
func counterNamed(name string, typeOf func(string) string) bool {
	if typeOf != nil {
		if t := typeOf(name); t != "" {
			return t == "counter"
		}
		for _, suffix := range []string{"_total", "_bucket", "_count", "_sum"} {
			family, ok := strings.CutSuffix(name, suffix)
			if !ok {
				continue
			}
			switch t := typeOf(family); {
			case t == "counter" && suffix == "_total":
				return true
			case t == "histogram" || t == "summary" && suffix != "_bucket":
				return true
			case t != "":
				return false
			}
		}
	}
	return strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_bucket")
}

// rawCounter returns the name of the first counter (see counterNamed)
// that expr selects outside every function or aggregation of
// countsCounter, or "".
func rawCounter(expr parser.Expr, isCounter func(string) bool) string {
	found := ""
	var walk func(n parser.Node, covered bool)
	walk = func(n parser.Node, covered bool) {
		if n == nil || found != "" {
			return
		}
		switch e := n.(type) {
		case *parser.Call:
			covered = covered || countsCounter[e.Func.Name]
		case *parser.AggregateExpr:
			covered = covered || countsCounter[e.Op.String()]
		case *parser.VectorSelector:
			if !covered && e.Name != "" && isCounter(e.Name) {
				found = e.Name
			}
			return
		}
		for _, c := range parser.Children(n) {
			walk(c, covered)
		}
	}
	walk(expr, false)
	return found
}
