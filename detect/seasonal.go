package detect

// Seasonal is a seasonal baseline learned online: the period (e.g. a week)
// is cut into equal buckets (e.g. 168 hours) and each bucket keeps its own
// EWMA of the values that fell in it. Expected values for a timestamp cost
// one division and one lookup; memory is fixed at construction.
type Seasonal struct {
	periodMs int64
	bucketMs int64
	buckets  []EWMA
	// The last bucket looked up and the time span it covers, so that
	// consecutive samples in one bucket skip two 64-bit divisions. Derived
	// state: not part of snapshots.
	lastIdx            int
	lastFrom, lastTill int64
}

// NewSeasonal returns a baseline with the given period and number of
// buckets, each bucket smoothing with alpha. It panics if buckets < 1 or the
// period is shorter than the number of buckets (configs validate first).
func NewSeasonal(periodMs int64, buckets int, alpha float64) Seasonal {
	if buckets < 1 || periodMs < int64(buckets) {
		panic("detect: invalid seasonal period or buckets")
	}
	s := Seasonal{periodMs: periodMs, bucketMs: periodMs / int64(buckets), buckets: make([]EWMA, buckets)}
	for i := range s.buckets {
		s.buckets[i] = NewEWMA(alpha)
	}
	return s
}

// Bucket returns the bucket index for ts (Unix milliseconds, UTC).
func (s *Seasonal) Bucket(ts int64) int {
	if ts >= s.lastFrom && ts < s.lastTill {
		return s.lastIdx
	}
	return s.locate(ts)
}

// locate is Bucket for a ts outside the cached bucket; apart, Bucket's
// common path is small enough to be inlined.
//
//go:noinline
func (s *Seasonal) locate(ts int64) int {
	// Most lookups that miss the cached bucket come from a series that
	// moved on into the next one (on hourly data, every sample): its
	// span follows from the cached one without the two divisions.
	if next := s.lastIdx + 1; ts >= s.lastTill && next < len(s.buckets)-1 && ts < s.lastTill+s.bucketMs && s.lastTill > s.lastFrom {
		s.lastIdx = next
		s.lastFrom = s.lastTill
		s.lastTill += s.bucketMs
		return next
	}
	off := ts % s.periodMs
	if off < 0 {
		off += s.periodMs
	}
	last := int64(len(s.buckets) - 1)
	idx := min(off/s.bucketMs, last)
	s.lastIdx = int(idx)
	s.lastFrom = ts - (off - idx*s.bucketMs)
	s.lastTill = s.lastFrom + s.bucketMs
	if idx == last { // the last bucket takes the remainder of the period
		s.lastTill = s.lastFrom + s.periodMs - idx*s.bucketMs
	}
	return s.lastIdx
}

// At returns the bucket statistics for ts; Count() == 0 means that part of
// the period has not been seen yet.
func (s *Seasonal) At(ts int64) *EWMA {
	if ts >= s.lastFrom && ts < s.lastTill {
		return &s.buckets[s.lastIdx]
	}
	return s.atSlow(ts)
}

//go:noinline
func (s *Seasonal) atSlow(ts int64) *EWMA { return &s.buckets[s.locate(ts)] }

// Update adds x to the bucket of ts.
func (s *Seasonal) Update(ts int64, x float64) { s.At(ts).Update(x) }

func (s *Seasonal) encode(w *encoder) {
	w.i64(s.periodMs)
	w.u64(uint64(len(s.buckets)))
	for i := range s.buckets {
		s.buckets[i].encode(w)
	}
}

func (s *Seasonal) decode(r *decoder) {
	if p := r.i64(); r.err == nil && p != s.periodMs {
		r.err = errorf("seasonal period %d ms, this detector has %d ms", p, s.periodMs)
		return
	}
	if n := r.u64(); r.err == nil && n != uint64(len(s.buckets)) {
		r.err = errorf("%d seasonal buckets, this detector has %d", n, len(s.buckets))
		return
	}
	for i := range s.buckets {
		s.buckets[i].decode(r)
	}
}
