package detect

import "math"

// NormalTail is the upper tail probability P(Z > z) of a standard normal.
// It stays accurate far into the tail (it does not round 1-Φ(z) to 0).
func NormalTail(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// NormalTailZ is NormalTail's inverse: the z whose upper tail is p.
func NormalTailZ(p float64) float64 { return math.Sqrt2 * math.Erfcinv(2*p) }

// tailAtScore is LogTailScore's inverse on its range: the largest tail
// probability that scores s (0 < s ≤ 1).
func tailAtScore(s float64) float64 { return math.Pow(1e-10, s) - 1e-10 }

// LogTailScore maps a tail probability p to a score in [0, 1] on a log
// scale: 0 for p = 1, 0.5 for p = 1e-5, 1 for p <= 1e-10 (Numenta's
// log-likelihood scaling). It spreads the interesting region, p between 1e-3
// and 1e-8, over most of the score range so that a fixed threshold is
// meaningful.
func LogTailScore(p float64) float64 {
	if !(p < 1) {
		return 0
	}
	s := math.Log(p+1e-10) / logTiny
	// min(max(s, 0), 1) without the builtins' extra work for signed
	// zeros: -0 (p near 1) becomes +0, and NaN stays NaN.
	switch {
	case s > 1:
		return 1
	case s > 0:
		return s
	case s <= 0:
		return 0
	}
	return s
}

// logTiny is math.Log(1e-10), which the compiler does not fold.
var logTiny = math.Log(1e-10)

// Likelihood is the anomaly-likelihood layer: it turns a stream of raw
// surprise values (any scale, larger is more surprising) into the tail
// probability that the recent average of raw values is this high, judged
// against the long-run distribution of that average. A series that is always
// noisy therefore stops scoring high, and a burst of surprise scores higher
// than a single outlier. Numenta use sliding windows; here both windows are
// exponential, so an update is O(1) with no buffers.
type Likelihood struct {
	short EWMA // recent average of raw values
	long  EWMA // long-run mean and variance of the recent average
	// minStd floors the long-run standard deviation so that a long quiet
	// stretch does not make the smallest blip look impossible.
	minStd float64
	minVar float64 // derived by varFloor; not part of snapshots
}

// varFloor is minStd², the floor z takes for the long-run variance, but
// +Inf for a NaN minStd (which only a corrupt snapshot carries): with it z
// floors the variance in one comparison and still judges nothing, as
// the NaN that the builtin max would give it does.
func varFloor(minStd float64) float64 {
	if minStd != minStd {
		return math.Inf(1)
	}
	return minStd * minStd
}

// NewLikelihood returns a likelihood layer averaging raw values over about
// shortHalfLife samples and learning their distribution over about
// longHalfLife samples.
func NewLikelihood(shortHalfLife, longHalfLife, minStd float64) Likelihood {
	return Likelihood{
		short:  NewEWMA(AlphaForHalfLife(shortHalfLife)),
		long:   NewEWMA(AlphaForHalfLife(longHalfLife)),
		minStd: minStd,
		minVar: varFloor(minStd),
	}
}

// Update adds a raw value and returns the tail probability of the recent
// average; 1 means "not more than one standard deviation above the
// long-run mean". The long-run distribution
// learns the average after it is judged, so a sample does not mask itself.
func (l *Likelihood) Update(raw float64) float64 {
	if z := l.UpdateZ(raw); z > 0 {
		return NormalTail(z)
	}
	return 1
}

// UpdateZ is Update without the tail probability: it returns how many
// long-run standard deviations the recent average lies above the long-run
// mean when that is more than one, and 0 otherwise. NormalTail(z) is what
// Update returns; since NormalTail falls as z grows, a detector that takes
// the least likely of several likelihoods can take the largest z and pay
// for one NormalTail instead of one per likelihood.
func (l *Likelihood) UpdateZ(raw float64) float64 {
	avg := l.average(raw)
	z := 0.0
	if l.long.n > 0 {
		z = l.z(avg)
	}
	l.long.Update(avg)
	return z
}

// UpdateZ is split in three steps, each small enough to be inlined, so that
// a detector updating several likelihoods per sample (Auto) can do so in
// one call: average adds raw to the recent average and returns it, z
// judges it against the long-run distribution (once there is one, with
// l.long.n > 0), and l.long.Update(avg) then learns it.

func (l *Likelihood) average(raw float64) float64 {
	// EWMA.UpdateMean (only its mean is read), in place once steady.
	if l.short.steady() {
		l.short.learnMean(raw)
	} else {
		l.short.UpdateMean(raw)
	}
	return l.short.mean
}

// z is UpdateZ's judgement of avg. It needs a long run to judge
// against: its callers ask once l.long.n > 0, or where avg is 0, which
// z judges 0 regardless (Auto's level likelihood on its first sample).
func (l *Likelihood) z(avg float64) float64 {
	// Within one standard deviation above the long-run mean (or below it)
	// nothing is unusual; reporting 0 there instead of a z below 1 lets
	// most samples skip the tail probability altogether.
	// z = d/max(std, minStd) > 1, compared in squares.
	d, v := avg-l.long.mean, l.long.vr
	// max(v, minStd²) as the builtin computes it (a NaN v stays, +0
	// over -0); see varFloor for a NaN minStd.
	if m := l.minVar; v <= m {
		v = m
	}
	// d > 0 and d² > v in one comparison (v is never negative). Whether
	// a sample is in the tail is a coin toss to the CPU, several times
	// per sample in Auto, so z is worked out on every sample and kept or
	// zeroed by a mask that the comparison sets with a conditional move,
	// not a branch.
	keep := uint64(0)
	if d*math.Abs(d) > v {
		keep = math.MaxUint64
	}
	return math.Float64frombits(math.Float64bits(d/math.Sqrt(v)) & keep)
}

// Count is the number of raw values seen.
func (l *Likelihood) Count() uint64 { return l.short.Count() }

func (l *Likelihood) encode(w *encoder) {
	l.short.encode(w)
	l.long.encode(w)
	w.f64(l.minStd)
}

func (l *Likelihood) decode(r *decoder) {
	l.short.decode(r)
	l.long.decode(r)
	l.minStd = r.f64()
	l.minVar = varFloor(l.minStd)
}
