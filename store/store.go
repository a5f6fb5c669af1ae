// Package store is seismo's embedded series store: an in-memory,
// memory-bounded set of float series with a fixed retention, compressed in
// Gorilla/XOR chunks (Prometheus' tsdb/chunkenc), that implements Prometheus'
// storage.Queryable so promql.NewEngine evaluates rule expressions over it
// with exact PromQL semantics.
//
// Memory is bounded by Config.MaxSeries (new series beyond it are dropped and
// counted) and by Config.Retention (older chunks and series are removed by
// Truncate, which Run calls periodically).
package store

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// samplesPerChunk is where a head chunk is cut, as in Prometheus' head: XOR
// compression gains little past ~120 samples and truncation works per chunk.
const samplesPerChunk = 120

// tailLen is how many of its latest samples a series also keeps
// uncompressed. Rules read short recent windows (rate over 1m: 6 to 7
// samples at 10s); a query whose window lies inside the tail copies those
// samples instead of decoding the head chunk from its start (on average 60
// samples, the bulk of an evaluation's CPU) and copying it.
const tailLen = 8

// Errors returned by Appender.Append.
var (
	ErrSeriesLimit = errors.New("series limit reached")
	ErrEmptyLabels = errors.New("empty label set")
)

// Rejection reasons, the values of the reason label of
// seismo_store_samples_rejected_total.
const (
	ReasonSeriesLimit = "series_limit"
	ReasonOutOfOrder  = "out_of_order"
	ReasonDuplicate   = "duplicate"
	// reasonRepeat marks a sample not stored because the series already
	// holds it (or a staleness marker at the same instant): not an error,
	// but not a stored sample either.
	reasonRepeat = "repeat"
)

// Options configure a Store.
type Options struct {
	Config Config
	Logger *slog.Logger
	// Metrics receives the store's self-metrics; nil registers nowhere.
	Metrics *metrics.Set
	// Now is the clock Run uses to decide what is past retention; nil means
	// time.Now.
	Now func() time.Time
	// TruncateInterval is how often Run drops data past retention; zero
	// means one minute.
	TruncateInterval time.Duration
	// SnapshotFile, when set, keeps history across restarts: New loads it
	// (a missing or damaged file means an empty store, logged), Run writes
	// it every SnapshotInterval (zero: 15 minutes) and when it ends.
	SnapshotFile     string
	SnapshotInterval time.Duration
}

// Store holds series in memory. All methods are safe for concurrent use.
type Store struct {
	logger           *slog.Logger
	now              func() time.Time
	truncateInterval time.Duration
	snapshotFile     string
	snapshotInterval time.Duration

	retention atomic.Int64 // milliseconds
	maxSeries atomic.Int64

	mu     sync.RWMutex
	byHash map[uint64][]*memSeries
	byName map[string][]*memSeries
	nextID uint64
	count  int

	// selectBufs recycles the memory Select copies into (see selectBuf).
	selectBufs sync.Pool

	// types holds each metric family's type as the expositions scraped
	// into the store gave it (see SetType).
	typesMu sync.RWMutex
	types   map[string]string

	m storeMetrics
}

// maxTypes bounds the metric families whose types the store keeps: a
// target that sends endless # TYPE lines cannot grow it further.
const maxTypes = 100_000

// SetType records the type an exposition's # TYPE line gives a metric
// family ("counter", "gauge", "histogram", ...), for MetricTypes: the
// rules engine reads it to tell a counter from a gauge whatever their
// names (rules.LintTyped). The latest scrape's word wins. Most calls
// find the type already known and take only a read lock.
func (s *Store) SetType(family []byte, typ string) {
	s.typesMu.RLock()
	old, ok := s.types[string(family)]
	s.typesMu.RUnlock()
	if ok && old == typ {
		return
	}
	s.typesMu.Lock()
	defer s.typesMu.Unlock()
	if s.types == nil {
		s.types = make(map[string]string)
	}
	if _, ok := s.types[string(family)]; !ok && len(s.types) >= maxTypes {
		return
	}
	s.types[string(family)] = typ
}

// MetricTypes returns a copy of the metric families' types that
// SetType recorded.
func (s *Store) MetricTypes() map[string]string {
	s.typesMu.RLock()
	defer s.typesMu.RUnlock()
	return maps.Clone(s.types)
}

type storeMetrics struct {
	appended      *metrics.Counter
	created       *metrics.Counter
	removed       *metrics.Counter
	rejectedLimit *metrics.Counter
	rejectedOOO   *metrics.Counter
	rejectedDup   *metrics.Counter
	chunkBytes    atomic.Int64 // bytes of closed chunks
}

// New returns an empty store.
func New(opts Options) (*Store, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		logger:           opts.Logger,
		now:              opts.Now,
		truncateInterval: opts.TruncateInterval,
		snapshotFile:     opts.SnapshotFile,
		snapshotInterval: opts.SnapshotInterval,
		byHash:           map[uint64][]*memSeries{},
		byName:           map[string][]*memSeries{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.logger = s.logger.With("component", "store")
	if s.now == nil {
		s.now = time.Now
	}
	if s.truncateInterval <= 0 {
		s.truncateInterval = time.Minute
	}
	if s.snapshotInterval <= 0 {
		s.snapshotInterval = 15 * time.Minute
	}
	s.ApplyConfig(opts.Config)
	set := opts.Metrics
	if set == nil {
		set = metrics.NewSet()
	}
	s.m.appended = set.GetOrCreateCounter("seismo_store_samples_appended_total")
	s.m.created = set.GetOrCreateCounter("seismo_store_series_created_total")
	s.m.removed = set.GetOrCreateCounter("seismo_store_series_removed_total")
	s.m.rejectedLimit = set.GetOrCreateCounter(`seismo_store_samples_rejected_total{reason="` + ReasonSeriesLimit + `"}`)
	s.m.rejectedOOO = set.GetOrCreateCounter(`seismo_store_samples_rejected_total{reason="` + ReasonOutOfOrder + `"}`)
	s.m.rejectedDup = set.GetOrCreateCounter(`seismo_store_samples_rejected_total{reason="` + ReasonDuplicate + `"}`)
	set.GetOrCreateGauge("seismo_store_series", func() float64 { return float64(s.NumSeries()) })
	set.GetOrCreateGauge("seismo_store_chunk_bytes", func() float64 { return float64(s.m.chunkBytes.Load()) })
	set.GetOrCreateGauge("seismo_store_max_series", func() float64 { return float64(s.maxSeries.Load()) })
	if s.snapshotFile != "" {
		if err := s.LoadSnapshot(s.snapshotFile); err != nil {
			s.logger.Warn("starting with an empty store", "file", s.snapshotFile, "err", err)
			s.reset()
		}
		s.Truncate(s.now().UnixMilli() - s.retention.Load())
		if n := s.NumSeries(); n > 0 {
			s.logger.Info("store restored from snapshot", "file", s.snapshotFile, "series", n)
		}
	}
	return s, nil
}

// reset empties the store (after a snapshot failed half-way).
func (s *Store) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byHash, s.byName, s.count = map[uint64][]*memSeries{}, map[string][]*memSeries{}, 0
	s.m.chunkBytes.Store(0)
}

// ApplyConfig changes retention and the series limit. Stored data is kept;
// a lower limit only stops new series, a shorter retention takes effect at
// the next Truncate.
func (s *Store) ApplyConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.retention.Store(cfg.Retention.Milliseconds())
	s.maxSeries.Store(int64(cfg.MaxSeries))
	return nil
}

// Run truncates data past retention every TruncateInterval and, with a
// SnapshotFile, writes the snapshot every SnapshotInterval and once more
// when ctx ends (callers stop the collectors first, so their staleness
// markers are in it).
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(s.truncateInterval)
	defer t.Stop()
	var snap <-chan time.Time
	if s.snapshotFile != "" {
		st := time.NewTicker(s.snapshotInterval)
		defer st.Stop()
		snap = st.C
	}
	for {
		select {
		case <-ctx.Done():
			s.snapshot()
			return nil
		case <-t.C:
			s.Truncate(s.now().UnixMilli() - s.retention.Load())
		case <-snap:
			s.snapshot()
		}
	}
}

func (s *Store) snapshot() {
	if s.snapshotFile == "" {
		return
	}
	if err := s.WriteSnapshot(s.snapshotFile); err != nil {
		s.logger.Warn("store snapshot failed", "err", err)
	}
}

// NumSeries returns the number of series held.
func (s *Store) NumSeries() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.count
}

// Truncate drops every chunk whose samples are all older than mint, and
// every series left without samples.
func (s *Store) Truncate(mint int64) {
	s.mu.RLock()
	var empty []*memSeries
	for _, list := range s.byHash {
		for _, ms := range list {
			if ms.truncate(mint, &s.m.chunkBytes) {
				empty = append(empty, ms)
			}
		}
	}
	s.mu.RUnlock()
	if len(empty) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]struct{}{}
	for _, ms := range empty {
		ms.mu.Lock()
		// A sample may have arrived between the two locks.
		if ms.lastT >= mint || ms.deleted.Load() {
			ms.mu.Unlock()
			continue
		}
		ms.deleted.Store(true)
		ms.mu.Unlock()
		s.byHash[ms.hash] = removeSeries(s.byHash[ms.hash], ms)
		if len(s.byHash[ms.hash]) == 0 {
			delete(s.byHash, ms.hash)
		}
		names[ms.lset.Get(labels.MetricName)] = struct{}{}
		s.count--
		s.m.removed.Inc()
	}
	for n := range names {
		list := s.byName[n][:0:0]
		for _, ms := range s.byName[n] {
			if !ms.isDeleted() {
				list = append(list, ms)
			}
		}
		if len(list) == 0 {
			delete(s.byName, n)
		} else {
			s.byName[n] = list
		}
	}
}

func removeSeries(list []*memSeries, ms *memSeries) []*memSeries {
	out := list[:0]
	for _, x := range list {
		if x != ms {
			out = append(out, x)
		}
	}
	return out
}

// getOrCreate returns the series for lset, creating it unless the series
// limit is reached.
func (s *Store) getOrCreate(lset labels.Labels, hash uint64) (*memSeries, error) {
	s.mu.RLock()
	ms := s.lookupLocked(lset, hash)
	s.mu.RUnlock()
	if ms != nil {
		return ms, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ms := s.lookupLocked(lset, hash); ms != nil {
		return ms, nil
	}
	if int64(s.count) >= s.maxSeries.Load() {
		return nil, ErrSeriesLimit
	}
	s.nextID++
	ms = &memSeries{id: s.nextID, lset: lset, hash: hash, lastT: math.MinInt64}
	s.byHash[hash] = append(s.byHash[hash], ms)
	name := lset.Get(labels.MetricName)
	s.byName[name] = append(s.byName[name], ms)
	s.count++
	s.m.created.Inc()
	return ms, nil
}

func (s *Store) lookupLocked(lset labels.Labels, hash uint64) *memSeries {
	for _, ms := range s.byHash[hash] {
		if labels.Equal(ms.lset, lset) {
			return ms
		}
	}
	return nil
}

// memSeries is one series: closed XOR chunks plus a head chunk being
// appended to.
type memSeries struct {
	id   uint64
	lset labels.Labels
	hash uint64

	mu      sync.Mutex
	chunks  []closedChunk
	head    *chunkenc.XORChunk
	app     chunkenc.Appender
	headMin int64
	lastT   int64
	lastV   float64
	// tail holds the latest tailN (at most tailLen) samples in a ring;
	// tailPos is where the next one goes.
	tail    [tailLen]sample
	tailN   uint8
	tailPos uint8
	// deleted is set (under mu) when Truncate removes the series; Append
	// reads it without the lock to drop a stale cached ref.
	deleted atomic.Bool
}

type closedChunk struct {
	minT, maxT int64
	data       []byte // immutable once closed
}

func (ms *memSeries) isDeleted() bool { return ms.deleted.Load() }

// appendSample adds one sample; reason is non-empty when it is rejected.
// deleted reports that the series was removed meanwhile.
func (ms *memSeries) appendSample(t int64, v float64, chunkBytes *atomic.Int64) (reason string, deleted bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.deleted.Load() {
		return "", true
	}
	switch {
	case t < ms.lastT:
		return ReasonOutOfOrder, false
	case t == ms.lastT:
		if math.Float64bits(v) == math.Float64bits(ms.lastV) {
			return reasonRepeat, false // the same sample again: nothing to do
		}
		if value.IsStaleNaN(v) || value.IsStaleNaN(ms.lastV) {
			return reasonRepeat, false // a marker racing a sample at the same instant
		}
		return ReasonDuplicate, false
	}
	if ms.head == nil || ms.head.NumSamples() >= samplesPerChunk {
		if ms.head != nil {
			ms.head.Compact()
			b := ms.head.Bytes()
			ms.chunks = append(ms.chunks, closedChunk{minT: ms.headMin, maxT: ms.lastT, data: b})
			chunkBytes.Add(int64(len(b)))
		}
		ms.head = chunkenc.NewXORChunk()
		ms.app, _ = ms.head.Appender() // cannot fail on an empty chunk
		ms.headMin = t
	}
	ms.app.Append(0, t, v)
	ms.lastT, ms.lastV = t, v
	ms.tail[ms.tailPos] = sample{t: t, v: v}
	ms.tailPos = (ms.tailPos + 1) % tailLen
	ms.tailN = min(ms.tailN+1, tailLen)
	return "", false
}

// sample is one float sample.
type sample struct {
	t int64
	v float64
}

// tailSamples appends to dst the samples in [mint, maxt] when the tail
// holds all of them, which it does when its oldest sample is before mint
// (so nothing in the window can sit in a chunk only). ok is false when
// the chunks must be read instead. Callers hold ms.mu.
func (ms *memSeries) tailSamples(mint, maxt int64, dst []sample) (out []sample, ok bool) {
	if ms.tailN < tailLen {
		return dst, false
	}
	oldest := ms.tailPos // the ring is full: the next slot holds the oldest
	if ms.tail[oldest].t >= mint {
		return dst, false
	}
	for i := range uint8(tailLen) {
		smp := ms.tail[(oldest+i)%tailLen]
		if smp.t >= mint && smp.t <= maxt {
			dst = append(dst, smp)
		}
	}
	return dst, true
}

// truncate drops closed chunks entirely before mint and reports whether the
// series holds nothing at or after mint.
func (ms *memSeries) truncate(mint int64, chunkBytes *atomic.Int64) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	i := 0
	for i < len(ms.chunks) && ms.chunks[i].maxT < mint {
		chunkBytes.Add(-int64(len(ms.chunks[i].data)))
		i++
	}
	if i > 0 {
		ms.chunks = append(ms.chunks[:0:0], ms.chunks[i:]...)
	}
	if ms.head != nil && ms.lastT < mint {
		ms.head, ms.app = nil, nil
		ms.tailN, ms.tailPos = 0, 0
	}
	return ms.head == nil && len(ms.chunks) == 0
}

// read returns the samples in [mint, maxt] from the tail, appended to smp,
// when the tail holds them all (fromTail), and otherwise the chunks that
// overlap [mint, maxt] as snapshot does.
func (ms *memSeries) read(mint, maxt int64, smp []sample) (chks []closedChunk, out []sample, fromTail bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if out, ok := ms.tailSamples(mint, maxt, smp); ok {
		return nil, out, true
	}
	return ms.snapshotLocked(mint, maxt, nil), smp, false
}

// snapshot returns the chunks that overlap [mint, maxt]; the head chunk is
// copied because appends keep writing to it.
func (ms *memSeries) snapshot(mint, maxt int64, dst []closedChunk) []closedChunk {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.snapshotLocked(mint, maxt, dst)
}

func (ms *memSeries) snapshotLocked(mint, maxt int64, dst []closedChunk) []closedChunk {
	for _, c := range ms.chunks {
		if c.maxT >= mint && c.minT <= maxt {
			dst = append(dst, c)
		}
	}
	if ms.head != nil && ms.lastT >= mint && ms.headMin <= maxt {
		b := ms.head.Bytes()
		dst = append(dst, closedChunk{minT: ms.headMin, maxT: ms.lastT, data: append([]byte(nil), b...)})
	}
	return dst
}

// Stats describes the memory held by the store.
type Stats struct {
	Series  int
	Samples int
	// ChunkBytes is the size of the compressed sample data (closed and
	// head chunks, without slice headers).
	ChunkBytes int
}

// Stats walks every series; it is meant for tests, benchmarks and debug
// pages, not for hot paths.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{Series: s.count}
	for _, list := range s.byHash {
		for _, ms := range list {
			ms.mu.Lock()
			for _, c := range ms.chunks {
				st.ChunkBytes += len(c.data)
				st.Samples += int(uint16(c.data[0])<<8 | uint16(c.data[1]))
			}
			if ms.head != nil {
				st.ChunkBytes += len(ms.head.Bytes())
				st.Samples += ms.head.NumSamples()
			}
			ms.mu.Unlock()
		}
	}
	return st
}

var _ storage.Queryable = (*Store)(nil)
