package detect

import (
	"math"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool {
	// v-v is 0 for every finite v and NaN for NaN and ±Inf: one
	// subtraction and one comparison instead of a test for each.
	return v-v == 0
}

// skipVerdict is what a detector returns for a NaN or infinite sample: the
// previous baseline, no score, never anomalous.
func skipVerdict(prev Verdict) Verdict {
	prev.Score = 0
	prev.Direction = DirNone
	prev.Evidence = EvidenceNone
	if prev.State == StateAnomalous {
		prev.State = StateNormal
	}
	return prev
}

// direction returns the direction of x relative to expected.
func direction(x, expected float64) Direction {
	// Up minus down, from flags rather than branches: whether a noisy
	// value lies above or below its expectation is a coin toss that
	// branch prediction gets wrong half the time.
	return Direction(bit(x > expected) - bit(x < expected))
}

// bit is 1 for true and 0 for false; the compiler reads it from the
// comparison's flags (SETcc) instead of branching.
func bit(b bool) int8 {
	var i int8
	if b {
		i = 1
	}
	return i
}

// scaleFloor is the smallest scale a detector divides by for a series
// around level loc: a flat series still has some tolerance, relative to its
// magnitude, so that float noise is not an anomaly.
func scaleFloor(loc float64) float64 { return 1e-3*math.Abs(loc) + 1e-9 }

// rangeFloor is scaleFloor with the magnitude taken at most up to reach
// and least in place of scaleFloor's 10⁻⁹: auto passes ten times the
// series' range so far (see Auto.floorReach), so that its floor is never
// more than a hundredth of that range, and a least floor that shrinks
// with a series whose values never reach 1.
//
// A magnitude measured from 0 is not every series' own scale. Memory or
// disk in bytes, a temperature in kelvin, a gauge with a constant
// offset: such a series moves by a small share of its level, and a
// thousandth of the level can be as large as its noise, or larger. Its
// likelihoods, whose surprise the floor then holds near 0 most of the
// time, learn a long run with next to no spread and page on moves
// within the series' usual range; with a larger offset its incidents
// lie within one spread and nothing pages. NAB with a constant of 100
// times each file's range added to its values scored 66.49 with
// scaleFloor and 72.16 with this; with 1,000 times, 49.04 and 72.29
// (74.23 as published, where nothing changes: its series span more
// than a tenth of their level; docs/detectors.md, "A floor at the
// series' own scale").
//
// res is the least spread a reading can show at all, whatever its
// magnitude: auto passes the resolution of a gauge written on a lattice
// (see Auto.resolution), the plain kinds 0. The floor is the larger of
// the two.
func rangeFloor(loc, reach, least, res float64) float64 {
	return maxf(1e-3*minf(math.Abs(loc), reach)+least, res)
}

// floorFit returns what rangeFloor needs for a series whose values
// have spanned lo to hi: the span the magnitude may reach (floorSpans
// ranges) and the least floor (10⁻⁹ times the largest magnitude where
// that is below 1, and at least 10⁻¹⁵). Auto.fitFloor gives the
// reasons.
func floorFit(lo, hi float64) (span, least float64) {
	return floorSpans * (hi - lo), maxf(1e-9*minf(1, maxf(hi, -lo)), 1e-15)
}

// valueRange is the lowest and highest value a plain detector (zscore,
// ewma, mad, cusum, seasonal) has seen, from which its floor is worked
// out as auto's is: at most a hundredth of the range once the warm-up is
// over (see rangeFloor). With scaleFloor's thousandth of the magnitude
// they were blind where auto was: zscore scored 0.00 on NAB with 1,000
// times each file's range added to its values, as a gauge of bytes or
// of kelvins has (docs/detectors.md, "A floor at the series' own
// scale").
type valueRange struct{ lo, hi float64 }

// newValueRange returns a range that no value has set yet.
func newValueRange() valueRange { return valueRange{math.Inf(1), math.Inf(-1)} }

// observe widens the range to x.
func (r *valueRange) observe(x float64) {
	r.lo, r.hi = minf(r.lo, x), maxf(r.hi, x)
}

// floor is the least scale around level loc: scaleFloor's until the
// warm-up is over (warm), as for auto, and rangeFloor's from then on.
func (r *valueRange) floor(loc float64, warm bool) float64 {
	if !warm || r.lo > r.hi {
		return scaleFloor(loc)
	}
	span, least := floorFit(r.lo, r.hi)
	return rangeFloor(loc, reachAt(span, loc), least, 0)
}

func (r *valueRange) encode(w *encoder) {
	w.f64(r.lo)
	w.f64(r.hi)
}

// decode reads what encode wrote; a range with a NaN, or a lowest value
// above the highest that is not the empty range, is no range.
func (r *valueRange) decode(d *decoder) {
	r.lo, r.hi = d.f64(), d.f64()
	if d.err == nil && !(r.lo <= r.hi) && !(math.IsInf(r.lo, 1) && math.IsInf(r.hi, -1)) {
		d.err = errorf("value range [%v, %v]", r.lo, r.hi)
	}
}

// checkHalfLife records an error unless v is a positive, finite number of
// samples.
func checkHalfLife(errs *configutil.Errors, field string, v float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		errs.Addf(field, "must be a positive number of samples, got %v", v)
	}
}

// zScore maps a deviation of z standard deviations (either side) to a score
// in [0, 1]: the log-scaled two-sided normal tail probability, so 0.5 is
// about 4.4 sigma and 1 about 6.5 sigma. Within one sigma (scores below
// 0.05) it returns 0 without computing the tail, which is most samples.
func zScore(z float64) float64 {
	z = math.Abs(z)
	if z <= 1 {
		return 0
	}
	return LogTailScore(2 * NormalTail(z))
}

// bandVerdict builds the verdict for x judged against expected ± k*scale.
func bandVerdict(x, expected, scale, k, score float64) Verdict {
	return Verdict{
		Score:     score,
		Expected:  expected,
		Lower:     expected - k*scale,
		Upper:     expected + k*scale,
		Direction: direction(x, expected),
		State:     StateNormal,
	}
}

// settle sets the verdict's state from warm-up progress and threshold.
func settle(v *Verdict, warm bool, threshold float64) {
	switch {
	case !warm:
		v.State = StateWarmingUp
		v.Score = 0
	case v.Score >= threshold:
		v.State = StateAnomalous
	default:
		v.State = StateNormal
	}
}

// scored is e where the score is positive and EvidenceNone where it is 0:
// the evidence of a detector that judges one way only.
func scored(score float64, e Evidence) Evidence {
	if score > 0 {
		return e
	}
	return EvidenceNone
}

// checkCommon validates the fields every simple detector shares.
func checkCommon(errs *configutil.Errors, threshold float64, warmUp int, band float64) {
	if !(threshold > 0 && threshold <= 1) {
		errs.Addf("threshold", "must be in (0, 1], got %v", threshold)
	}
	if warmUp < 1 {
		errs.Addf("warm_up", "must be at least 1 sample, got %d", warmUp)
	}
	if !(band > 0) || math.IsInf(band, 0) {
		errs.Addf("band", "must be a positive number of standard deviations, got %v", band)
	}
}
