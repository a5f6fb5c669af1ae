package detect

import "math"

// EWMA is an exponentially weighted moving mean and variance (West's
// incremental form). The zero value is unusable; make one with NewEWMA.
// It costs a handful of float operations per update and no allocation.
type EWMA struct {
	alpha float64
	mean  float64
	vr    float64
	n     uint64
	// Derived from alpha, not part of snapshots: below startUntil,
	// max(equalWeightsUntil(alpha), 2), an update is the first or weighs
	// samples equally, so one comparison tells a steady update from
	// those; beta is 1 - alpha.
	startUntil uint64
	beta       float64
}

// NewEWMA returns an EWMA with smoothing factor alpha in (0, 1]: the weight
// of the newest sample. Use AlphaForHalfLife to think in samples.
func NewEWMA(alpha float64) EWMA {
	e := EWMA{alpha: alpha}
	e.derive()
	return e
}

// derive sets the fields derived from alpha.
func (e *EWMA) derive() {
	e.startUntil = max(equalWeightsUntil(e.alpha), 2)
	e.beta = 1 - e.alpha
}

// equalWeightsUntil returns the least count m for which float64(m)*alpha < 1
// is false (the product is monotonic in m), or the largest uint64 if there
// is none. Until a series has that many samples, EWMA and Robust weigh them
// equally (1/m instead of alpha); comparing the count with this bound is
// exactly that test without a conversion and a multiplication per update.
func equalWeightsUntil(alpha float64) uint64 {
	lo, hi := uint64(0), uint64(math.MaxUint64)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if float64(mid)*alpha < 1 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// AlphaForHalfLife returns the smoothing factor whose weights halve every
// halfLife samples.
func AlphaForHalfLife(halfLife float64) float64 {
	if halfLife <= 0 {
		return 1
	}
	return 1 - math.Exp2(-1/halfLife)
}

// Update adds one sample. Before the first sample Mean and Var return 0.
func (e *EWMA) Update(x float64) {
	e.n++
	// Until 1/alpha samples have been seen, weight them equally (a plain
	// running mean and variance); otherwise the first sample would dominate
	// for about 1/alpha samples and the variance would start near zero.
	a, b := e.alpha, e.beta // b is 1 - a
	if e.n < e.startUntil {
		if e.n == 1 {
			e.mean, e.vr = x, 0
			return
		}
		// Below startUntil, 2 <= n < equalWeightsUntil(alpha): max(alpha,
		// 1/n) is 1/n, without a division per update once steady.
		a = 1 / float64(e.n)
		b = 1 - a
	}
	d := x - e.mean
	incr := a * d
	e.mean += incr
	e.vr = b * (e.vr + d*incr)
}

// steady reports whether the next update weighs by alpha, past the
// first sample and the equal weights (see startUntil), so that learn
// applies.
func (e *EWMA) steady() bool { return e.n+1 >= e.startUntil }

// learn is Update for a steady EWMA (see steady). Where it measured
// fewer instructions, Auto and its profile run it in place once steady
// (as Robust's learn): Update's start, though not taken, costs register
// moves where it joins the steady path.
func (e *EWMA) learn(x float64) {
	e.n++
	d := x - e.mean
	incr := e.alpha * d
	e.mean += incr
	e.vr = e.beta * (e.vr + d*incr)
}

// learnMean is UpdateMean for a steady EWMA (see steady).
func (e *EWMA) learnMean(x float64) {
	e.n++
	e.mean += e.alpha * (x - e.mean)
}

// UpdateMean is Update for an EWMA whose variance is never read: it
// moves the mean exactly as Update does and leaves Var as it was.
func (e *EWMA) UpdateMean(x float64) {
	e.n++
	a := e.alpha
	if e.n < e.startUntil {
		if e.n == 1 {
			e.mean = x
			return
		}
		a = 1 / float64(e.n)
	}
	e.mean += a * (x - e.mean)
}

// Mean is the weighted mean.
func (e *EWMA) Mean() float64 { return e.mean }

// Var is the weighted variance.
func (e *EWMA) Var() float64 { return e.vr }

// Std is the weighted standard deviation.
func (e *EWMA) Std() float64 { return math.Sqrt(e.vr) }

// Count is the number of samples seen.
func (e *EWMA) Count() uint64 { return e.n }

// Alpha is the smoothing factor.
func (e *EWMA) Alpha() float64 { return e.alpha }

// Z is x's distance from the mean in standard deviations, with floor as the
// smallest standard deviation to divide by (guards flat series).
func (e *EWMA) Z(x, floor float64) float64 {
	return (x - e.mean) / max(e.Std(), floor)
}

func (e *EWMA) encode(w *encoder) {
	w.f64(e.alpha)
	w.f64(e.mean)
	w.f64(e.vr)
	w.u64(e.n)
}

func (e *EWMA) decode(r *decoder) {
	e.alpha = r.f64()
	e.derive()
	e.mean = r.f64()
	e.vr = r.f64()
	e.n = r.u64()
}
