package detect

// A lasting fall in scale, for records.
//
// A record must beat the highest value seen (see extreme), measured
// from the level it was set at: where the level has risen since, the
// bar rises with it; where it has fallen, the bar stays. On a series
// whose whole scale has fallen for good (a CPU share halved by a
// faster machine, traffic moved to another region), the highest value
// from before the fall is out of reach of anything the series now does,
// so records stopped paging on it. NAB with every value halved from a
// third of each file on (`seismo bench nab --probe step=0.5`) scored
// 59.10 against 74.79 as loaded. 19 windows were lost, and 10 of them
// had been found by a record. On `ec2_cpu_utilization_24ae8d` a daily job
// reached 1.53 before the fall, and the window's 2.34, halved, no longer
// beat it.
//
// On a series that stays above 0, where a fall by a share is a change
// of scale, the bar follows a lasting fall: once the slow level (the
// level's mean over fallHalfLife) has fallen below fallShare of what it
// was when the highest value was set, the highest value and the level
// it is measured from are scaled down by the same ratio, once. With this,
// `--probe step=0.5` scores 62.33, and NAB as loaded 74.85. That
// is one window found earlier on `Twitter_volume_AAPL`, and no false
// alarm more. The families and the other probes are within 0.1 of before
// (docs/detectors.md, "Records after a fall in scale").
//
// A new regime (see regime.go) moves the bars itself, and sets the slow
// level to the regime's. A series that reaches 0 keeps its bars as they
// were: a sparse count's slow mean halves without any incident, and its
// next ordinary burst would beat the lowered bar (rare_counts lost 2 to
// 2.8 points with the rule applied, from the samples' mean, to every
// series at or above 0). A
// glitch that is undone (see glitch) leaves the slow level where it was
// at the record, since one sample barely moves it.
const (
	// fallHalfLife is the slow level's half-life, in time: two days, so
	// that a weekend at half the weekdays' level takes it to three
	// quarters of theirs, short of fallShare.
	fallHalfLife = 2 * dayMs
	// fallShare is how far the slow level must fall below what it was
	// when the highest value was set before the bar follows it.
	fallShare = 2.0 / 3
)

// fitFall fits the slow level's memory to the interval measured (a
// minute's on a series without a clock, as the rest of auto reads it),
// once the warm-up is over; until then it learns nothing.
func (a *Auto) fitFall() {
	if a.n <= uint64(a.cfg.WarmUp) {
		a.slowAlpha = 0
		return
	}
	iv := a.interval
	if iv <= 0 || a.noClock {
		iv = sliceStep
	}
	a.slowAlpha = float32(AlphaForHalfLife(float64(fallHalfLife) / float64(iv)))
}

// fall scales the highest value's bar down with the slow level, which
// has fallen below fallShare of what it was when the bar was set, on a
// series that stays above 0 (Observe checks both).
func (a *Auto) fall() {
	f := a.slow / a.slowHi
	a.hi, a.locHi = max(a.lo, f*a.hi), f*a.locHi
	a.slowHi = a.slow
	a.fitFloor()
}
