package rules

import (
	"io"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// History keeps, for a running Manager, the recent evaluated values and
// baseline bands of every series its rules judge, and the alert transitions
// over the same window, so the chart that `replay --plot` draws can be drawn
// live (WriteSVG). Memory is bounded: at most maxPoints points per series,
// maxSeries series (new series beyond that are not kept; see Dropped) and
// maxTransitions transitions. Its methods are safe for concurrent use.
type History struct {
	window time.Duration

	mu      sync.Mutex
	traces  map[string]*Trace
	trans   []Transition
	dropped int
}

// History bounds.
const (
	maxHistoryPoints      = 720
	maxHistorySeries      = 512
	maxHistoryTransitions = 1024
)

// NewHistory returns a History that keeps window of the past (0 means 3h).
func NewHistory(window time.Duration) *History {
	if window <= 0 {
		window = 3 * time.Hour
	}
	return &History{window: window, traces: map[string]*Trace{}}
}

// Window is how much of the past the history keeps.
func (h *History) Window() time.Duration { return h.window }

// Dropped is the number of series not kept because the history was full.
func (h *History) Dropped() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

func (h *History) observe(r *Rule, l labels.Labels, p TracePoint) {
	k := r.Name + "\x00" + l.String()
	h.mu.Lock()
	defer h.mu.Unlock()
	tr := h.traces[k]
	if tr == nil {
		if len(h.traces) >= maxHistorySeries {
			h.expire(p.T)
		}
		if len(h.traces) >= maxHistorySeries {
			h.dropped++
			return
		}
		tr = &Trace{Rule: r.Name, Labels: l}
		h.traces[k] = tr
	}
	cut := 0
	for cut < len(tr.Points) && (p.T.Sub(tr.Points[cut].T) > h.window || len(tr.Points)-cut >= maxHistoryPoints) {
		cut++
	}
	if cut > 0 {
		tr.Points = append(tr.Points[:0], tr.Points[cut:]...)
	}
	tr.Points = append(tr.Points, p)
}

// expire forgets series not evaluated within the window before now.
// h.mu is held.
func (h *History) expire(now time.Time) {
	for k, tr := range h.traces {
		if n := len(tr.Points); n == 0 || now.Sub(tr.Points[n-1].T) > h.window {
			delete(h.traces, k)
		}
	}
}

func (h *History) transition(t Transition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cut := 0
	for cut < len(h.trans) && (t.Time.Sub(h.trans[cut].Time) > h.window || len(h.trans)-cut >= maxHistoryTransitions) {
		cut++
	}
	if cut > 0 {
		h.trans = append(h.trans[:0], h.trans[cut:]...)
	}
	t.Explanation = nil // not drawn; do not keep it alive
	h.trans = append(h.trans, t)
}

// Select returns copies of the traces and transitions of rule whose series
// labels agree with alert (an alert's final label set: every label of the
// series, other than the metric name and the "signal" a composite
// detector's panel carries, has the same value in alert). The judged
// series come first, then the others by labels, in a stable order.
func (h *History) Select(rule string, alert labels.Labels) *ReplayResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	res := &ReplayResult{}
	for _, tr := range h.traces {
		if tr.Rule != rule || !labelsMatch(labels.NewBuilder(tr.Labels).Del("signal").Labels(), alert) {
			continue
		}
		res.Traces = append(res.Traces, &Trace{Rule: tr.Rule, Labels: tr.Labels, Points: slices.Clone(tr.Points)})
	}
	// The series the detector judges (with a band) first, as the
	// explanation lists it; then by labels.
	slices.SortFunc(res.Traces, func(a, b *Trace) int {
		if ba, bb := hasBand(a), hasBand(b); ba != bb {
			if ba {
				return -1
			}
			return 1
		}
		return labels.Compare(a.Labels, b.Labels)
	})
	for _, t := range h.trans {
		if t.Rule == rule && labels.Equal(t.Labels, alert) {
			res.Transitions = append(res.Transitions, t)
		}
	}
	return res
}

func hasBand(t *Trace) bool {
	return slices.ContainsFunc(t.Points, func(p TracePoint) bool { return p.HasBand })
}

// WriteSVG draws the chart of the alert with labels alert (alertname
// names its rule): each of its series over the window with the baseline
// band, and the spans where it fired, as `replay --plot` does.
func (h *History) WriteSVG(w io.Writer, alert labels.Labels) error {
	return WriteSVG(w, h.Select(alert.Get(labels.AlertName), alert))
}
