package detect

import "math"

// Counts in another unit.
//
// auto models a series of whole numbers as counts: where a time-of-day
// slice or the spread of changes is narrower than Poisson noise at its
// level allows, Poisson noise is the floor (countSpread, jumpSpread).
// The same counts exported in another unit are no longer whole: per
// second over a one-minute window they are multiples of 1/60, and a
// data set normalised by each series' range (as server-metric data
// sets are published) holds multiples of 1/range. Without the count
// model there, `auto` lost up to 6 points on the synthetic families of
// sparse counts (docs/detectors.md, "Counts in another unit").
//
// So auto keeps the lattice the values lie on: perQuantum (m), a whole
// number, such that every value seen so far is a whole multiple of
// 1/m, to the precision the values are written with. It starts at 1
// (whole numbers, counts as they were always modelled) and grows when a
// value falls between the lattice's points: to the smallest multiple of
// m that puts the value on it, found from the continued fraction of the
// value in units of 1/m. The count model's floors are then Poisson's in
// units of 1/m: variance quantum × level.
//
// A value lies on a lattice exactly (to a float sum's rounding), or to
// its precision as written: a value with d decimals (0.075269, as a
// data set printed to six decimals holds) is within half a unit of its
// last decimal of the multiple it stands for; one with no short
// decimal form is exact to a float's precision. Within that precision
// a continued fraction finds a lattice for any value, so a lattice
// that holds a value only to its precision must also be coarse enough
// for the precision to tell its points apart (the error at most a
// hundredth of a step), and so must the values before it, whose error
// is more of a finer lattice's steps: a series of measurements is then
// off any lattice within a few samples.
//
// Values on no such lattice (none as coarse as the precision needs,
// or finer than maxPerQuantum steps per unit) set offLattice, and the
// count model is off for good. It is off too on a lattice of 10^d,
// 2·10^d or 5·10^d steps (halves and fifths too), which is what
// rounding to d decimals makes of any measurement: a CPU share printed
// to three decimals is no count of thousandths. On NAB, whose
// fractional series are such measurements, nothing changes.
//
// A measurement rounded to decimals and then normalised by its range
// lies on a lattice too (a disk's fill in hundredths of a GB over a
// range of 50.31 GB: 5,031 steps). maxPerQuantum, 1,000, keeps such
// lattices out where they are fine: with 65,536 the disk_fill family
// divided by its largest value lost 6 points, with 1,000 nothing
// (docs/detectors.md).
// Counts per second over windows up to a quarter of an hour, and
// counts normalised by ranges up to 1,000, stay counts.
const (
	maxPerQuantum = 1000
	// whole numbers' tolerance: a float sum's rounding, no more
	wholeTol = 1e-9
	// the largest error a lattice's points may carry, in steps
	latticeSlack = 0.01
	// the precision of a value with no decimal form shorter than a
	// float's, relative to the value
	floatPrecision = 1e-15
	// the error of a value's place on a lattice, x·m, relative to it:
	// two of a float's units in the last place (the value's own rounding
	// and the product's). A value of 17,521,977.6 on the lattice of
	// 1/45 lies 1.2e-7 steps from its point by that alone, more than
	// a whole number's tolerance, and a lattice found on smaller values
	// disowned it (FuzzLattice).
	floatSteps = 4.5e-16
)

// resolution is the least spread a reading on the series' lattice can
// show, for fitFloor: quantum/√6 once the series has spanned two of the
// lattice's steps, else 0. Observe takes it on a lattice of decimals (a
// measurement rounded to d decimals, a share that steps by a fixed part
// of a whole), and on one of counts only where the series is a gauge
// (see gauge). Every floor is the larger of it and the range's floor
// (see rangeFloor): added to the range's, it moved the alerts of gauges
// whose noise is ten times larger.
//
// Many of a server's gauges step seldom, by one step of the lattice
// they are written on: a disk's fill as a share of 0.02, a load
// average to two decimals, a temperature to a tenth of a degree, a
// pool's connections or a count of replicas in whole units. Between
// steps they repeat their value for hours, their spreads shrink to the
// floor, and each step was as far from normal as a large incident:
// twenty such gauges of two weeks at a minute, stepping by 0.02 one
// minute in 200 to 2,000, raised 723 alerts (210 spikes, 287 from the
// changes' likelihood, 198 at the start of an hour whose slice had not
// seen the new value); in whole units around 25, 714. A step of one
// unit is within the reading's own resolution: the value it stands
// for (a fill, a demand for connections) may have moved by far less.
// Each reading carries an error spread evenly over a step, q²/12 in
// variance, and a judgement compares a reading with a baseline that on
// such a gauge is an earlier reading: their difference carries q²/12
// twice, a spread of q/√6. A step of one unit is then 2.4 of the
// spreads, no spike (SpikeZ 5) and no jump; two units are 4.9, three
// 7.3. The same twenty gauges raise 92 alerts, and 87 in whole units,
// most of them in their first days, and records, which a random walk
// keeps setting; zscore raises 433 (docs/detectors.md, "A reading's
// resolution").
//
// The rounding model is of a quantity that varies across the lattice's
// steps. A series that has taken only two values one step apart may as
// well be a state: the share of two targets up (1 or 0.5), of ten (1 or
// 0.9), whose step is its news. With the floor from the first move, a
// share of two targets up that fell to 0.5 for half an hour three times
// in ten days paged the first two falls only: without the spike path,
// the third was judged by the departures before it (see departures).
// So the floor waits for a range of two steps (the twenty gauges: 47
// alerts from the first move). With q/√12, the reading's rounding
// alone, 65 from the first move.
//
// Counts are left out: a count of events is exact, no reading of a
// finer level, and has its own floor, counting noise (countSpread).
// Taken as a rounding too, counts scored 0.15 lower on NAB (3 false
// alarms more) and 0.1 to 0.5 higher on the families' means; not kept,
// for want of the reason.
//
// Off every lattice, the step a gauge's changes agree on stands for the
// lattice's (see stepLattice).
func (a *Auto) resolution() float64 {
	q := a.quantum
	if a.offLattice {
		q = a.chg.step() // see stepLattice
	}
	if q == 0 || a.hi-a.lo < 1.5*q {
		return 0
	}
	return q / math.Sqrt(6)
}

// onLattice reports whether x lies on the lattice of 1/m (m =
// a.perQuantum) within latticeTol of its points, in steps, plus the
// float rounding of x·m (floatSteps): the two errors add, and with the
// larger of them alone a value written to four decimals whose error
// was exactly its precision (518.0938 on a lattice of 1/160, 0.008
// steps) fell off the lattice it had set (FuzzLattice). The common
// case, checked on every sample until offLattice is set, is a
// multiplication and a rounding. A value other than 0 that lies within
// the tolerance of the lattice's 0 is no count of 0 but a value too
// small for the tolerance to judge: a latency of 40 ns in seconds
// (4e-8) read as 0 within a billionth of a step, and a series of such
// values was modelled as counts of nothing (NAB with its values times
// 10⁻¹² scored 18.68). Such a value is off the lattice, and the
// refinement finds none fine enough for it (see refineLattice).
func (a *Auto) onLattice(x float64) bool {
	y := x * a.perQuantum
	r := math.Round(y)
	return math.Abs(y-r) <= a.latticeTol+math.Abs(y)*floatSteps && (r != 0 || x == 0)
}

// refineLattice is called with a value x off the lattice of 1/m. It
// moves to the coarsest lattice of 1/(m·j) that holds x to its
// precision (every value seen before lies on it too, as 1/m is a
// multiple of 1/(m·j)), or sets offLattice where there is none that
// counts (see above).
func (a *Auto) refineLattice(x float64) {
	ax := math.Abs(x)
	prec := precision(ax)
	m := a.perQuantum
	y := ax * m
	// The convergents' denominators of y's fractional part are the
	// smallest j for which y·j comes near a whole number.
	r := y - math.Floor(y)
	jPrev, j := 0.0, 1.0
	for r > 0 {
		inv := 1 / r
		term := math.Floor(inv)
		r = inv - term
		jPrev, j = j, term*j+jPrev
		mj := m * j
		// The values seen before lie on the finer lattice with the
		// same error, j times as many of its steps.
		carried := a.latticeTol * j
		if mj > maxPerQuantum || carried > latticeSlack {
			break
		}
		yj := ax * mj
		switch e := math.Abs(yj - math.Round(yj)); {
		case e <= max(wholeTol, yj*floatSteps):
			a.setLattice(mj, max(carried, wholeTol))
			return
		case e <= prec*mj && prec*mj <= latticeSlack:
			a.setLattice(mj, max(carried, prec*mj))
			return
		}
	}
	a.offLattice, a.fraction = true, true
}

// setLattice sets the lattice of 1/m, m a whole number, with a
// tolerance of tol steps. A lattice of decimal steps is kept, as a
// value off it may still show a lattice of counts (the first of
// sixteenths may be 0.5), but the count model is off on it.
func (a *Auto) setLattice(m, tol float64) {
	a.perQuantum, a.quantum, a.latticeTol = m, 1/m, tol
	a.fraction = m > 1 && decimalSteps(m)
}

// precision is the error x ≥ 0 may carry as written: half a unit of its
// last decimal where it has a decimal form of at most 12 significant
// digits, else a float's.
func precision(x float64) float64 {
	for d := 0; d <= 15; d++ {
		v := x * math.Pow10(d)
		if v > 1e12 {
			break
		}
		if math.Abs(v-math.Round(v)) <= 1e-13*max(v, 1) {
			return math.Pow10(-d) / 2
		}
	}
	return max(x*floatPrecision, 1e-300)
}

// decimalSteps reports whether m (at least 2) steps per unit are 10^d,
// 2·10^d or 5·10^d for some d ≥ 0: what rounding to d decimals gives.
func decimalSteps(m float64) bool {
	for math.Mod(m, 10) == 0 {
		m /= 10
	}
	return m == 1 || m == 2 || m == 5
}

// A gauge's steps off any lattice.
//
// resolution takes a gauge's unit from the lattice its values lie on.
// A gauge off every lattice refineLattice looks for may still step by
// one amount: a metric in hundredths normalised by a range of more
// than 1,000 of them and printed to six decimals, as server-metric data
// sets are published (a memory share over 12.34 points steps by
// 1/1,234 of the range); a ratio of bytes to a disk's size; a value
// with an offset, or whose step is no fraction of a unit. Twenty
// gauges that step so, one minute in 200 to 2,000, raised 722 alerts
// at 0.6 (`zscore` 415), as the gauges on a lattice did before their
// resolution was taken. Their resolution is read from their changes
// instead: stepLattice keeps the step that the changes away from a
// repeated value are whole multiples of. The twenty gauges raise 106
// (docs/detectors.md, "A gauge's steps off any lattice").
//
// Only a change that leaves a repeated value is looked at: on a gauge
// that steps seldom that is nearly every change, and on a measurement
// that moves at every sample, few, so that the cost there is a
// comparison. A change is a multiple k of the step q where it lies
// within k+1 times the error a change carries of k·q: the two
// readings' precision as written, taken as the finest any reading has
// shown (a value printed to six decimals as 0.0178 is no coarser than
// 0.017828), and a float's rounding. That error must be at most a
// hundredth of q (latticeSlack), so that a change that is no multiple
// passes by chance at most one time in 50; a change too large a
// multiple for that tells nothing and is passed over. A change smaller
// than q of which q is a multiple becomes the step. Any other change
// starts the count again from itself.
//
// The step counts once stepsAgree changes in a row agree, the first and
// three more: a measurement's changes would, by chance, once in
// (1/50)³, eight in a million.
type stepLattice struct {
	q     float64 // the step
	prec  float64 // the finest precision a reading has shown; 0 before any
	agree uint64  // the changes in a row that agree with q
}

// stepsAgree is how many changes in a row must agree on a step.
const stepsAgree = 4

// step is the step the changes agree on, or 0.
func (s *stepLattice) step() float64 {
	if s.agree < stepsAgree {
		return 0
	}
	return s.q
}

// observe takes a change from a repeated value prev to x and reports
// whether step changed.
func (s *stepLattice) observe(x, prev float64) bool {
	was := s.step()
	ax, ap := math.Abs(x), math.Abs(prev)
	s.learnPrecision(ax)
	s.learnPrecision(ap)
	tol := 2*s.prec + (ax+ap)*floatPrecision
	d := math.Abs(x - prev)
	if s.q > 0 {
		k := math.Round(d / s.q)
		if k >= 1 {
			if (k+1)*tol > latticeSlack*s.q {
				return false // too many steps to tell
			}
			if math.Abs(d-k*s.q) <= (k+1)*tol {
				s.agree++
				return s.step() != was
			}
		} else if j := math.Round(s.q / d); j >= 2 && (j+1)*tol <= latticeSlack*d && math.Abs(s.q-j*d) <= (j+1)*tol {
			s.q = d
			s.agree++
			return s.step() != was
		}
	}
	s.q, s.agree = 0, 0
	if 2*tol <= latticeSlack*d && finite(d) { // else too fine to tell a step, or beyond a float
		s.q, s.agree = d, 1
	}
	return s.step() != was
}

// learnPrecision lowers prec to the precision x ≥ 0 is written to where
// that is finer. precision tries each number of decimals in turn, and
// a measurement written in full would pay for all of them at every
// change looked at (460 instructions an update more, on average, where
// one update in three is such a change; BenchmarkAutoHeld): a value
// that is a whole multiple of two precs, to precision's test, or more
// than 10¹² of them (where a float's rounding, which the tolerance adds,
// is the larger), is written no finer, and is settled with a division.
func (s *stepLattice) learnPrecision(x float64) {
	if s.prec > 0 {
		v := x / (2 * s.prec)
		if v > 1e12 || math.Abs(v-math.Round(v)) <= 1e-13*max(v, 1) {
			return
		}
	}
	if p := precision(x); s.prec == 0 || p < s.prec {
		s.prec = p
	}
}
