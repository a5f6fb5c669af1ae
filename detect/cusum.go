package detect

// CUSUM is a two-sided tabular cumulative-sum change detector over
// standardised values: it accumulates evidence of a sustained shift of at
// least k standard deviations and signals when the evidence exceeds h. It
// finds small persistent level shifts that no single sample reveals.
type CUSUM struct {
	k, h     float64
	pos, neg float64
}

// NewCUSUM returns a CUSUM with slack k (half the shift to detect, in
// standard deviations; 0.5 is usual) and decision interval h (4 to 5 is
// usual).
func NewCUSUM(k, h float64) CUSUM { return CUSUM{k: k, h: h} }

// Update adds a standardised value z and returns the larger of the two
// sums divided by h (>= 1 means a change) and the direction of that sum.
func (c *CUSUM) Update(z float64) (float64, Direction) {
	c.pos = max(0, c.pos+z-c.k)
	c.neg = max(0, c.neg-z-c.k)
	if c.pos >= c.neg {
		return c.pos / c.h, DirUp
	}
	return c.neg / c.h, DirDown
}

// Reset clears the sums, as after a detected change has been absorbed.
func (c *CUSUM) Reset() { c.pos, c.neg = 0, 0 }

func (c *CUSUM) encode(w *encoder) {
	w.f64(c.k)
	w.f64(c.h)
	w.f64(c.pos)
	w.f64(c.neg)
}

func (c *CUSUM) decode(r *decoder) {
	c.k = r.f64()
	c.h = r.f64()
	c.pos = r.f64()
	c.neg = r.f64()
}
