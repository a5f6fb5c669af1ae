package detect

import (
	"math"
	"math/bits"
	"time"
)

// An incident that changes a series for longer than an episode is still
// one incident. auto ends an episode once the series has been calm for
// Calm samples, and an adaptive detector is calm once it has learnt
// part of the change. A move beyond every estimate of normal is held as
// one by its run (see regime), but a change that is no clean step is
// not: noise three times what it was, or a rise of half over a day, is
// followed by the level, so no run begins, and each hour of the day
// then meets the change in its slice for the first time and alerts
// again. Through the rules engine at the agent's default 15 s, three
// seeds of a daily cycle paged 35 times over the two days after its
// noise tripled for good, and 41 times after a rise of half over a day
// (docs/detectors.md, "A change that lingers").
//
// linger keeps, from an episode's alert, the normal the series had then:
// the level, its spread and slope, and every time-of-day slice's mean
// and variance. Each sample after it is judged against that normal as a
// run is (the hour's usual value and spread where its slice is known,
// else the level's): beyond it when lingerZ or more of those spreads
// away, on either side. The series lingers while more than lingerShare
// of the window's latest samples are beyond (see fitLinger), and
// Verdict.Lingering says so. A rule keeps its alert firing while that
// holds, so a lasting change is one page: 4 and 4 pages in the cases
// above, and the same 4 and 3 at a minute where they were 16 and 3.
//
// The memory ends once the episode has ended and the series no longer
// lingers (it came back: its alert resolves then, about as it did
// without the memory), or a day after the alert: by then a move has
// become a new regime (see regime), and a series that has been changed
// for a day has taught every hour of it its new spread. Its alert
// resolves then, marked unrecovered (rules), and what alerts after that
// is a new incident. A new episode within the memory keeps it: the
// normal before the incident, not one that has learnt part of it,
// judges the whole incident. Only the rule's hold reads it: no score
// changes (NAB and the families are the same, bit for bit).
type linger struct {
	on bool
	// lingering: the latest sample's judgement (see lingerStep).
	lingering bool
	w         uint8  // the window, in samples (see fitLinger); derived, not in snapshots
	since     int64  // the time of the alert the memory was taken at
	outs      uint64 // one bit per sample since, newest lowest: beyond the normal
	// The level's location, spread and slope, and the time-of-day
	// slices (nil when DayBuckets is 0), as they were at the alert.
	loc, scale, slope float64
	day               []EWMA
	// prior: finer than a minute, the slices as they were at the alert,
	// kept after the series came back until priorTill, a day on (see
	// echo); nil when none are kept.
	prior     []EWMA
	priorTill int64
}

// An incident's echo the next day
//
// Finer than a minute a time-of-day slice remembers about its last
// visit (DayHalfLife keeps its span of time, 20 minutes of visits), so
// an incident of an hour or two rewrites the slices of its hours: one at
// 106 read 151 after an hour at × 1.5. The next day, in the same hours,
// the time-of-day likelihood took the normal value for a dip of 2.7 of
// the slice's spreads, and at 15 s, where it averages four times the
// samples of a minute over the same span, that paged: a daily cycle at
// × 1.5 for one or two hours paged again the next day, for about 15
// minutes, in three seeds of three (docs/detectors.md, "An incident's
// echo the next day"). At a minute the same slice scores 0.34 and does
// not page.
//
// So, finer than a minute, when the memory ends because the series came
// back (not when a change lasted a day), the slices remembered at the
// alert are kept for a day more (prior), and the time-of-day distance is
// the smaller of the distances from the slice and from the slice as it
// was before the incident. A value the day before the incident called
// usual is not unusual the next day for an incident having passed. A
// different incident in those hours is far from both and pages
// (TestAutoNoEchoNextDay). At a minute and slower nothing changes: kept
// at every interval, NAB fell from 74.69 to 74.39.

// LingerFor is how long auto remembers the normal a series had at an
// alert, at most: a day. A rule holding an alert on Verdict.Lingering
// resolves it then (rules notes it as unrecovered).
const LingerFor = 24 * time.Hour

// lingerZ is how many of the remembered normal's spreads from it a
// sample is beyond it, and lingerShare the share of the window beyond
// it that lingers: more than twice the 4.6 % a normal distribution puts
// two spreads or more from its mean. Measured through the rules engine
// (docs/detectors.md, "A change that lingers"): three spreads and a
// ninth, Chebyshev's bound, let tripled noise's share dip below it often
// enough to page 18 times at 15 s where this pages 4; two spreads and a
// quarter, 9.
const (
	lingerZ     = 2
	lingerShare = 1.0 / 9
)

// lingerSpan is the time the window spans, in milliseconds, within at
// least Calm samples and at most 64 (fitLinger): at 15 s, 60 samples.
// A window of Calm samples at 15 s, five minutes, saw tripled noise
// come back within its normal often enough to page 7 times, and the
// rise 5; the quarter hour pages 4 and 4, and resolves a half-hour
// doubling 13 minutes after it ended rather than 7 to 12. At a minute
// and slower the window is Calm samples, as long as the calm that ends
// an episode, and resolves when it did.
const lingerSpan = 15 * 60 * 1000

// fitLinger fits the window to the interval between samples.
func (a *Auto) fitLinger() {
	w := int64(max(a.cfg.Calm, 1))
	if a.interval > 0 {
		w = max(w, lingerSpan/a.interval)
	}
	a.mem.w = uint8(min(w, 64))
}

// remember takes the memory at an episode's alert at ts (see linger),
// unless one is held.
func (a *Auto) remember(ts int64, floor float64) {
	m := &a.mem
	if m.on {
		return
	}
	m.on, m.since, m.outs, m.lingering = true, ts, 0, false
	m.loc, m.scale, m.slope = a.level.Loc(), maxf(a.level.Scale(), floor), a.slope
	if n := len(a.day.buckets); n > 0 {
		if m.day == nil {
			m.day = make([]EWMA, n)
		}
		copy(m.day, a.day.buckets)
	}
}

// lingerStep judges x at ts against the remembered normal (see linger)
// and sets m.lingering; floor is the floor under every spread, day the
// sample's time-of-day slice (nil when none judges by the clock) at
// index slot. Observe calls it, while a memory is held, before the
// sample is learnt: the memory ends here once the episode ended with
// the sample before, and the series does not linger.
func (a *Auto) lingerStep(ts int64, x, floor float64, day *EWMA, slot int) {
	m := &a.mem
	m.lingering = false
	if ts-m.since >= LingerFor.Milliseconds() {
		m.forget()
		return
	}
	exp, sp := m.loc+a.lag*m.slope, maxf(m.scale, floor)
	if day != nil && m.day[slot].Count() >= a.minVisits { // known then: a slice first visited in the incident knows only it
		exp, sp = m.day[slot].Mean(), hourSpread(&m.day[slot], floor, sp)
	}
	m.outs <<= 1
	if math.Abs(x-exp) >= lingerZ*sp {
		m.outs |= 1
	}
	if m.lingering = m.lingers(); !m.lingering && a.quiet == 0 {
		if a.fits != nil && m.day != nil { // came back, finer than a minute: keep the slices a day (see echo)
			m.prior, m.priorTill, m.day = m.day, ts+dayMs, nil
		}
		m.forget()
	}
}

// priorDistance returns the distance of x at ts from the time-of-day
// slice slot as it was before the latest incident, in its spread (the
// quarter-level spread on counts, as in Observe), and that spread, where
// such slices are kept (see echo) and this one was known then; else
// ok is false. Past priorTill it frees them.
//
//go:noinline
func (a *Auto) priorDistance(ts int64, x, floor, scale float64, slot int, asCounts bool) (daily, dev, quarter float64, ok bool) {
	m := &a.mem
	if ts >= m.priorTill {
		m.prior = nil
		return 0, 0, 0, false
	}
	pb := &m.prior[slot]
	if pb.Count() < a.minVisits {
		return 0, 0, 0, false
	}
	// The slice's spreads as Observe works them out for a slice, written
	// out there rather than called: on the hot path a call for them cost
	// 14 instructions an update (cachegrind).
	quarter = hourSpread(pb, floor, scale)
	spread := quarter
	if asCounts {
		spread = countSpread(pb, floor, a.quantum)
	}
	dev = math.Abs(x - pb.Mean())
	return dev / spread, dev, quarter, true
}

// forget ends the memory, and frees its slices: most series alert
// seldom, and 1.2 KB kept for each that once did is most of what a
// series costs beyond its estimates.
func (m *linger) forget() {
	m.on, m.day = false, nil
}

// lingers reports whether more than lingerShare of the window's samples
// were beyond the remembered normal.
func (m *linger) lingers() bool {
	w := uint(m.w)
	return float64(bits.OnesCount64(m.outs&(1<<w-1))) > lingerShare*float64(w)
}

// encodePrior writes the slices kept after an incident (see echo).
func (m *linger) encodePrior(w *encoder) {
	w.bool(m.prior != nil)
	if m.prior != nil {
		w.i64(m.priorTill)
		encodeSlices(w, m.prior)
	}
}

// decodePrior reads what encodePrior wrote.
func (a *Auto) decodePrior(d *decoder) {
	m := &a.mem
	m.prior = nil
	if !d.bool() {
		return
	}
	m.priorTill = d.i64()
	n := len(a.day.buckets)
	if n == 0 && d.err == nil {
		d.err = errorf("slices kept after an incident, with no slices")
		return
	}
	m.prior = make([]EWMA, n)
	decodeSlices(d, m.prior, "kept after an incident")
}

// encodeSlices writes remembered time-of-day slices.
func encodeSlices(w *encoder, s []EWMA) {
	for i := range s {
		s[i].encode(w)
	}
}

// decodeSlices reads what encodeSlices wrote into s, each slice a mean
// and a variance that must be finite; what names them in an error.
func decodeSlices(d *decoder, s []EWMA, what string) {
	for i := range s {
		s[i].decode(d)
		if e := &s[i]; !(finite(e.mean) && finite(e.vr) && e.vr >= 0) && d.err == nil {
			d.err = errorf("slice %d %s: %v, variance %v", i, what, e.mean, e.vr)
		}
	}
}

func (m *linger) encode(w *encoder) {
	w.bool(m.on)
	if m.on {
		w.i64(m.since)
		w.u64(m.outs)
		w.f64(m.loc)
		w.f64(m.scale)
		w.f64(m.slope)
		encodeSlices(w, m.day)
	}
}

// decodeLinger reads what linger.encode wrote.
func (a *Auto) decodeLinger(d *decoder) {
	m := &a.mem
	m.lingering = false
	if m.on = d.bool(); !m.on {
		m.day = nil
		return
	}
	m.since = d.i64()
	m.outs = d.u64()
	m.loc, m.scale, m.slope = d.f64(), d.f64(), d.f64()
	if !(finite(m.loc) && finite(m.scale) && finite(m.slope) && m.scale >= 0) && d.err == nil {
		d.err = errorf("remembered normal %v ± %v, slope %v", m.loc, m.scale, m.slope)
	}
	if n := len(a.day.buckets); n > 0 && m.day == nil {
		m.day = make([]EWMA, n)
	}
	decodeSlices(d, m.day, "remembered at an alert")
}
