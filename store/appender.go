package store

import (
	"github.com/prometheus/prometheus/model/labels"
)

// SeriesRef is a handle to a stored series returned by Appender.Append.
// Callers cache it next to the series' labels to skip the label lookup on
// the next append; the zero value means "look it up".
type SeriesRef struct{ s *memSeries }

// IsZero reports whether ref refers to no series.
func (r SeriesRef) IsZero() bool { return r.s == nil }

// Appender batches samples and applies them on Commit, so a failed scrape
// can be rolled back as a whole. An Appender is not safe for concurrent use;
// take one per goroutine and reuse it (Commit and Rollback reset it).
type Appender struct {
	s       *Store
	pending []pendingSample
}

type pendingSample struct {
	s *memSeries
	t int64
	v float64
}

// SetType records a metric family's type at once (see Store.SetType):
// types are no samples, and a rolled-back scrape's are as true.
func (a *Appender) SetType(family []byte, typ string) { a.s.SetType(family, typ) }

// Appender returns a new, empty appender.
func (s *Store) Appender() *Appender { return &Appender{s: s} }

// Append queues a sample for lset (which the store keeps: do not reuse its
// memory) at t (unix milliseconds). A non-zero ref from an earlier Append
// skips the lookup. It returns ErrSeriesLimit when lset is a new series and
// the store is full; the sample is then counted as rejected.
func (a *Appender) Append(ref SeriesRef, lset labels.Labels, t int64, v float64) (SeriesRef, error) {
	ms := ref.s
	if ms != nil && ms.deleted.Load() {
		ms = nil // truncated away: resolve the labels again
	}
	if ms == nil {
		if lset.IsEmpty() {
			return SeriesRef{}, ErrEmptyLabels
		}
		var err error
		ms, err = a.s.getOrCreate(lset, lset.Hash())
		if err != nil {
			a.s.m.rejectedLimit.Inc()
			return SeriesRef{}, err
		}
	}
	a.pending = append(a.pending, pendingSample{s: ms, t: t, v: v})
	return SeriesRef{ms}, nil
}

// Commit applies the queued samples and resets the appender. Samples older
// than their series' last sample, or at the same time with another value,
// are dropped and counted by reason; Commit returns how many were stored.
func (a *Appender) Commit() int {
	n := 0
	for i := range a.pending {
		p := &a.pending[i]
		reason, deleted := p.s.appendSample(p.t, p.v, &a.s.m.chunkBytes)
		if deleted {
			// Truncated away since Append: look the labels up again.
			ms, err := a.s.getOrCreate(p.s.lset, p.s.hash)
			if err != nil {
				a.s.m.rejectedLimit.Inc()
				continue
			}
			reason, _ = ms.appendSample(p.t, p.v, &a.s.m.chunkBytes)
		}
		switch reason {
		case "":
			n++
		case ReasonOutOfOrder:
			a.s.m.rejectedOOO.Inc()
		case ReasonDuplicate:
			a.s.m.rejectedDup.Inc()
		case reasonRepeat: // already held: neither stored nor rejected
		}
		p.s = nil
	}
	a.s.m.appended.Add(n)
	a.pending = a.pending[:0]
	return n
}

// Rollback drops the queued samples and resets the appender.
func (a *Appender) Rollback() {
	clear(a.pending)
	a.pending = a.pending[:0]
}
