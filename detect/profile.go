package detect

import "math"

// dayProfile is the day's shape between the time-of-day slices' means,
// for series whose daily curve moves within a slice (a 1-minute KPI's
// morning ramp moves it by a fifth in an hour, which widens the slice's
// spread by as much as a real dip). Per slice it keeps the mean of each
// day's visit, averaged over days (half-life profileDays), and
// predicts a sample either from that mean or from a line between the
// centres of its slice and the nearer neighbour, whichever has
// predicted this slice better so far: a curve is read between centres,
// a schedule that steps at a slice's edge keeps its steps. The series'
// offset from the profile today (a robust location with the slices'
// half-life in samples) is added, so a day that runs 15 % low overall
// is no incident at every sample, and from the second week on how this
// day of the week usually differs (see "The week"); what is left is
// judged in the slice's own spread of it (the prediction's usual error
// there), and its likelihood is the fourth of auto's. Auto's spike
// path also takes a sample that leaves the profile in one step as a
// spike (see Observe).
type dayProfile struct {
	slices []profileSlice
	// today's offset from the profile, learnt from the residuals
	off Robust
	lik Likelihood
	// alpha for a slice's squared errors, per sample, and the samples
	// weighted equally before it takes over (see equalWeightsUntil)
	errAlpha float64
	errEqual uint64
	// the errors a slice must have learnt before it judges: as many as
	// the visits a time-of-day slice needs (MinDayVisits), so that on
	// hourly data, one sample a visit, a slice's spread is not one error
	minErrs uint64
	// 1/the slices' width in ms, for a position within a slice
	invWidth float64
	// The week (see "The week" below): per day of the week and slice,
	// how that day's visits differed from the slice's mean; NaN until
	// seen. float32 keeps it at 4 bytes a cell (168 cells by default).
	week []float32
	// The week's offsets for the slice span that starts at wkFrom, its
	// own (wkOwn) and its neighbours' before and after, times wk: worked
	// out once per span and whenever the week learns, not per sample.
	// Across midnight the neighbour's is the same day's: the line
	// between centres reads today's shape, and a Saturday's first hour
	// is not half a Friday's.
	wkFrom                int64
	wkOwn, wkPrev, wkNext float64
	// How much of the week's offsets is added (wk, 0 to 1; see slope,
	// kept for weekSpan and not in snapshots), from the means of e·r and
	// r² over the visits whose day had an offset r (e: the visit's
	// difference from its slice's mean), wn of them, each weighted by
	// wkAlpha once past equal weights.
	er, rr, wk float64
	wn         uint64
	// the mean of e² over all visits (en of them), the prior's unit
	ee      float64
	en      uint64
	wkAlpha float64
	// The series' rise per day (from each slice's visit less its visit
	// the day before) and the usual age of a slice's mean when it is
	// read (lag, in ms: each visit's start less its slice's age then),
	// averaged over the visits of profileDays days (see ageCorrection).
	// Only their means are read.
	rise, lag EWMA
}

// profileSlice is one time-of-day slice of a dayProfile.
type profileSlice struct {
	from     int64   // the start of the visit being summed (its slice's span that day)
	sum, cnt float64 // this visit's sum and count
	mean     float64 // visits' means, averaged over days
	days     uint64  // visits in mean
	// The mean squared errors of the two predictions (flat: the slice's
	// mean; line: between centres), once the slice is known, and how
	// many samples they hold (equal weights until 1/errAlpha).
	flat, line float64
	n          uint64
	// When the visits in mean were, weighted as mean weighs them (age,
	// the start of each visit in Unix ms), and the last whole visit's
	// mean and start, for the rise from one day to the next (see rise).
	age      float64
	last     float64
	lastFrom int64
}

const (
	// profileDays is the half-life, in days, of a slice's mean of
	// whole visits: the profile follows a change of the day's shape
	// within a few days.
	profileDays = 3
	// profileKnown is the whole visits after which a slice predicts. Its
	// errors are learnt unclipped over the next visit (that day's errors
	// are the profile's own, e.g. a step inside the slice, which the
	// line between centres misses), and it judges from the visit after
	// that, once it has learnt MinDayVisits errors. The likelihood
	// learns from the first predicting visit on, so that on the first
	// judging day it is not judging against a few dozen samples. At 1 a
	// slice predicts on its second day and judges from its third: on
	// the KPI families, whose incidents the hour's band (widened by a
	// morning ramp) hides until the profile judges, a day earlier was
	// worth 4 to 6 points (docs/detectors.md, "The profile judges from
	// its third day").
	profileKnown = 1
	// profileClip is how many of the level's spreads from a slice's
	// prediction a value is summed into its visit at most.
	profileClip = 10
)

func newDayProfile(buckets int, c AutoConfig) dayProfile {
	alpha := AlphaForHalfLife(c.DayHalfLife)
	return dayProfile{
		slices:   make([]profileSlice, buckets),
		week:     newWeek(buckets),
		wkFrom:   math.MinInt64,
		wk:       weekPrior,
		wkAlpha:  AlphaForHalfLife(profileWeeks * 7 * float64(buckets)),
		off:      NewRobust(alpha, 3),
		lik:      NewLikelihood(c.PatternHalfLife, c.LongHalfLife, 0.05),
		errAlpha: alpha,
		errEqual: equalWeightsUntil(alpha),
		minErrs:  uint64(c.MinDayVisits),
		invWidth: 1 / float64(dayMs/int64(buckets)),
		rise:     NewEWMA(AlphaForHalfLife(profileDays * float64(buckets))),
		lag:      NewEWMA(AlphaForHalfLife(profileDays * float64(buckets))),
	}
}

// observe learns x at ts in slice i of s (the Seasonal whose last
// lookup was ts), given the spread of auto's level (scale). It returns
// the likelihood's z for x, the prediction (exp) and the spread it was
// judged in (sp), or zeros where the profile does not judge: until the
// slice judges and the offset and the likelihood have warmUp samples
// each, and where the profile's spread is more than half the level's,
// i.e. where the day's shape explains less than three quarters of the
// variance (as for the hour's spike path). Surprise is capped at
// surpriseCap as for the other likelihoods.
func (p *dayProfile) observe(s *Seasonal, i int, ts int64, x, scale, reach, least, res, surpriseCap float64, warmUp uint64) (z, exp, sp float64) {
	sl := &p.slices[i]
	if s.lastFrom != p.wkFrom {
		p.weekSpan(s.lastFrom, i)
	}
	if sl.days >= profileKnown {
		flat := sl.mean + p.wkOwn + p.ageCorrection(sl, ts)
		// The position from the slice's centre, in slices (-½ to ½), and
		// the neighbour on that side.
		f := float64(ts-s.lastFrom) * p.invWidth
		if s.lastTill-s.lastFrom != s.bucketMs { // the last slice takes the day's remainder
			f = float64(ts-s.lastFrom) / float64(s.lastTill-s.lastFrom)
		}
		f -= 0.5
		j, wj := i+1, p.wkNext
		if f < 0 {
			j, f, wj = i-1, -f, p.wkPrev
		}
		if j < 0 { // across midnight, without a division
			j = len(p.slices) - 1
		} else if j == len(p.slices) {
			j = 0
		}
		line := flat
		if nb := &p.slices[j]; nb.days >= profileKnown {
			line = (1-f)*flat + f*(nb.mean+wj+p.ageCorrection(nb, ts))
		}
		pred := flat
		if sl.line <= sl.flat {
			pred = line
		}
		loc := p.off.Loc()
		e := x - pred - loc
		g := maxf(p.off.Scale(), rangeFloor(pred, reach, least, res))
		if p.off.Count() >= warmUp {
			v := minf(sl.flat, sl.line)
			spread2 := maxf(g*g, v) // the spread squared: its root is taken where it judges
			// The surprise averaged is the root mean square of the
			// residuals in spreads, not their mean absolute value: where
			// the profile judges they are near-Gaussian, and the root
			// mean square of a few (a chi statistic) is nearer the
			// Gaussian the likelihood takes for the average's long-run
			// distribution than the mean of |z|, whose right tail is
			// longer. On a plain 1-minute KPI (30 days, ten seeds) the
			// profile's noise pages fell from 4 to 1.
			avg := math.Sqrt(p.lik.average(minf(e*e/spread2, surpriseCap*surpriseCap)))
			if sl.days > profileKnown && sl.n >= p.minErrs && p.lik.long.n >= warmUp && 2*g <= scale {
				z, exp, sp = p.lik.z(avg), pred+loc, math.Sqrt(spread2)
			}
			// EWMA.Update, in place once steady (see EWMA.learn).
			if p.lik.long.steady() {
				p.lik.long.learn(avg)
			} else {
				p.lik.long.Update(avg)
			}
			// The errors, clipped once the slice judges (an incident
			// is not the profile's error) at 3 of the spread, and
			// before at 3 of the level's, so that one wild sample on
			// the learning day does not make the slice's error
			// infinite.
			bound := 9 * spread2
			if sl.days == profileKnown {
				bound = maxf(bound, 9*scale*scale)
			}
			sl.n++
			w := p.errAlpha
			if sl.n < p.errEqual {
				w = 1 / float64(sl.n)
			}
			ef, el := x-flat-loc, x-line-loc
			sl.flat += w * (minf(ef*ef, bound) - sl.flat)
			sl.line += w * (minf(el*el, bound) - sl.line)
		}
		// Robust.Update, in place once steady (see Robust.update).
		if p.off.steady() {
			p.off.learn(p.off.clipped(x - pred))
		} else {
			p.off.Update(x - pred)
		}
		// A value far from the prediction (a unit glitch, a misread
		// counter) is summed at profileClip of the level's spreads from
		// it, so that one sample does not skew the slice's mean for
		// weeks; a changed shape lies within that, and the offset
		// follows a lasting shift.
		// min(max(x, lo), hi) in two comparisons, without the
		// builtins' work for signed zeros (the sum is the same); a NaN
		// bound gives NaN as with them, since lim is never -Inf.
		lim := profileClip * scale
		if lo := pred + loc - lim; !(x >= lo) {
			x = lo
		} else if hi := pred + loc + lim; !(x <= hi) {
			x = hi
		}
	}
	// The visit's sum; a sample in the slice's span of another day
	// closes the last visit.
	if sl.cnt > 0 && s.lastFrom != sl.from {
		pv := &p.slices[len(p.slices)-1] // the slice before i, across midnight for 0
		if i > 0 {
			pv = &p.slices[i-1]
		}
		rise0, lag0, rises := p.rise.mean, p.lag.mean, p.rise.n
		m := sl.sum / sl.cnt
		if sl.days == 0 {
			sl.mean = m
			sl.age = float64(sl.from)
		} else {
			if dd := float64(sl.from-sl.lastFrom) / dayMs; dd >= 0.5 && dd <= 1.5 {
				p.rise.UpdateMean((m - sl.last) / dd)
			}
			p.learnWeek(sl, i, m)
			sl.mean += profileAlpha * (m - sl.mean)
			sl.age += profileAlpha * (float64(sl.from) - sl.age)
		}
		sl.last, sl.lastFrom = m, sl.from
		p.lag.UpdateMean(float64(s.lastFrom) - sl.age)
		// The offset was learnt against the slice before this one,
		// corrected with the old lag (and, until the rise is first
		// known, with no rise); it takes the change of that
		// correction, so that a new lag does not shift every
		// prediction by the rise over the move. The lag moves most in
		// the first days, as slices gain visits: on a rise of 0.1 a
		// minute the profile's expected value was 4 off for the first
		// quarter hour of each slice on the third day, and on the
		// fourth it paged 40 times over ten seeds. Later changes of
		// the rise are not taken: on weekly series the rise from one
		// day to the next is mostly the weekend's step, and moving
		// the offset by it cost weekly_quiet 4 to 6 points. A slice
		// before this one without a whole visit has no age yet (a
		// series seen only some hours of the day), and no correction.
		if pv.days > 0 {
			r := rise0
			if rises == 0 { // the rise is first known now (or not yet: 0)
				r = p.rise.mean
			}
			a := float64(ts) - pv.age
			p.off.loc -= (r*(a-p.lag.mean) - rise0*(a-lag0)) * perDayMs
		}
		sl.days++
		sl.sum, sl.cnt = 0, 0
	}
	sl.from = s.lastFrom
	sl.sum += x
	sl.cnt++
	return z, exp, sp
}

// ageCorrection is what the series has risen since slice sl's mean
// was, beyond the usual age of a slice's mean: the profile's rise per
// day times how much older than usual sl's mean is at ts. A slice's
// mean lags a rising series by its age, which depends on how many
// visits it has and when the last closed; the offset learnt against
// the slices read before takes in the usual lag but not a slice's own.
// On a steady rise (0.1 a minute, noise 1) the first slice of the day,
// a visit ahead of the others, was mispredicted by 45 at midnight and
// the profile's likelihood paged; corrected, the prediction is within
// 3.3 there and within 3 everywhere else. Where the series does not
// rise from day to day the rise stays near 0 and so does this.
func (p *dayProfile) ageCorrection(sl *profileSlice, ts int64) float64 {
	return p.rise.mean * (float64(ts) - sl.age - p.lag.mean) * perDayMs
}

// perDayMs is 1/dayMs: a multiplication on the path every sample takes.
const perDayMs = 1.0 / dayMs

// profileAlpha is the per-visit weight of profileDays.
var profileAlpha = AlphaForHalfLife(profileDays)

// The week. A service's weekend runs lower than its weekdays (or its
// Monday morning higher); at the change the day's profile, an average
// over the last few days, is a weekday's while the series has stepped
// to a weekend's. The offset follows within DayHalfLife samples, but
// not before a step of a sixth has paged, twice a week, on every
// series. So per day of the week (in the detector's time zone) and
// slice the profile keeps how that day's visits differed from the
// slice's mean, averaged over weeks (half-life profileWeeks), and adds
// wk times it to the prediction from the next week on.
//
// wk is the least-squares slope of the visits' differences on the
// offsets learnt for their days (through the origin; clamped to 0..1),
// shrunk towards weekPrior by a prior worth a day of visits (see
// learnWeek). Where there is a weekly pattern the
// offsets predict the differences and wk nears 1; where there is none
// last week's difference is noise, uncorrelated with this week's, and
// wk nears 0: adding it would double the error it is meant to remove.
// A slope moves smoothly, unlike a choice between two predictions,
// which at each flip steps the prediction by the week's offset that
// the profile's offset has already absorbed.
const (
	profileWeeks = 2
	// weekPrior is wk before any evidence: half way between a weekly
	// pattern and none.
	weekPrior = 0.5
)

var weekAlpha = AlphaForHalfLife(profileWeeks)

func newWeek(buckets int) []float32 {
	w := make([]float32, 7*buckets)
	for i := range w {
		w[i] = float32(math.NaN())
	}
	return w
}

// weekday returns the day of the week (0 to 6, a Thursday 0) of the
// wall-clock time ts.
func weekday(ts int64) int {
	d := ts / dayMs
	if ts < 0 && ts%dayMs != 0 {
		d--
	}
	return int((d%7 + 7) % 7)
}

// weekSpan works out the week's offsets for the slice span starting at
// from, of slice i.
func (p *dayProfile) weekSpan(from int64, i int) {
	n := len(p.slices)
	d := weekday(from)
	at := func(d, i int) float64 {
		// i is within one slice of 0..n-1: wrapped without a division.
		if i < 0 {
			i += n
		} else if i >= n {
			i -= n
		}
		r := float64(p.week[d*n+i])
		if r != r { // not seen yet
			return 0
		}
		return p.wk * r
	}
	p.wkFrom = from
	p.wkOwn, p.wkPrev, p.wkNext = at(d, i), at(d, i-1), at(d, i+1)
}

// learnWeek learns, as slice i's (sl) visit with mean m closes, the
// visit's difference from the slice's mean for its day of the week,
// and, where that day had an offset already, the slope wk.
func (p *dayProfile) learnWeek(sl *profileSlice, i int, m float64) {
	c := &p.week[weekday(sl.from)*len(p.slices)+i]
	e := m - sl.mean
	if !finite(e*e) || math.Abs(e) > math.MaxFloat32 {
		// A wild visit (a glitch of 1e300 on a slice's second day,
		// before values are clipped) is no day's pattern, and would
		// make the slope's sums infinite, then wk NaN.
		return
	}
	p.en++
	p.ee += maxf(p.wkAlpha, 1/float64(p.en)) * (e*e - p.ee)
	r := float64(*c)
	if r != r {
		*c = float32(e)
		return
	}
	p.wn++
	w := maxf(p.wkAlpha, 1/float64(p.wn))
	p.er += w * (e*r - p.er)
	p.rr += w * (r*r - p.rr)
	p.wk = p.slope()
	*c = float32(r + weekAlpha*(e-r))
	p.wkFrom = math.MinInt64 // the span's offsets are worked out again
}

// slope is wk from the visits' sums: the slope over the visits (n of
// them, as many as their weights count), with a prior of weekPrior worth
// a day of visits whose offsets were as large as visits' differences
// usually are: a day of small offsets (ordinary days, whose offsets are
// noise) moves it little, a day of large ones (a weekend's) decides it.
// Before any visit is compared it is weekPrior.
func (p *dayProfile) slope() float64 {
	n, prior := minf(float64(p.wn), 1/p.wkAlpha), float64(len(p.slices))*p.ee
	if d := n*p.rr + prior; d > 0 {
		return min(max((n*p.er+prior*weekPrior)/d, 0), 1)
	}
	return weekPrior
}

func (p *dayProfile) encode(w *encoder) {
	p.off.encode(w)
	p.lik.encode(w)
	for i := range p.slices {
		s := &p.slices[i]
		w.i64(s.from)
		w.f64(s.sum)
		w.f64(s.cnt)
		w.f64(s.mean)
		w.u64(s.days)
		w.f64(s.flat)
		w.f64(s.line)
		w.u64(s.n)
		w.f64(s.age)
		w.f64(s.last)
		w.i64(s.lastFrom)
	}
	for _, r := range p.week {
		w.f32(r)
	}
	w.f64(p.er)
	w.f64(p.rr)
	w.u64(p.wn)
	w.f64(p.ee)
	w.u64(p.en)
	// Their means and counts: the smoothing is the profile's own.
	w.f64(p.rise.mean)
	w.f64(p.lag.mean)
	w.u64(p.rise.n)
	w.u64(p.lag.n)
}

func (p *dayProfile) decode(r *decoder) {
	p.off.decode(r)
	p.lik.decode(r)
	for i := range p.slices {
		s := &p.slices[i]
		s.from = r.i64()
		s.sum = r.f64()
		s.cnt = r.f64()
		s.mean = r.f64()
		s.days = r.u64()
		s.flat = r.f64()
		s.line = r.f64()
		s.n = r.u64()
		s.age = r.f64()
		s.last = r.f64()
		s.lastFrom = r.i64()
	}
	for i := range p.week {
		p.week[i] = r.f32()
	}
	p.er = r.f64()
	p.rr = r.f64()
	p.wn = r.u64()
	p.ee = r.f64()
	p.en = r.u64()
	p.rise.mean = r.f64()
	p.lag.mean = r.f64()
	p.rise.n = r.u64()
	p.lag.n = r.u64()
	p.wk = p.slope()
	p.wkFrom = math.MinInt64
}
