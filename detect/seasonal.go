package detect

// Seasonal is a seasonal baseline learned online: the period (e.g. a week)
// is cut into equal buckets (e.g. 168 hours) and each bucket keeps its own
// EWMA of the values that fell in it. Expected values for a timestamp cost
// one division and one lookup; memory is fixed at construction.
type Seasonal struct {
	periodMs int64
	bucketMs int64
	buckets  []EWMA
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
	off := ts % s.periodMs
	if off < 0 {
		off += s.periodMs
	}
	return int(min(off/s.bucketMs, int64(len(s.buckets)-1)))
}

// At returns the bucket statistics for ts; Count() == 0 means that part of
// the period has not been seen yet.
func (s *Seasonal) At(ts int64) *EWMA { return &s.buckets[s.Bucket(ts)] }

// Update adds x to the bucket of ts.
func (s *Seasonal) Update(ts int64, x float64) { s.buckets[s.Bucket(ts)].Update(x) }

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
