package store

import (
	"context"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// Querier returns a querier over [mint, maxt] (inclusive, milliseconds). It
// reads a consistent copy of each selected series taken at Select time, so
// appends may continue while the engine evaluates.
func (s *Store) Querier(mint, maxt int64) (storage.Querier, error) {
	return &querier{s: s, mint: mint, maxt: maxt}, nil
}

type querier struct {
	s          *Store
	mint, maxt int64
	bufs       []*selectBuf // handed back to the store on Close
}

// selectBuf is the memory one Select copies the selected series into: the
// series and their samples from the tail. A rule evaluation runs one
// query after another, each of which selects the same series again, so a
// querier hands its buffers back on Close (when the engine is done with
// the series) and the next query reuses them instead of leaving them to
// the garbage collector. Buffers for more than maxPooledSeries series are
// not kept, so that what the pool holds stays small.
type selectBuf struct {
	all  []series
	slab []sample
}

const maxPooledSeries = 1024

// selectSeries returns the series matching every matcher, narrowed first by
// an equality matcher on the metric name when there is one.
func (q *querier) selectSeries(ms []*labels.Matcher) []*memSeries {
	var name string
	hasName := false
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			name, hasName = m.Value, true
			break
		}
	}
	q.s.mu.RLock()
	defer q.s.mu.RUnlock()
	var out []*memSeries
	if hasName {
		out = make([]*memSeries, 0, len(q.s.byName[name]))
	}
	match := func(x *memSeries) {
		for _, m := range ms {
			if !m.Matches(x.lset.Get(m.Name)) {
				return
			}
		}
		out = append(out, x)
	}
	if hasName {
		for _, x := range q.s.byName[name] {
			match(x)
		}
		return out
	}
	for _, list := range q.s.byHash {
		for _, x := range list {
			match(x)
		}
	}
	return out
}

func (q *querier) Select(_ context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	sel := q.selectSeries(ms)
	if sortSeries {
		slices.SortFunc(sel, func(a, b *memSeries) int { return labels.Compare(a.lset, b.lset) })
	}
	buf := &selectBuf{}
	if len(sel) <= maxPooledSeries {
		if b, ok := q.s.selectBufs.Get().(*selectBuf); ok {
			buf = b
		}
		q.bufs = append(q.bufs, buf)
	}
	if cap(buf.all) < len(sel) {
		buf.all = make([]series, 0, len(sel))
	}
	if want := len(sel) * tailLen; cap(buf.slab) < want {
		// Room for every series' whole tail: appends below never
		// reallocate, so earlier series keep pointing into this slab.
		buf.slab = make([]sample, 0, want)
	}
	all, slab := buf.all[:0], buf.slab[:0]
	for _, x := range sel {
		chks, smp, fromTail := x.read(mint, maxt, slab)
		if fromTail {
			if n := len(smp) - len(slab); n > 0 {
				all = append(all, series{lset: x.lset, samples: smp[len(slab):len(smp):len(smp)]})
			}
			slab = smp
			continue
		}
		if len(chks) > 0 {
			all = append(all, series{lset: x.lset, chunks: chks})
		}
	}
	buf.all = all
	return &seriesSet{list: all, i: -1}
}

func (q *querier) LabelValues(_ context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, x := range q.selectSeries(ms) {
		if v := x.lset.Get(name); v != "" {
			seen[v] = struct{}{}
		}
	}
	vals := make([]string, 0, len(seen))
	for v := range seen {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	vals, _ = hints.ApplyLimit(vals)
	return vals, nil, nil
}

func (q *querier) LabelNames(_ context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]struct{}{}
	for _, x := range q.selectSeries(ms) {
		x.lset.Range(func(l labels.Label) { seen[l.Name] = struct{}{} })
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	names, _ = hints.ApplyLimit(names)
	return names, nil, nil
}

// Close hands the Select buffers back for reuse: the series sets must not
// be read after it, as storage.Querier documents.
func (q *querier) Close() error {
	for _, b := range q.bufs {
		clear(b.all) // drop references to labels and chunks
		b.all = b.all[:0]
		q.s.selectBufs.Put(b)
	}
	q.bufs = nil
	return nil
}

type seriesSet struct {
	list []series
	i    int
}

func (s *seriesSet) Next() bool {
	s.i++
	return s.i < len(s.list)
}
func (s *seriesSet) At() storage.Series              { return &s.list[s.i] }
func (*seriesSet) Err() error                        { return nil }
func (*seriesSet) Warnings() annotations.Annotations { return nil }

// series is a selected series: its recent samples copied from the tail,
// or its chunks.
type series struct {
	lset    labels.Labels
	chunks  []closedChunk
	samples sampleList
}

func (s *series) Labels() labels.Labels { return s.lset }

// Iterator returns the XOR chunk iterator for a one-chunk series and
// Prometheus' chain iterator over the chunks otherwise (they never overlap,
// so the chain only concatenates).
func (s *series) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if s.samples != nil {
		if r, ok := it.(interface{ Reset(storage.Samples) }); ok {
			r.Reset(&s.samples) // a pointer: no allocation per series
			return it
		}
		return storage.NewListSeriesIterator(&s.samples)
	}
	if len(s.chunks) == 1 {
		var c chunkenc.XORChunk
		c.Reset(s.chunks[0].data)
		return c.Iterator(it)
	}
	its := make([]chunkenc.Iterable, len(s.chunks))
	for i := range s.chunks {
		c := &chunkenc.XORChunk{}
		c.Reset(s.chunks[i].data)
		its[i] = c
	}
	return storage.ChainSampleIteratorFromIterables(it, its)
}

// sampleList serves samples copied from a series' tail to Prometheus' list
// iterator; Get returns pointers into the slice, so it does not allocate.
type sampleList []sample

func (l sampleList) Get(i int) chunks.Sample { return &l[i] }
func (l sampleList) Len() int                { return len(l) }

func (s *sample) T() int64                    { return s.t }
func (*sample) ST() int64                     { return 0 }
func (s *sample) F() float64                  { return s.v }
func (*sample) H() *histogram.Histogram       { return nil }
func (*sample) FH() *histogram.FloatHistogram { return nil }
func (*sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s *sample) Copy() chunks.Sample         { c := *s; return &c }
