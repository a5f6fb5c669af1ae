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
func rangeFloor(loc, reach, least float64) float64 {
	return 1e-3*minf(math.Abs(loc), reach) + least
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
