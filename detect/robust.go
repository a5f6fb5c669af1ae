package detect

import "math"

// madToSigma converts a mean absolute deviation to the standard deviation of
// a normal distribution with that deviation (sqrt(pi/2)).
const madToSigma = 1.2533141373155001

// Robust is a streaming robust location and scale: an exponentially
// weighted mean and mean absolute deviation in which every deviation is
// clipped to clip×scale first (a Huber estimator). One outlier moves it by at
// most alpha×clip×scale, unlike a plain EWMA, yet a lasting level shift is
// still followed. O(1) per update, no allocation.
type Robust struct {
	alpha float64
	clip  float64
	loc   float64
	mad   float64 // clipped mean absolute deviation
	n     uint64
	// equalUntil is derived from alpha: see equalWeightsUntil. From
	// steadyFrom = max(equalUntil, 4) samples on, an update weighs by
	// alpha and clips (see steady). Neither is part of snapshots.
	equalUntil, steadyFrom uint64
}

// NewRobust returns a robust estimator with smoothing factor alpha (see
// AlphaForHalfLife) that clips deviations at clip scales (3 is usual).
func NewRobust(alpha, clip float64) Robust {
	r := Robust{alpha: alpha, clip: clip}
	r.derive()
	return r
}

// derive sets the fields derived from alpha.
func (r *Robust) derive() {
	r.equalUntil = equalWeightsUntil(r.alpha)
	r.steadyFrom = max(r.equalUntil, 4)
}

// Update adds one sample.
func (r *Robust) Update(x float64) {
	if r.steady() {
		r.update(x)
		return
	}
	r.n++
	if r.n == 1 {
		r.loc = x
		return
	}
	// Equal weights until 1/alpha samples have been seen, as in EWMA, so
	// the scale does not start from zero; clipping waits for a few samples
	// so that the first deviations can set the scale.
	a := r.alpha
	if r.n-1 < r.equalUntil { // max(alpha, 1/(n-1)) without a division per update
		a = 1 / float64(r.n-1)
	}
	d := x - r.loc
	ad := math.Abs(d)
	if r.n > 4 && r.mad > 0 {
		if c := r.clip * r.mad * madToSigma; ad > c {
			d = math.Copysign(c, d)
			ad = c
		}
	}
	r.loc += a * d
	r.mad += a * (ad - r.mad)
}

// steady reports whether the next sample is past the start: past the
// equal weights (n-1 >= equalUntil after the count) and with clipping on
// (n > 4), so that update applies.
func (r *Robust) steady() bool { return r.n >= r.steadyFrom }

// update is Update for a steady estimator. Its two steps, clipped and
// learn, are each small enough to be inlined: a detector runs them in place
// (when steady holds) to update without a call.
func (r *Robust) update(x float64) {
	d, ad := r.clipped(x)
	r.learn(d, ad)
}

// clipped returns the deviation of x from the location, clipped at clip
// scales, and the deviation's absolute value.
func (r *Robust) clipped(x float64) (d, ad float64) {
	d = x - r.loc
	ad = math.Abs(d)
	if r.mad > 0 {
		if c := r.clip * r.mad * madToSigma; ad > c {
			d = math.Copysign(c, d)
			ad = c
		}
	}
	return d, ad
}

// learn counts a sample and moves the location and scale by its clipped
// deviation.
func (r *Robust) learn(d, ad float64) {
	r.n++
	r.loc += r.alpha * d
	r.mad += r.alpha * (ad - r.mad)
}

// Loc is the location estimate (close to the median for symmetric noise).
func (r *Robust) Loc() float64 { return r.loc }

// Scale is the scale estimate in standard-deviation units.
func (r *Robust) Scale() float64 { return r.mad * madToSigma }

// Count is the number of samples seen.
func (r *Robust) Count() uint64 { return r.n }

// Z is x's distance from Loc in Scale units, dividing by at least floor.
func (r *Robust) Z(x, floor float64) float64 {
	return (x - r.loc) / max(r.Scale(), floor)
}

func (r *Robust) encode(w *encoder) {
	w.f64(r.alpha)
	w.f64(r.clip)
	w.f64(r.loc)
	w.f64(r.mad)
	w.u64(r.n)
}

func (r *Robust) decode(d *decoder) {
	r.alpha = d.f64()
	r.derive()
	r.clip = d.f64()
	r.loc = d.f64()
	r.mad = d.f64()
	r.n = d.u64()
}
