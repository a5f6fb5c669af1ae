package detect

import "math"

// A lasting change of level or scale is a new regime, not an incident
// that goes on for weeks. A deploy that changes a unit, a launch that
// doubles the traffic for good, a fleet that halves: after the change the
// series is where it has never been, and stays there. Every estimate auto
// keeps learns such a change as spread. The robust level follows a shift
// only by samples clipped at three of its spreads, so its spread swells
// while it catches up (on an hourly temperature doubled for good, 34
// against the 3.2 the doubled noise gives, 400 samples on); a time-of-day
// slice's spread holds the step for weeks on hourly data; the
// likelihoods' long runs keep the change's surprise; and the records'
// bars stay at the old regime's extremes. For weeks after such a change
// auto judged the new regime by the old one's memory: NAB with every
// value from a third of each file on doubled scored 63.11 (74.22 as
// published), ten windows lost (docs/detectors.md, "A lasting change:
// a new regime").
//
// regime follows runs of samples that lie regimeZ or more of the level's
// spreads from it on one side and, where the time of day judges (its
// slice is known), as many of the slice's own spreads from this time of
// day's usual value: beyond every estimate of the series' normal, as a
// daily peak or a nightly job that the slices know is not. Where the
// day's shape explains the series, a run may also begin on the time of
// day alone, within the level's spreads (a halved daily cycle's nights);
// such a run must last three days, longer than a weekend (see
// hourBeyond, hourRunFor). Each run is judged against the estimates
// as they were before its first sample (saved then), not against
// estimates that are learning the run; within a run the hour alone
// judges where its slice is known, since on a daily cycle the level's
// spread is the cycle's and a series halved lies within it at the peak.
// A run of regimeRun samples that has lasted a whole day, through every
// hour's rhythm, is a new regime: the estimates are set back to what
// they were before the run and moved as the run moved from what they
// expected of it. Where the expected values vary over the run's day (a
// daily cycle), the move is the least-squares line through the run's
// samples against them (see fit): a gauge with an offset (bytes,
// kelvins) whose cycle doubles while its constant does not moves by
// twice and less the constant, which no ratio of the levels tells
// (the families with 100 times their range added: shift_recur 87.3 /
// 86.2 by the ratio, 92.8 / 91.6 by the line, 92.8 / 91.5 as drawn).
// Elsewhere, on a positive series the move is a change of scale
// (every value times the ratio of the run's sum to the sum of what the
// estimates expected at each of its samples, every spread by the same
// ratio), as the records' bars already take a positive series' noise to
// grow with its level; elsewhere it is a shift (every value plus the
// mean difference, the spreads as they were). Measured from what the
// hours expected, not from the level, a run that began in a daily
// cycle's afternoon is not taken for a fall by the evening's fall. The
// likelihoods are set back to before the run, so the change's own
// surprise does not become the series' usual; records count again from
// the moved bars, or from the run's own extremes where those lie
// beyond them.
//
// A fall's ratio shrinks the spreads only as far as the run shows: to
// no less than the ratio of the changes' robust spread, which has
// learnt the run's day, to what it was before (and no more than 1). A
// memory share that a restart takes from 46 % to 0.5 % of its range
// (as a series normalised by its range shows it) falls by a ratio of
// about 0.14 over the run's day, as it creeps up again, but its noise
// stays as it was; with every spread times the ratio, its ordinary
// noise paged for days (the families' server_minute so normalised 76.7
// / 74.3 against 81.7 / 79.4 as drawn; now 80.5 / 78.4). A count that
// falls tenfold shows its noise falling about
// threefold, and gets that. A rise keeps the ratio: larger spreads cost
// no false alarm. And the run's extremes are values of the new regime:
// a series at 40 that falls to about 0.5 and bursts to 12 every two
// hours moved its highest value to 0.6, and each burst after the regime
// was a record again (NAB's grok_asg_anomaly; docs/detectors.md, "A new
// regime keeps its noise and its extremes"). A day is a short history,
// though, whose extremes noise soon beats: a record beyond such a bar
// must lie beyond noise's reach (Auto.hiRun, see extreme).
//
// No regime replaces one that had held for less than two days (records
// count from the second): a series whose first day was a Sunday would
// take its Monday for a new regime. A series without a clock (see
// fitClock) has no day for a run to outlast, and no regimes: runs of a
// day at a minute's interval cost the families timestamped by row
// number 0.5 (a memory share's restarts became regimes, and its creep
// then paged), and changed nothing on NAB so timestamped. Not moved: the day's profile, which
// has followed the change through the run's day (moving it changed no
// score), and the episode under way, which ends as any other once the
// series is calm against the new regime. A run under way is kept in
// snapshots with the estimates saved at its start, which are allocated
// at the series' first run (1.8 KB with the default 24 slices).
//
// An incident that stays beyond every estimate of normal for a day (and
// regimeRun samples) is a new regime too: its alert resolves once the
// series is calm against it, Calm samples later. A rule that must keep
// firing for as long as a level stays high needs a threshold on that
// level.
type regime struct {
	side int8 // the run's side: 1 above the estimates, -1 below; 0 when none
	// hourOnly: the run began on its time of day alone, within the
	// level's spreads (see hourBeyond). Such a run moves the estimates
	// as any other once it has lasted, but the verdict does not call it
	// Shifted: the single samples of noise that begin one, at three of
	// a slice's own spreads, are no lasting move for a rule to hold an
	// alert on.
	hourOnly bool
	n        uint32 // samples in the run
	// The sum of the run's samples and of what the estimates before it
	// expected at each (the hour's usual value where the time of day
	// judges, else the level).
	sum, exp float64
	// The run's lowest and highest samples: values of the new regime
	// that its records' bars must not forget.
	lo, hi float64
	// The run's samples against what the estimates expected of each,
	// as a least-squares line x = a·exp + b would need them, kept as
	// Welford's running means, and sums of squared deviations and of
	// their products (see fit). The means are kept rather than worked
	// out from sum and exp: so worked out, the verdicts on the golden
	// series without time-of-day slices changed, most likely because
	// the mean of one expected value repeated, taken from its sum,
	// carries rounding that reads as variation.
	mx, me, vx, ve, cxe float64
	from                int64 // the time of the run's first sample
	// The estimates before the run's first sample: allocated at the
	// series' first run and kept (most series never have one).
	before *estimates
	// The regimes begun since the detector was made or restored (not in
	// snapshots), for tests.
	begun int
}

// estimates is what a new regime moves: everything auto has learnt of
// the series' level and spread.
type estimates struct {
	level, step          Robust
	slope                float64
	spike                EWMA
	trendLevel, trendErr float64
	trendSlope           float64
	lik, dayLik, stepLk  Likelihood
	lo, hi, locLo, locHi float64
	loEp, hiEp           bool
	// The spike path's crossings and jumps at the run's start (see
	// regimeStep).
	crossings, jumps uint64
	// The time-of-day slices' means and variances (nil when DayBuckets
	// is 0), and their offsets from the level.
	day, offset []offset
}

// regimeZ is how many spreads from the level (and from the hour's usual
// value) a sample of a run lies: where the level's robust estimate stops
// taking samples as they are and clips them.
const regimeZ = 3

// hourBeyond reports whether x may begin a run on its time of day alone:
// its slice is known, x lies regimeZ of the slice's own spreads from its
// usual value (sliceBeyond, which regimeStep judges a run's samples by
// too), and the day's shape explains the series (hourExplains). Observe
// calls regimeStep for such a sample as for one beyond the level.
//
// A run is judged in the slice's own spread, not in hourSpread's, which
// a quarter of the level's holds up for a single sample: a run must stay
// beyond at every sample for a day, which a slice's spread too small
// from a few visits, or a count's noise, does not make happen by
// chance. Held up so, a daily cycle halved (traffic moved away) never
// became a new regime: its nights, a quarter as far from their usual
// value as its days, lay within three of those spreads and broke every
// run, while each slice's variance learnt the halving as spread and
// judged the days after it in a band six times the noise
// (docs/detectors.md, "A halved daily cycle is a new regime").
func (a *Auto) hourBeyond(x, floor, scale float64, day *EWMA) bool {
	return day != nil && a.sliceBeyond(x, floor, day) && a.hourExplains(scale)
}

// sliceBeyond reports whether x lies regimeZ or more of its time-of-day
// slice's own spreads (floored at floor) from the slice's mean, once the
// slice is known. Most samples lie within, which is tested first.
func (a *Auto) sliceBeyond(x, floor float64, day *EWMA) bool {
	d := x - day.mean
	return d*d >= regimeZ*regimeZ*maxf(day.vr, floor*floor) && day.n >= a.minVisits
}

// hourExplains reports whether the day's shape explains a series with
// the level's spread scale well enough for a run to begin on the time
// of day alone: the profile's residuals (see dayProfile), learnt across
// days, spread at most half as wide as the level, as where the profile
// judges. A slice's own spread does not tell: finer than five minutes
// it is mostly its last visit's. Where the day does not explain the
// series, a sample far from its slice is no sign of a changed day: on
// BenchmarkDetector's series, whose cycle is 4.8 hours, runs so begun
// held 12 % of the samples and cost 46 instructions an update.
func (a *Auto) hourExplains(scale float64) bool {
	return a.prof.off.Count() > 0 && 2*a.prof.off.Scale() <= scale
}

// hourRunFor is how long a run begun on its time of day alone (see
// hourBeyond) must last to be a new regime: longer than a weekend with a
// holiday on either side of it. Weekends at half a weekday's traffic,
// begun at midnight, lie beyond every hour's spreads from Saturday to
// Monday. With a day, as for a run the level sees, ten such series of
// six weeks at 5 minutes took 10 regimes (TestAutoWeekendIsNoRegime),
// and before runs needed a day that explains the series (hourExplains),
// 120, paging 140 times rather than 4.
const hourRunFor = 3 * dayMs

// regimeRun is the least length of a run that is a new regime, in
// samples, besides its day: on hourly data a day is 24 samples, too few
// to tell a change from an incident by. NAB as published scored 73.84,
// 74.58, 74.62 and 74.55 at 30, 50, 75 and 100 samples without the day
// (74.22 without regimes), and its probes the same from 50 on: the
// longest of that plateau holds an incident as one for longest.
const regimeRun = 100

// newEstimates allocates estimates for a's config.
func (a *Auto) newEstimates() *estimates {
	e := &estimates{}
	if n := a.cfg.DayBuckets; n > 0 {
		e.day = make([]offset, n)
		e.offset = make([]offset, n)
	}
	return e
}

// regimeStep follows the runs with x (see regime); now, floor and scale
// are the level's trend-carried value, the floor under its spread and
// the spread, day the sample's time-of-day slice (nil when none judges
// by the clock) at index slot. It reports whether x ended a run that is
// a new regime, whose estimates are then in place. Observe calls it only
// for a sample regimeZ or more from the level or while a run is under
// way.
func (a *Auto) regimeStep(ts int64, x, now, floor, scale float64, day *EWMA, slot int) bool {
	r := &a.reg
	if a.noClock {
		// No day to outlast: a series without a clock has no regimes
		// (see regime).
		return false
	}
	if r.side != 0 { // judged against the estimates before the run
		b := r.before
		now = b.level.Loc() + a.lag*b.slope
		scale = maxf(b.level.Scale(), floor)
		if day != nil {
			saved := *day // the slice's count as it is: the visits it needs are its own
			saved.mean, saved.vr = b.day[slot].mean, b.day[slot].vr
			day = &saved
		}
	}
	side, exp, hourOnly := int8(0), now, false
	counts := a.recordsCount(ts)
	switch d := x - now; {
	case !counts:
	case d >= regimeZ*scale:
		side = 1
	case d <= -regimeZ*scale:
		side = -1
	}
	if day != nil && (r.side != 0 || counts) {
		// The time of day must not expect it: a known slice, and x as
		// far from its mean, in the slice's own spread. Within a run the
		// hour alone judges: on a daily cycle the level's spread is the
		// cycle's, and a series halved lies within it at the peak. A run
		// begins where the hour and the level agree, or where the hour
		// alone puts x beyond it and the level has nothing to say: at
		// night, a halved daily cycle lies within the level's spread too.
		exp = day.Mean()
		hour := int8(0)
		if a.sliceBeyond(x, floor, day) {
			hour = 1
			if x < exp {
				hour = -1
			}
		}
		if r.side != 0 || side == 0 || hour == side {
			hourOnly = side == 0
			side = hour
		} else {
			side = 0
		}
		if hourOnly && side != r.side && !a.hourExplains(scale) {
			side = 0 // no run begins on the hour alone where it does not explain the series
		}
	}
	switch {
	case side == 0:
		r.side, r.n = 0, 0
		return false
	case side != r.side:
		if r.before == nil {
			r.before = a.newEstimates()
		}
		r.before.save(a)
		r.side, r.n, r.sum, r.exp, r.lo, r.hi, r.from = side, 1, x, exp, x, x, ts
		r.hourOnly = hourOnly
		r.mx, r.me, r.vx, r.ve, r.cxe = x, exp, 0, 0, 0
		return false
	}
	r.n++
	r.sum += x
	r.exp += exp
	dx, de := x-r.mx, exp-r.me
	r.mx += dx / float64(r.n)
	r.me += de / float64(r.n)
	r.vx += dx * (x - r.mx)
	r.ve += de * (exp - r.me)
	r.cxe += dx * (exp - r.me)
	r.lo, r.hi = min(r.lo, x), max(r.hi, x)
	// A run lasts a day, and the regime before it had held for two.
	if r.n < regimeRun || ts-r.from < dayMs || (r.hourOnly && ts-r.from < hourRunFor) {
		return false
	}
	if r.from-a.first < 2*dayMs {
		// Records count from the second day: a series whose first day
		// was a Sunday would take its Monday for a new regime.
		r.side, r.n = 0, 0
		return false
	}
	// The move: v → k·v + d, every spread times ks; a fall's spreads
	// only as far as the changes' spread has fallen over the run.
	k, d := 1.0, (r.sum-r.exp)/float64(r.n)
	if fa, fb, ok := r.fit(); ok {
		k, d = fa, fb
	} else if r.exp > 0 && r.sum > 0 && r.before.lo >= 0 {
		k, d = r.sum/r.exp, 0
	}
	ks := k
	if m := r.before.step.mad; k < 1 && m > 0 {
		ks = min(max(a.step.mad/m, k), 1)
	}
	a.apply(r.before, k, d, ks)
	// The spike path's rate is the new regime's too: the crossings and
	// jumps that made spikes routine before the run were the old
	// regime's, and it counts from the run's first sample on, the run's
	// own crossings included. A series whose spikes stay routine shows
	// them again within the run; a quiet one whose few spikes at the
	// old level had used up its allowance pages again (docs/detectors.md,
	// "A new regime counts its own spikes").
	a.crossings -= min(a.crossings, r.before.crossings)
	a.jumps -= min(a.jumps, r.before.jumps)
	a.rateFrom = a.n - min(a.n, uint64(r.n)) // the samples before the run's first
	// The bars: the moved ones, or the run's extremes beyond them.
	if r.hi > a.hi {
		a.hi, a.locHi, a.hiEp, a.hiRun = r.hi, a.level.loc, false, true
	}
	if r.lo < a.lo {
		a.lo, a.locLo, a.loEp, a.loRun = r.lo, a.level.loc, false, true
	}
	// The bars are the new regime's, and so is the slow level they are
	// measured against (see fall.go).
	a.slow, a.slowHi = a.level.loc, a.level.loc
	a.fitFloor()
	r.side, r.n = 0, 0
	r.begun++
	return true
}

// fit is the least-squares line x = a·exp + b through the run's
// samples and what the estimates expected of each, where the expected
// values vary enough over the run's day (a daily cycle) to know its
// slope a to within fitSlack of it, and a is positive; ok is false
// otherwise.
func (r *regime) fit() (a, b float64, ok bool) {
	if r.n < 3 || !(r.ve > 0) {
		return 0, 0, false
	}
	a = r.cxe / r.ve
	resid := max(r.vx-a*r.cxe, 0)
	if !(a > 0) || math.Sqrt(resid/float64(r.n-2)/r.ve) > fitSlack*a {
		return 0, 0, false
	}
	return a, r.mx - a*r.me, true
}

// fitSlack is the standard error of fit's slope, relative to it, up to
// which the line moves the estimates.
const fitSlack = 0.1

// save keeps a's estimates as they are, before a run's first sample is
// learnt.
func (e *estimates) save(a *Auto) {
	e.level, e.step, e.slope = a.level, a.step, a.slope
	e.spike, e.trendLevel, e.trendSlope, e.trendErr = a.spike, a.trendLevel, a.trendSlope, a.trendErr
	e.lik, e.dayLik, e.stepLk = a.lik, a.dayLik, a.stepLk
	e.lo, e.hi, e.locLo, e.locHi, e.loEp, e.hiEp = a.lo, a.hi, a.locLo, a.locHi, a.loEp, a.hiEp
	e.crossings, e.jumps = a.crossings, a.jumps
	for i := range e.day {
		b := &a.day.buckets[i]
		e.day[i] = offset{b.mean, b.vr}
	}
	copy(e.offset, a.offset)
}

// apply sets a's estimates to e's, every value v moved to k·v + d (and
// every difference of values times k) and every spread times ks. The
// records' bars it moves set the floor: regimeStep works it out again
// once it has set them.
func (a *Auto) apply(e *estimates, k, d, ks float64) {
	k2 := ks * ks
	a.level = e.level
	a.level.loc, a.level.mad = k*e.level.loc+d, e.level.mad*ks
	a.slope = e.slope * k
	a.step = e.step
	a.step.loc, a.step.mad = e.step.loc*k, e.step.mad*ks
	a.spike = e.spike
	a.spike.mean, a.spike.vr = k*e.spike.mean+d, e.spike.vr*k2
	a.trendLevel, a.trendSlope, a.trendErr = k*e.trendLevel+d, e.trendSlope*k, e.trendErr*k2
	a.lik, a.dayLik, a.stepLk = e.lik, e.dayLik, e.stepLk
	a.lo, a.hi = k*e.lo+d, k*e.hi+d
	a.locLo, a.locHi = k*e.locLo+d, k*e.locHi+d
	a.loEp, a.hiEp = e.loEp, e.hiEp
	a.loRun, a.hiRun = false, false
	for i, s := range e.day {
		b := &a.day.buckets[i]
		b.mean, b.vr = k*s.mean+d, s.vr*k2
		o := e.offset[i]
		a.offset[i] = offset{o.mean * k, o.vr * k2}
	}
	a.wild = bar{}
}

func (r *regime) encode(w *encoder) {
	w.u8(uint8(r.side))
	if r.side != 0 {
		w.bool(r.hourOnly)
		w.u64(uint64(r.n))
		w.f64(r.sum)
		w.f64(r.exp)
		w.f64(r.lo)
		w.f64(r.hi)
		w.f64(r.mx)
		w.f64(r.me)
		w.f64(r.vx)
		w.f64(r.ve)
		w.f64(r.cxe)
		w.i64(r.from)
		r.before.encode(w)
	}
}

// decodeRegime reads what regime.encode wrote, allocating the estimates
// for a run under way.
func (a *Auto) decodeRegime(d *decoder) {
	r := &a.reg
	r.side = int8(d.u8())
	r.n = 0
	if r.side == 0 {
		return
	}
	if r.side != 1 && r.side != -1 && d.err == nil {
		d.err = errorf("regime run's side %d", r.side)
	}
	r.hourOnly = false // before format 42 every run began beyond the level
	if d.version >= 42 {
		r.hourOnly = d.bool()
	}
	n := d.u64()
	if (n == 0 || n > math.MaxUint32) && d.err == nil {
		d.err = errorf("regime run of %d samples", n)
	}
	r.n = uint32(min(n, math.MaxUint32))
	r.sum = d.f64()
	r.exp = d.f64()
	r.lo, r.hi = math.Inf(1), math.Inf(-1)
	if d.version >= 39 { // before, the run's extremes were not kept
		r.lo, r.hi = d.f64(), d.f64()
	}
	// Before format 40 no line was kept. The run's samples so far count
	// at their means, worked out from the sums: points at the means
	// leave the line's slope as the samples after the restore draw it.
	// At 0, as if they had been (0, 0), they pulled the line through the
	// origin, and a gauge with an offset whose cycle halved paged as if
	// it had moved by its ratio, or worse (TestAutoRegimeRestoredMidRun).
	r.mx, r.me, r.vx, r.ve, r.cxe = 0, 0, 0, 0, 0
	if r.n > 0 {
		r.mx, r.me = r.sum/float64(r.n), r.exp/float64(r.n)
	}
	if d.version >= 40 {
		r.mx, r.me, r.vx, r.ve, r.cxe = d.f64(), d.f64(), d.f64(), d.f64(), d.f64()
	}
	r.from = d.i64()
	if !(finite(r.mx) && finite(r.me) && finite(r.cxe) && r.vx >= 0 && r.ve >= 0) && d.err == nil {
		d.err = errorf("regime run's line %v, %v, %v, %v, %v", r.mx, r.me, r.vx, r.ve, r.cxe)
	}
	if (math.IsNaN(r.sum) || math.IsNaN(r.exp) || math.IsNaN(r.lo) || math.IsNaN(r.hi)) && d.err == nil {
		d.err = errorf("regime run's sums %v, %v", r.sum, r.exp)
	}
	if r.before == nil {
		r.before = a.newEstimates()
	}
	r.before.decode(d)
	if b := r.before; d.version < 43 {
		// Not kept before format 43: the crossings and jumps since the
		// restore are the run's own.
		b.crossings, b.jumps = a.crossings, a.jumps
	} else if (b.crossings > a.crossings || b.jumps > a.jumps) && d.err == nil {
		d.err = errorf("regime run begun with %d crossings and %d jumps, at %d and %d now",
			b.crossings, b.jumps, a.crossings, a.jumps)
	}
	if uint64(r.n) > a.n && d.err == nil {
		d.err = errorf("regime run of %d samples in %d", r.n, a.n)
	}
}

func (e *estimates) encode(w *encoder) {
	e.level.encode(w)
	e.step.encode(w)
	w.f64(e.slope)
	e.spike.encode(w)
	w.f64(e.trendLevel)
	w.f64(e.trendSlope)
	w.f64(e.trendErr)
	e.lik.encode(w)
	e.dayLik.encode(w)
	e.stepLk.encode(w)
	w.f64(e.lo)
	w.f64(e.hi)
	w.f64(e.locLo)
	w.f64(e.locHi)
	w.bool(e.loEp)
	w.bool(e.hiEp)
	for i := range e.day {
		w.f64(e.day[i].mean)
		w.f64(e.day[i].vr)
		w.f64(e.offset[i].mean)
		w.f64(e.offset[i].vr)
	}
	w.u64(e.crossings)
	w.u64(e.jumps)
}

func (e *estimates) decode(d *decoder) {
	e.level.decode(d)
	e.step.decode(d)
	e.slope = d.f64()
	e.spike.decode(d)
	e.trendLevel = d.f64()
	e.trendSlope = d.f64()
	e.trendErr = d.f64()
	e.lik.decode(d)
	e.dayLik.decode(d)
	e.stepLk.decode(d)
	e.lo = d.f64()
	e.hi = d.f64()
	e.locLo = d.f64()
	e.locHi = d.f64()
	e.loEp = d.bool()
	e.hiEp = d.bool()
	for i := range e.day {
		e.day[i].mean = d.f64()
		e.day[i].vr = d.f64()
		e.offset[i].mean = d.f64()
		e.offset[i].vr = d.f64()
	}
	e.crossings, e.jumps = 0, 0
	if d.version >= 43 { // before, see decodeRegime
		e.crossings, e.jumps = d.u64(), d.u64()
	}
}
