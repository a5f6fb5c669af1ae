package rules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/detect"
	smodel "github.com/seismo-agent/seismo/internal/model"
)

// ReplayOptions configure a replay: rules evaluated over recorded data as
// fast as the data allows.
type ReplayOptions struct {
	// Config names the rule files and the built-in pack (its file watch,
	// persistence and resend settings are not used).
	Config Config
	// Source holds the recorded data; it answers every group, whatever
	// datasource the group names.
	Source     datasource.Source
	Start, End time.Time
	Lookup     func(string) (detect.Kind, bool)
	Kinds      func() []string
	// OnTransition sees each alert state change as it happens.
	OnTransition func(Transition)
	// Record, when set, receives recording rule results (see RecordTo).
	Record func(ctx context.Context, ts time.Time, v promql.Vector) error
	// Trace keeps every evaluated value and band of series that alerted,
	// for plots.
	Trace bool
	// Progress, when set, is called now and then with the replayed time.
	Progress func(at time.Time)
}

// TracePoint is one evaluation of one series.
type TracePoint struct {
	T                      time.Time
	Value                  float64
	Expected, Lower, Upper float64
	HasBand                bool
}

// Trace is the evaluated history of one rule's series.
type Trace struct {
	Rule   string
	Labels labels.Labels
	Points []TracePoint
}

// ReplayResult is what a replay found.
type ReplayResult struct {
	Evaluations int
	Transitions []Transition
	// Traces holds, when asked for, the series of rules that alerted.
	Traces []*Trace
}

// Replay evaluates every group over [Start, End] on its own interval,
// starting at Start, and reports every alert transition.
func Replay(ctx context.Context, opts ReplayOptions) (*ReplayResult, error) {
	if !opts.End.After(opts.Start) {
		return nil, errors.New("replay: end must be after start")
	}
	res := &ReplayResult{}
	traces := map[string]*Trace{}
	var order []string
	alerted := map[string]bool{}
	mopts := Options{
		Source: opts.Source,
		Record: opts.Record,
		Lookup: opts.Lookup,
		Kinds:  opts.Kinds,
		OnTransition: func(tr Transition) {
			res.Transitions = append(res.Transitions, tr)
			if tr.To == smodel.StatePending || tr.To == smodel.StateFiring {
				alerted[tr.Rule] = true
			}
			if opts.OnTransition != nil {
				opts.OnTransition(tr)
			}
		},
	}
	m, err := NewManager(mopts)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	m.anySource = true
	if opts.Trace {
		m.onObserve = func(r *Rule, l labels.Labels, p TracePoint) {
			k := r.Name + "\x00" + l.String()
			tr := traces[k]
			if tr == nil {
				tr = &Trace{Rule: r.Name, Labels: l}
				traces[k] = tr
				order = append(order, k)
			}
			tr.Points = append(tr.Points, p)
		}
	}
	cfg := opts.Config
	cfg.WatchFiles = false
	if err := m.ApplyConfig(cfg); err != nil {
		return nil, err
	}
	m.mu.Lock()
	groups := m.groups
	m.mu.Unlock()
	next := make([]time.Time, len(groups))
	for i := range groups {
		next[i] = opts.Start
	}
	lastProgress := opts.Start
	for {
		gi := -1
		for i, t := range next {
			if !t.After(opts.End) && (gi < 0 || t.Before(next[gi])) {
				gi = i
			}
		}
		if gi < 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ts := next[gi]
		g := groups[gi]
		if _, err := g.eval(ctx, ts); err != nil && ctx.Err() == nil {
			return res, fmt.Errorf("replay at %s: group %q: %w", ts.Format(time.RFC3339), g.spec.Name, err)
		}
		res.Evaluations++
		next[gi] = ts.Add(g.spec.Interval)
		if opts.Progress != nil && ts.Sub(lastProgress) >= time.Hour {
			opts.Progress(ts)
			lastProgress = ts
		}
	}
	for _, k := range order {
		if tr := traces[k]; alerted[tr.Rule] {
			res.Traces = append(res.Traces, tr)
		}
	}
	return res, nil
}
