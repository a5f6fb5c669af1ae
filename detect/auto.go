package detect

import (
	"fmt"
	"math"
	"slices"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name: "auto",
		Doc: "Default univariate detector: surprise against a robust level, the usual " +
			"value at this hour and the previous sample, each judged against the series' " +
			"own history of surprise (anomaly likelihood), plus new extremes, with one " +
			"alert per incident.",
		NewConfig: func() Config { c := DefaultAutoConfig(); return &c },
	})
}

// AutoConfig configures the default detector. Lengths are in samples, so
// the same config suits any evaluation interval.
type AutoConfig struct {
	// Threshold is the score at and above which a sample is anomalous.
	Threshold float64 `yaml:"threshold"`
	// WarmUp is the number of samples before any score is given: enough
	// for a first estimate of level and scale (a robust scale from 30
	// samples is within about 20 %), not more, because a series may be
	// short and its first incident early.
	WarmUp int `yaml:"warm_up"`
	// LevelHalfLife is how fast the expected level follows the series.
	LevelHalfLife float64 `yaml:"level_half_life"`
	// SurpriseCap caps the per-sample surprise (distance from the level in
	// robust standard deviations) so one wild sample cannot dominate the
	// long-run statistics of surprise.
	SurpriseCap float64 `yaml:"surprise_cap"`
	// ShortHalfLife and LongHalfLife are the likelihood layer's windows:
	// recent surprise is averaged over the first and judged against its
	// distribution over the second. They, and PatternHalfLife, count
	// samples a minute or more apart; at a finer interval they keep the
	// span of time they have at one minute (see fitLikelihoods).
	ShortHalfLife float64 `yaml:"short_half_life"`
	LongHalfLife  float64 `yaml:"long_half_life"`
	// ExtremeTolerance is how far beyond the range seen so far (as a share
	// of that range) a value must lie to count as a new extreme, which
	// scores as anomalous outright. A record must also be beaten by as
	// much as the level has moved towards it since it was set, and one
	// beyond the normal band must lie further out than noise at its
	// spread reaches in the history it beats. Negative disables the check.
	ExtremeTolerance float64 `yaml:"extreme_tolerance"`
	// ExtremeAfter is the number of samples before new extremes count: in
	// a short history every few samples sets a record. With DayBuckets on,
	// new extremes also wait until a whole day has been seen, so that the
	// first daily peak is not news. The default is the warm-up's 30: on
	// fast data the day is the longer wait, and on hourly data 60 samples
	// would be two and a half days.
	ExtremeAfter int `yaml:"extreme_after"`
	// Quiet is the longest time, in samples, that an episode lasts after
	// its alert: State stays anomalous and no new alert starts, so that
	// one incident yields one alert.
	Quiet int `yaml:"quiet"`
	// Calm ends the episode early: once the score has stayed below half
	// the threshold for this many samples in a row, the incident is over
	// (State returns to normal) and the next one may alert. 0 keeps the
	// full quiet period.
	Calm int `yaml:"calm"`
	// DayBuckets slices the day (in TimeZone) into this many time-of-day
	// baselines; once a slice has been seen MinDayVisits times, surprise is
	// the average of the distance from the level and from that slice's
	// usual value, so daily rhythms count for less. 0 disables it.
	DayBuckets   int `yaml:"day_buckets"`
	MinDayVisits int `yaml:"min_day_visits"`
	// DayHalfLife is, per time-of-day slice, how many visits it takes to
	// half forget. Both count samples a minute or more apart; at a
	// finer interval (the smallest seen in the warm-up) they keep the
	// span of time they have at one minute (see fitSlices).
	DayHalfLife float64 `yaml:"day_half_life"`
	// PatternHalfLife is the short window of the likelihoods over
	// time-of-day surprise and step surprise (the change from the previous
	// sample): longer than ShortHalfLife because a changed pattern shows
	// over several samples, not in one.
	PatternHalfLife float64 `yaml:"pattern_half_life"`
	// SpikeZ is the bound of the spike path: a value this many standard
	// deviations from a short exponentially weighted mean and spread
	// (SpikeHalfLife samples, the plain z-score's baseline; its trend
	// keeps the span of time it has at one minute on coarser data, see
	// fitTrend) scores as
	// that z-score does, unless the series crosses the bound often. It
	// catches a one-sample spike or dip that the likelihoods, which
	// average surprise over a few samples, dilute. On a strong daily
	// cycle, whose short spread is the cycle's, a sample SpikeZ spreads
	// of its hour from that hour's usual value counts too. 0 disables
	// the path.
	SpikeZ        float64 `yaml:"spike_z"`
	SpikeHalfLife float64 `yaml:"spike_half_life"`
	// SpikeRate mutes the spike path on a series whose crossings of the
	// bound (counted once per excursion, since the warm-up) are more
	// frequent than this share of samples: a heavy-tailed series, whose
	// spikes are not news. Only short excursions count, of at most two
	// ShortHalfLife samples beyond the bound their first sample crossed:
	// a longer one is an episode (an outage, a shift) that the
	// likelihoods see as well, not a sample from a heavy tail. One
	// crossing is no rate: the path mutes only once there have been more
	// than 1 + SpikeRate × samples.
	SpikeRate float64 `yaml:"spike_rate"`
	// JumpZ lets the spike path see jumps too: a change from the previous
	// sample of JumpZ robust standard deviations of the series' changes
	// counts as a SpikeZ excursion (and more as much more). It catches a
	// sudden drop or surge that the short baseline's spread, swollen by a
	// daily cycle or an earlier shift, hides. On a series of whole
	// numbers the spread of changes is at least that of the difference
	// of two Poisson counts, sqrt(2 × level). 0 disables it.
	JumpZ float64 `yaml:"jump_z"`
	// FrozenRuns is how many times the longest run of repeated values
	// the series has had a run must be to be a freeze (an exporter that
	// hangs keeps serving its last value; see frozen), besides lasting 20
	// samples and 10 minutes. 0 disables the judgement: for a metric whose
	// value may stand still for any time.
	FrozenRuns float64 `yaml:"frozen_runs"`
	// TimeZone is the IANA time zone (e.g. "Europe/Berlin") whose days
	// the time-of-day slices and the day's profile follow; empty is
	// UTC. Set it for a series that follows local time where clocks
	// change, so that a daylight-saving change moves the day with it
	// rather than shifting the whole curve by an hour.
	TimeZone string `yaml:"time_zone"`
}

// DefaultAutoConfig returns the defaults: the likelihood and episode
// settings chosen by measurement on NAB as a whole and checked by
// cross-validation over its categories; warm-up and the wait for new
// extremes, which NAB's long probation cannot measure, set by what a short
// series needs (see docs/detectors.md).
func DefaultAutoConfig() AutoConfig {
	return AutoConfig{
		Threshold:        0.6,
		WarmUp:           30,
		LevelHalfLife:    150,
		SurpriseCap:      3,
		ShortHalfLife:    2,
		LongHalfLife:     8000,
		ExtremeTolerance: 0.02,
		ExtremeAfter:     30,
		Quiet:            200,
		Calm:             20,
		DayBuckets:       24,
		MinDayVisits:     3,
		DayHalfLife:      20,
		PatternHalfLife:  5,
		SpikeZ:           5,
		SpikeHalfLife:    50,
		SpikeRate:        0.001,
		JumpZ:            10,
		FrozenRuns:       frozenRecs,
	}
}

// Validate reports every invalid field.
func (c *AutoConfig) Validate() error {
	var errs configutil.Errors
	if !(c.Threshold > 0 && c.Threshold <= 1) {
		errs.Addf("threshold", "must be in (0, 1], got %v", c.Threshold)
	}
	if c.WarmUp < 1 {
		errs.Addf("warm_up", "must be at least 1 sample, got %d", c.WarmUp)
	}
	checkHalfLife(&errs, "level_half_life", c.LevelHalfLife)
	checkHalfLife(&errs, "short_half_life", c.ShortHalfLife)
	checkHalfLife(&errs, "long_half_life", c.LongHalfLife)
	checkHalfLife(&errs, "pattern_half_life", c.PatternHalfLife)
	if !(c.SurpriseCap > 0) || math.IsInf(c.SurpriseCap, 0) {
		errs.Addf("surprise_cap", "must be a positive number of standard deviations, got %v", c.SurpriseCap)
	}
	if math.IsNaN(c.ExtremeTolerance) || math.IsInf(c.ExtremeTolerance, 0) {
		errs.Addf("extreme_tolerance", "must be a number, got %v", c.ExtremeTolerance)
	}
	if c.ExtremeAfter < 0 {
		errs.Addf("extreme_after", "must not be negative, got %d", c.ExtremeAfter)
	}
	if c.Quiet < 0 {
		errs.Addf("quiet", "must not be negative, got %d", c.Quiet)
	}
	if c.Calm < 0 {
		errs.Addf("calm", "must not be negative, got %d", c.Calm)
	}
	if c.DayBuckets < 0 || c.DayBuckets > 1440 {
		errs.Addf("day_buckets", "must be between 0 (off) and 1440, got %d", c.DayBuckets)
	}
	if c.DayBuckets > 0 {
		if c.MinDayVisits < 2 {
			errs.Addf("min_day_visits", "must be at least 2, got %d", c.MinDayVisits)
		}
		checkHalfLife(&errs, "day_half_life", c.DayHalfLife)
	}
	checkTimeZone(&errs, c.TimeZone)
	if !(c.SpikeZ >= 0) || math.IsInf(c.SpikeZ, 0) {
		errs.Addf("spike_z", "must be 0 (off) or a positive number of standard deviations, got %v", c.SpikeZ)
	}
	if c.SpikeZ > 0 {
		checkHalfLife(&errs, "spike_half_life", c.SpikeHalfLife)
		if !(c.SpikeRate >= 0 && c.SpikeRate <= 1) {
			errs.Addf("spike_rate", "must be a share of samples in [0, 1], got %v", c.SpikeRate)
		}
		if !(c.JumpZ >= 0) || math.IsInf(c.JumpZ, 0) {
			errs.Addf("jump_z", "must be 0 (off) or a positive number of standard deviations, got %v", c.JumpZ)
		}
	}
	if !(c.FrozenRuns == 0 || c.FrozenRuns >= 1) || math.IsInf(c.FrozenRuns, 0) {
		errs.Addf("frozen_runs", "must be 0 (off) or at least 1 (times the longest run of repeats), got %v", c.FrozenRuns)
	}
	return errs.Err()
}

// New builds a detector.
func (c *AutoConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("auto detector: %w", err)
	}
	return NewAuto(*c), nil
}

// AlertThreshold is the default threshold for alerts.
func (c *AutoConfig) AlertThreshold() float64 { return c.Threshold }

// SetTimeZone implements TimeZoned.
func (c *AutoConfig) SetTimeZone(zone string) { c.TimeZone = zone }

func (c *AutoConfig) fields() []configField {
	return []configField{
		{"threshold", c.Threshold}, {"warm_up", float64(c.WarmUp)}, {"level_half_life", c.LevelHalfLife},
		{"surprise_cap", c.SurpriseCap}, {"short_half_life", c.ShortHalfLife}, {"long_half_life", c.LongHalfLife},
		{"extreme_tolerance", c.ExtremeTolerance}, {"extreme_after", float64(c.ExtremeAfter)}, {"quiet", float64(c.Quiet)}, {"calm", float64(c.Calm)},
		{"day_buckets", float64(c.DayBuckets)}, {"min_day_visits", float64(c.MinDayVisits)}, {"day_half_life", c.DayHalfLife},
		{"pattern_half_life", c.PatternHalfLife}, {"spike_z", c.SpikeZ}, {"spike_half_life", c.SpikeHalfLife}, {"spike_rate", c.SpikeRate}, {"jump_z", c.JumpZ},
		{"frozen_runs", c.FrozenRuns}, // from format 36 (see UnmarshalBinary)
	}
}

// Auto is the default univariate detector. Per sample it
//
//  1. measures surprise: the distance of the value from a robust
//     (outlier-resistant) level, carried forward by the level's trend, in
//     robust standard deviations, capped, and averaged with the distance
//     from the usual value at this time of day;
//  2. turns surprise into a likelihood: how improbable the recent average
//     surprise is against this series' own long-run distribution of it
//     (Numenta's anomaly likelihood), so a noisy series must be surprising
//     by its own standards; further likelihoods over the time-of-day
//     surprise alone and over the step from the previous sample catch a
//     changed daily shape and sudden jumps, and one over the distance
//     from the day's profile (see dayProfile) a dip on a fast daily
//     curve; the least likely of the four is log-scaled into the score;
//  3. once the range is established, scores a value beyond the range seen
//     so far as anomalous outright;
//  4. scores a sample far outside a short mean and spread (the plain
//     z-score's baseline), or, on a strong daily cycle and from the
//     fourth day, far from its hour's usual value, as that z-score
//     does, unless the series often goes that far (the spike path);
//  5. after an alert, keeps State anomalous and starts no new alert until
//     the series has been calm (score below half the threshold) for Calm
//     samples, or at most Quiet samples, so that one incident yields one
//     alert and a rule's `for:` sees the incident last; below the
//     threshold, reports a score only when it is the excursion's highest
//     so far, so that a lower threshold sees one incident once too.
//
// It costs O(1) work and a fixed ~4.4 KB per series (1.5 KB of it the 24
// time-of-day baselines and their offsets from the level, 1.5 KB the
// day's profile).
type Auto struct {
	cfg       AutoConfig
	level     Robust
	lik       Likelihood
	lo, hi    float64 // range seen so far
	n         uint64
	quiet     int     // samples of quiet left
	calm      int     // consecutive calm samples during the quiet period
	calmP     float64 // a likelihood above this is calm (see NewAuto)
	spikeZ2   float64 // SpikeZ², the spike path's bound on squares
	last      Verdict
	day       Seasonal   // time-of-day baselines; unused when DayBuckets is 0
	dayLik    Likelihood // likelihood of the time-of-day surprise alone
	step      Robust     // change from the previous sample
	stepLk    Likelihood // likelihood of step surprise
	prof      dayProfile // the day's shape between slices; unused when DayBuckets is 0
	prev      float64
	prevDev   float64 // prev's change from the sample before less the usual change, if unusual (see Observe), else 0
	prevTs    int64   // the previous sample's timestamp, for its time-of-day slice
	first     int64   // timestamp of the first sample
	spike     EWMA    // the spike path's baseline
	crossings uint64  // spike-path crossings after the warm-up, once per excursion
	// The samples before the run that began the current regime (0
	// before any): the spike path's rate counts crossings and jumps
	// from there (see routine and regimeStep).
	rateFrom uint64
	// The same crossings by the time-of-day slice their excursion began
	// in (exSlot; nil without DayBuckets), so that crossings that come
	// at one time of day are that hour's routine (see hourRoutine).
	hourCrossings []uint32
	exSlot        int
	// Finer than a minute, how well the level and this hour's usual value
	// have predicted each time-of-day slice (see sliceFit); nil at a
	// minute or coarser, and without DayBuckets.
	fits     []sliceFit
	fitAlpha float64 // their memory per sample: profileDays of a slice's visits
	// A run of gaps between samples that agree with each other and not
	// with interval (see watchInterval): how many, the first and the
	// least.
	ivRun          int
	ivRef, ivLeast int64
	jumps          uint64 // the spike path's alerting excursions that began as a jump within its bound (see Observe)
	// The spike path's baseline carried on by its own trend (see
	// trendStep): its level, its slope per sample and the mean squared
	// error of its predictions. trendAlpha, the share of an error the
	// level takes, and trendGain, the share the slope takes (the level's
	// times the slope's, which follows the level's changes over
	// ShortHalfLife samples), are derived from the config and the
	// interval (see fitTrend) and not part of snapshots.
	trendLevel, trendSlope, trendErr float64
	trendAlpha, trendGain            float64
	// The spike path's current excursion (see excursion): its length
	// so far in samples, 0 when there is none, saturating at shortRun+1;
	// whether it counts as a crossing if it ends short (counts); and the
	// short baseline's mean and variance when it began, whose bound it
	// lasts beyond (exMean, exVar). shortRun, the longest excursion that
	// counts, is derived from ShortHalfLife.
	run           uint64
	counts        bool
	exMean, exVar float64
	shortRun      uint64
	// The lattice of counts the values lie on (see lattice.go): every
	// value seen is a whole multiple of quantum, 1/perQuantum, within
	// latticeTol steps; offLattice once there is none. fraction: the
	// values are no counts (off any lattice, or on one of decimals).
	perQuantum, quantum, latticeTol float64
	offLattice, fraction            bool
	// noClock: the timestamps are row numbers, not times, and nothing
	// is judged by the time of day (see fitClock); derived from first
	// and interval, not part of snapshots. It shares a word with the
	// flags above: Auto and its allocation header fit in 2,688 bytes.
	noClock bool
	// Off every lattice, the step a gauge's changes agree on (see
	// stepLattice).
	chg stepLattice
	// The level the highest and lowest values are measured from: a
	// record must lie further from the level now than the highest
	// (lowest) value lay from locHi (locLo), as well as beyond it, so
	// that a drifting level does not make records cheap. hiEp (loEp)
	// is whether that value was set within an episode (see Observe).
	locHi, locLo float64
	hiEp, loEp   bool
	// Whether the highest (lowest) value is a regime's run's extreme
	// (see regimeStep), or a record beyond one that did not count: set
	// by a day or so of the new regime, a short history whose extremes
	// noise soon beats, so a record beyond it must lie beyond noise's
	// reach (see extreme) even within the normal band. A gauge at 100
	// with noise 2 that fell to 30 for good paged 9 records in ten
	// seeds' nine weeks after its regime with the band's shortcut, 4
	// without (TestAutoRegimeKeepsItsNoise).
	hiRun, loRun bool
	// The slow level, the level's mean over fallHalfLife, and what it
	// was when the highest value's bar was set, for a lasting fall in
	// scale (see fall.go). slowAlpha, its memory per sample, is derived
	// from the interval and not part of snapshots; a float32 fills the
	// padding after the flags above (see noClock).
	slowAlpha    float32
	slow, slowHi float64
	// The bar a record far beyond it replaced, until the next sample
	// shows whether it held (see glitch), or a drop to 0 replaced,
	// until the series leaves 0.
	wild bar
	// When the series last fell to 0 from above it (see zeroGap); 0
	// while it never has.
	zeroAt int64
	// The peak of the scores below the threshold since the series was
	// last calm, and the samples since it last scored half of it (see
	// belowThreshold).
	runPeak float64
	runCalm int
	// Derived from runPeak by setRunPeak: below peakZ a likelihood's z
	// scores below runPeak, below halfLo below half of it, and above
	// halfHi at least half of it. Most samples are no new peak, and these
	// let them skip the tail probability and its logarithm.
	peakZ, halfLo, halfHi float64
	// Per time-of-day slice, the usual distance from the level (see
	// recordZ); nil when DayBuckets is 0.
	offset       []offset
	offsetSteady uint64 // derived: the visits from which an offset's update is steady
	// The interval between samples (ms): in the warm-up the smallest
	// gap so far, and from its end the median of its gaps (see
	// warmUp). The slices' memory is fitted to it (see fitSlices), and
	// so are the visits a slice needs before it judges (MinDayVisits,
	// fitted; derived from interval, not in snapshots).
	interval  int64
	minVisits uint64
	// grid is the usual interval nearest the measured one (see fitGrid),
	// on which a sample's time is read (see onGrid); 0 when the interval
	// is no usual one. Derived from interval, not part of snapshots.
	grid int64
	// What the warm-up keeps until it ends (see warmUp); nil after it
	// and not part of snapshots.
	warm *warmUp
	// A cycle found in a series without a clock (see cycle.go): the
	// search under way (nil when there is none), and the clock a cycle
	// gave: sample k is at cycleEpoch + k × synthStep (0: none). Only
	// synthStep is in snapshots.
	cycle     *cycleSearch
	synthStep int64
	// The level's trend: its change per sample, averaged over twice the
	// level's half-life (slopeAlpha), and how far an exponentially
	// weighted level lags a steady trend, in samples (lag). Surprise is
	// measured from the level plus lag × slope, where the series is now
	// rather than where it was a few half-lives ago; records and the
	// time-of-day offsets keep to the level itself, whose lag cancels
	// between the two ends of a comparison. The two factors are derived
	// from LevelHalfLife.
	slope           float64
	slopeAlpha, lag float64
	// The time zone of the day; derived from the config, not part of
	// snapshots.
	zone zoneClock
	// Departures from a value the metric repeats (see departures), and
	// the likelihood z of a score of half the threshold, from which a
	// departure (and an excursion of sch) is under way; derived from
	// the config. The share of repeats is taken over the level's alpha,
	// and departures age as the likelihoods' long run does.
	dep  departures
	depZ float64
	// The starts of recent excursions, for scheduled jobs (see schedule),
	// and the likelihood z at which a sample alerts, derived from the
	// threshold.
	sch    schedule
	alertZ float64
	// The last jumps and when they came, for steps that the day repeats
	// (see dailyJumps).
	daily dailyJumps
	// What the floors under every spread are worked out from (see
	// fitFloor); derived from the range and the lattice, not part of
	// snapshots.
	span, least, res float64
	// The run of samples beyond every estimate of normal under way, and
	// the estimates before it (see regime).
	reg regime
	// The normal the series had at the latest episode's alert, while it
	// lingers away from it (see linger).
	mem linger
	// The run of repeated values under way, and how long runs are on
	// this series (see frozen); the least run that may be a freeze and
	// alertP, the threshold's tail probability, are derived from the
	// config.
	frz      frozen
	frzLeast uint32
	alertP   float64
}

// NewAuto returns a detector for a valid config (see AutoConfig.Validate).
func NewAuto(c AutoConfig) *Auto {
	levelAlpha := AlphaForHalfLife(c.LevelHalfLife)
	a := &Auto{
		cfg:        c,
		slopeAlpha: AlphaForHalfLife(2 * c.LevelHalfLife),
		lag:        (1 - levelAlpha) / levelAlpha,
		// LogTailScore(p) < Threshold/2, solved for p once.
		calmP:   tailAtScore(c.Threshold / 2),
		spikeZ2: c.SpikeZ * c.SpikeZ,
		// Two half-lives of the likelihoods' short average: by then it
		// weighs a lasting excursion at three quarters.
		shortRun: uint64(math.Ceil(2 * c.ShortHalfLife)),
		level:    NewRobust(levelAlpha, 3),
		// 0.05: surprise is in standard deviations, so a long-run spread
		// below 0.05 is noise, not a baseline to measure excursions by.
		lik:    NewLikelihood(c.ShortHalfLife, c.LongHalfLife, 0.05),
		step:   NewRobust(AlphaForHalfLife(c.LevelHalfLife), 3),
		stepLk: NewLikelihood(c.PatternHalfLife, c.LongHalfLife, 0.05),
		spike:  NewEWMA(AlphaForHalfLife(c.SpikeHalfLife)),
	}
	a.setTrendMemory(c.SpikeHalfLife)
	a.setLattice(1, wholeTol)
	a.fitFloor()
	a.dep = newDepartures()
	// The z of a score of half the threshold and of the threshold, at
	// least 1: the likelihoods report a z below 1 as 0, calm.
	a.depZ = maxf(NormalTailZ(a.calmP), 1)
	a.alertP = tailAtScore(c.Threshold)
	a.frzLeast = uint32(max(c.Calm, frozenLeast))
	if c.FrozenRuns == 0 { // no run is judged
		a.frzLeast = math.MaxUint32
	}
	a.alertZ = maxf(NormalTailZ(a.alertP), 1)
	// Validate has checked the zone; a config that was not validated
	// keeps UTC for a zone that does not load.
	a.zone = newZoneClock(c.TimeZone)
	if c.DayBuckets > 0 {
		a.day = NewSeasonal(dayMs, c.DayBuckets, AlphaForHalfLife(c.DayHalfLife))
		a.dayLik = NewLikelihood(c.PatternHalfLife, c.LongHalfLife, 0.05)
		a.prof = newDayProfile(c.DayBuckets, c)
		a.offset = make([]offset, c.DayBuckets)
		a.hourCrossings = make([]uint32, c.DayBuckets)
		a.minVisits = uint64(c.MinDayVisits)
		a.offsetSteady = max(a.day.buckets[0].startUntil, a.minVisits+1)
	}
	return a
}

// Observe implements Detector.
func (a *Auto) Observe(ts int64, x float64) (v Verdict) {
	if !finite(x) {
		return skipVerdict(a.last)
	}
	if a.wild.zero && x <= 0 && a.holdZero() {
		// Still at 0 after a drop judged as a restart's or a gap's
		// (see glitch): held as a missing sample is, but judged as the
		// drop was, so an alert on it lasts while the zeros do; no new
		// evidence.
		v := a.last
		v.Score, v.Evidence = 0, EvidenceNone
		return v
	}
	if a.frz.on && x == a.prev {
		// Still frozen (see frozen): the repeats carry nothing about the
		// series and are held as missing samples are, so that nothing
		// learns the stuck value; an alert on it lasts while they do.
		a.frz.run++
		v := a.last
		v.Score, v.Evidence = 0, EvidenceNone
		return v
	}
	c := &a.cfg
	a.n++
	if a.synthStep > 0 { // a clock that a cycle gave (see setCycle)
		ts = cycleEpoch + int64(a.n)*a.synthStep
	} else if a.zone.loc != nil {
		// All of the detector's times are the zone's wall-clock times
		// from here on: its days are the zone's days.
		ts = a.zone.local(ts)
	}
	if a.n <= uint64(c.WarmUp)+1 { // the warm-up, and the sample after it
		if a.warm == nil {
			a.warm = &warmUp{}
		}
		if ts < clockEpoch && c.DayBuckets > 0 {
			// Kept until the clock is known: a series without one is
			// searched for a cycle from its first sample (see cycle.go).
			// A series with times keeps none.
			if a.warm.early == nil {
				a.warm.early = make([]float64, 0, c.WarmUp+1)
			}
			a.warm.early = append(a.warm.early, x)
		}
		if d := ts - a.prevTs; a.n > 1 && d > 0 {
			if a.interval == 0 || d < a.interval {
				a.interval = d
			}
			if a.warm.gaps == nil {
				a.warm.gaps = make([]int64, 0, c.WarmUp)
			}
			a.warm.gaps = append(a.warm.gaps, d)
		}
		if a.n == uint64(c.WarmUp)+1 {
			if m := a.warm.median(); m > 0 {
				a.interval = m
			}
			a.fitFloor()
			a.fitInterval()
			a.slow, a.slowHi = a.level.Loc(), a.level.Loc()
		}
	} else {
		d := ts - a.prevTs
		if d != a.interval && d > 0 && a.synthStep == 0 && !a.noClock {
			a.watchInterval(d)
		}
		if d != a.grid && a.grid != 0 { // one interval on is on the grid the previous sample was read on
			ts = a.onGrid(ts)
		}
	}
	if !a.offLattice && !a.onLattice(x) { // no store while on it
		a.refineLattice(x)
		a.fitFloor() // the reading's resolution (see resolution)
	}
	loc := a.level.Loc()
	now := loc + a.lag*a.slope // where the trend puts the level now
	// The least spread anything is judged in (see rangeFloor): at the
	// level, worked out once for all that use it, and at the short
	// baseline, the trend and the profile for theirs.
	reach := a.floorReach(loc)
	// Whole numbers are counts (see lattice.go), unless they vary far
	// less than counts at their level do, or repeat their value as
	// counts cannot (see gauge). The reading's resolution (see
	// resolution) is taken on a lattice of decimals, and on one of
	// counts only where the series is a gauge, whose unit is what it
	// shows of a level; counts keep their counting noise.
	asCounts := !a.fraction && !a.gauge(loc)
	res := a.res
	if asCounts {
		res = 0
	}
	floor := rangeFloor(loc, reach, a.least, res)
	scale := maxf(a.level.Scale(), floor)
	var day *EWMA // this time of day's baseline; nil when DayBuckets is 0
	slot := 0     // its index, a.day.Bucket(ts), looked up once
	if c.DayBuckets > 0 && !a.noClock {
		slot = a.day.Bucket(ts)
		day = &a.day.buckets[slot]
	}
	// A run of samples beyond every estimate of normal may be a new
	// regime (see regime); once it is, everything below is judged from
	// the estimates it moved.
	if (math.Abs(x-now) >= regimeZ*scale || a.reg.side != 0 || a.hourBeyond(x, floor, scale, day)) && a.regimeStep(ts, x, now, floor, scale, day, slot) {
		loc = a.level.Loc()
		now = loc + a.lag*a.slope
		reach = a.floorReach(loc)
		floor = rangeFloor(loc, reach, a.least, res)
		scale = maxf(a.level.Scale(), floor)
	}
	if a.mem.on { // the normal at the latest alert, while the series lingers away from it (see linger)
		a.lingerStep(ts, x, floor, day, slot)
	}
	surprise := 0.0
	extreme := 0.0          // the new-extreme score; 0 if x is no new extreme
	zDay, zStep := 0.0, 0.0 // likelihood z-values (see Likelihood.UpdateZ)
	jump := 0.0             // the step in the spike path's units (SpikeZ/JumpZ per step σ)
	repeat := false         // whether the jump repeats one of a day or two before (see dailyJumps)
	// The change from the previous sample and the spread of changes it
	// is judged by (see patterned).
	change, changeSp := 0.0, 0.0
	hourZ, hourSp := 0.0, 0.0 // distance from this hour's usual value, in hourSp (see hourSpike)
	daySp := 0.0              // this hour's spread once its slice is known, else 0 (see patterned)
	// The verdict's expected value and band half-width: the trend-carried
	// level's, or this hour's (see below).
	exp, half := now, 3*scale
	profZ := 0.0      // x's distance from the day's profile in its spreads where it judges and that is SpikeZ or more, else 0
	profBand := false // whether the day's profile judges x (its band is then the verdict's)
	if a.n == 1 {
		a.lo, a.hi = x, x
		a.first = ts
		a.trendLevel = x
		a.locHi, a.locLo = x, x
	} else {
		levelZ := math.Abs(x-now) / scale
		surprise = minf(levelZ, c.SurpriseCap)
		if day != nil {
			b := day
			if b.Count() >= a.minVisits {
				quarter := hourSpread(b, floor, scale)
				spread := quarter
				if asCounts {
					spread = countSpread(b, floor, a.quantum)
				}
				dev := math.Abs(x - b.Mean())
				daily := dev / spread
				// Finer than a minute, for a day after an incident, the
				// nearer of the slice and the slice before it (see echo).
				if a.mem.prior != nil {
					if d2, dev2, q2, ok := a.priorDistance(ts, x, floor, scale, slot, asCounts); ok && d2 < daily {
						daily, dev, quarter = d2, dev2, q2
					}
				}
				daySp = spread
				// Where the daily pattern explains at least three
				// quarters of the short baseline's variance (as for
				// hourSpike), the verdict gives this hour's usual value
				// and spread, so that an alert on a daily cycle says what
				// this hour usually has; elsewhere the level's, which
				// follows a trend that the hour's mean lags.
				if 4*spread*spread <= a.spike.Var() {
					exp, half = b.Mean(), 3*spread
				}
				// Only a sample SpikeZ spreads from the slice's mean can
				// be a spike for this hour (hourSpike measures from the
				// nearer of two usual values), and only once the slice
				// has seen three earlier days (see hourSpikeAfter).
				if daily >= c.SpikeZ && c.SpikeZ > 0 && ts-a.first >= hourSpikeAfter {
					hourZ, hourSp = a.hourSpike(ts, x, loc, spread, b), spread
				}
				// The level's surprise is averaged with the hour's in the
				// quarter-level spread on counts too: the main likelihood
				// is the one that heavy-tailed counts (NAB's tweet
				// volumes) drive, and their hours' spread from a few dozen
				// visits is no guide to their next burst.
				mixed := daily
				if asCounts {
					mixed = dev / quarter
				}
				surprise = (surprise + minf(mixed, c.SurpriseCap)) / 2
				daily = minf(daily, c.SurpriseCap)
				// Likelihood.UpdateZ by its inlined steps. This
				// likelihood starts once the slices are known, which on
				// hourly data is days after the detector's own warm-up:
				// it judges only once it has a warm-up of its own, not
				// against a long-run distribution of one or two samples.
				//
				// Nor does it judge on the second day. On data finer
				// than the slices (a 5-minute slice is known after three
				// samples) it learns on the first day how far a sample
				// lies from the same visit's earlier ones; from the
				// second it compares samples with yesterday's, a larger
				// distance whose usual size the first day cannot tell.
				// A series rising 5 % a day with 1 % noise (1-minute)
				// lies a day's rise, five of the first day's spreads,
				// from yesterday, and such rises paged 32 times on the
				// second day of 40 series, 27 times in its first ten
				// minutes. Learnt over that day, the comparisons judge
				// from the third (TestAutoSecondDay); a short series
				// keeps its first day's judgement. The first day is
				// each slice's first visit (the slice's span a day ago
				// ended before the first sample), not the first 24
				// hours: a series that starts at 12:26 is back in the
				// 12:00 slice, comparing with yesterday, 26 minutes
				// before those are up (TestAutoFirstDayEnd).
				avg := a.dayLik.average(daily)
				if since := ts - a.first; a.dayLik.long.n >= uint64(c.WarmUp) && (since >= 2*dayMs || a.day.lastTill-dayMs <= a.first) {
					zDay = a.dayLik.z(avg)
				}
				a.dayLik.long.Update(avg)
			}
		}
		d := x - a.prev
		e := d - a.step.Loc()
		dev := math.Abs(e)
		js := maxf(a.step.Scale(), floor)
		step := dev / js
		change, changeSp = d, js
		// A jump needs dev ≥ JumpZ·js (and, on counts, dev² ≥
		// JumpZ²·2·quantum·level); only then is its size worked out. The rarely
		// true comparison comes first.
		if dev >= c.JumpZ*js && c.JumpZ > 0 && c.SpikeZ > 0 {
			jump = dev / a.jumpSpread(js, loc, asCounts) * c.SpikeZ / c.JumpZ
			repeat = a.dailyRepeat(ts, d, c.JumpZ*js)
			a.daily.add(ts, d)
		}
		// After an unusual change (stepBack of the changes' spreads or
		// more; prevDev holds its deviation, else 0) the next change
		// is measured from two samples back as well, where the series
		// was before it, whichever is smaller: a one-sample excursion
		// makes two changes, out and back, and the way back is no
		// news. Counted as a second step, it doubled an outlier's
		// evidence: on a month of white noise (ten series) the step
		// likelihood raised 8 alerts, and 2 since. The change
		// from two samples back, less the usual two changes, is this
		// change's deviation plus the previous one's. A way back so
		// measured is small and opens no way back of its own; a move
		// that goes on is as large from two samples back, counts as
		// before and may open one. Alerts on a month of clean 1-minute
		// series (ten seeds each) fell from 33 to 27 on white noise, 88
		// to 72 on a lognormal latency, 21 to 15 on a CPU share and 41
		// to 32 on Poisson counts (docs/detectors.md, "A way back is no
		// second step"; TestAutoStepWayBack).
		if a.prevDev != 0 {
			step = minf(dev, math.Abs(e+a.prevDev)) / js
		}
		a.prevDev = 0
		if step >= stepBack {
			a.prevDev = e
		}
		avg := a.stepLk.average(minf(step, c.SurpriseCap))
		if a.stepLk.long.n > 0 {
			zStep = a.stepLk.z(avg)
		}
		// EWMA.Update, in place once steady (see EWMA.learn).
		if a.stepLk.long.steady() {
			a.stepLk.long.learn(avg)
		} else {
			a.stepLk.long.Update(avg)
		}
		// Robust.Update, in place once steady (see Robust.update).
		if a.step.steady() {
			a.step.learn(a.step.clipped(d))
		} else {
			a.step.Update(d)
		}
	}
	// The least likely of the likelihoods (the level's, the time of
	// day's, the step's and, where it judges, the profile's): the largest
	// z. Its tail probability (NormalTail(z) for z > 0, 1 otherwise) is
	// worked out below, where the state says what it is needed for.
	avg := a.lik.average(surprise)
	// Likelihood.z without a check of the long run's count: before the
	// long run has one, on the first sample, surprise and so avg are 0.
	z := a.lik.z(avg)
	a.lik.long.Update(avg)
	zp := 0.0 // the day's profile's z, where it judges
	if day != nil {
		var pexp, psp float64
		zp, pexp, psp = a.prof.observe(&a.day, slot, ts, x, scale, reach, a.least, res, c.SurpriseCap, uint64(c.WarmUp))
		// Where the profile judges, it explains most of the variance,
		// and its prediction and spread are the verdict's. Its
		// likelihood then takes the place of the level's, whose surprise
		// there is mostly the day's swing.
		if psp > 0 {
			exp, half, profBand = pexp, 3*psp, true
			if e := x - pexp; e*e >= a.spikeZ2*psp*psp { // rare: no division on most samples
				profZ = math.Abs(e) / psp
			}
			z = 0
		}
	}
	// Finer than a minute, where the hour predicts this slice much
	// better than the level, the level's likelihood gives way to the
	// hour's too (see sliceFit).
	if a.fits != nil && daySp > 0 && a.hourJudges(ts, slot, x, daySp) {
		z = 0
	}
	// Which likelihood's z is the largest is a coin toss to the CPU:
	// maxZ has no branch.
	zl := z
	z = maxZ(maxZ(z, zDay), zStep)
	// Which of them it is, for the verdict's evidence, is worked out
	// only where it can matter: a likelihood scores half the threshold
	// or more only at depZ or above.
	src := EvidenceNone
	// On a metric that sits on one value, a departure is judged by how
	// often departures as large have come (see departures).
	if z >= a.depZ {
		src = likEvidence(zl, zDay, zStep)
		if a.dep.same >= 0.9 {
			z = a.dep.judge(z, math.Abs(x-a.dep.value), a.n, a.lik.long.alpha)
		}
	} else if a.dep.open {
		a.dep.open = false
	}
	// The profile's z joins after departures: it is not judged as one.
	if zp > z { // rare: zp is 0 where the profile does not judge or x is within its spreads
		src = EvidenceTimeOfDay
	}
	z = maxf(z, zp)
	// The spike path (see spikePath), whose common case, a sample within
	// the bounds, is written out here so that it makes no call.
	spike := 0.0
	spikeEv := EvidenceNone    // what the spike path's score is from
	trendP, trendV := 0.0, 0.0 // the trend's prediction and variance where it judges, else 0
	if c.SpikeZ > 0 {
		m := a.spike.Mean()
		fm := rangeFloor(m, reach, a.least, res)
		v := maxf(a.spike.Var(), fm*fm)
		n := a.spike.Count()
		// Past the warm-up the baseline learns x clipped at spikeClip
		// of its spreads, as the level learns its samples (see Robust):
		// unclipped, a burst of a dozen samples swelled its variance for
		// hundreds more and hid the next burst within the bound.
		if e := x - m; e*e > spikeClip*spikeClip*v && n >= uint64(c.WarmUp) {
			a.spike.Update(m + math.Copysign(spikeClip*math.Sqrt(v), e))
		} else if a.spike.steady() { // EWMA.Update in place (see EWMA.learn)
			a.spike.learn(x)
		} else {
			a.spike.Update(x)
		}
		// Where the series moves smoothly (a 1-minute KPI's daily
		// curve), the short baseline's spread is mostly its lag behind
		// the curve, and a dip of a fifth hides within it. There the
		// baseline carried on by its trend judges instead (see
		// trendStep): past the warm-up, where its mean squared error is
		// at most a quarter of the flat baseline's variance (the bar
		// the hour's spread must clear below), and not where the day's
		// profile judges x usual: a step the day or the week makes (a
		// weekend that starts at midnight) leaves the trend's line, but
		// the profile expects it. The hour and the daily pattern keep
		// to the flat baseline, whose lag they are there to replace.
		flatM, flatV := m, v
		if p, ms := a.trendStep(x, n); n >= uint64(c.WarmUp) && 4*ms <= v && (!profBand || profZ > 0) {
			fp := rangeFloor(p, reach, a.least, res)
			m, v = p, maxf(ms, fp*fp)
			trendP, trendV = p, v
		}
		d := x - m
		out := d*d >= a.spikeZ2*v
		if a.run > 0 {
			a.excursion(x, out, jump)
		}
		// The hour's baseline judges only where it is at most half as
		// wide as the short baseline (see hourSpike).
		if hourZ > 0 && 4*hourSp*hourSp > flatV {
			hourZ = 0
		}
		// Where the day's profile judges, a sample SpikeZ of its
		// spreads from it is a spike for the profile as a sample far
		// from the hour's usual value is for the hour, but only if it
		// left the profile in one step (its change from the previous
		// sample at least half its distance from the prediction, exp
		// here): a value that drifted there, or a prediction that steps
		// at a slice's edge on a series whose day is no curve (a memory
		// sawtooth), is none. On a 1-minute KPI the short baseline lags
		// the curve and the hour's slice holds the curve's swing within
		// the hour, so neither sees a two-minute surge of a fifth.
		if profZ > 0 && 4*change*change >= (x-exp)*(x-exp) {
			hourZ = maxf(hourZ, profZ)
		}
		if (out || jump >= c.SpikeZ || hourZ >= c.SpikeZ) && n >= 2 {
			// The spread of changes a jump is measured in, for the
			// excursion's bound and the daily pattern's change.
			js := a.jumpSpread(changeSp, loc, asCounts)
			spike, spikeEv = a.spikePath(m, d, v, jump, c.JumpZ*js, hourZ, out, slot)
			// A move the daily pattern makes scores nothing, but its
			// excursion is followed as any other. The profile, the finer
			// of the two daily patterns, overrules: where it puts x
			// SpikeZ spreads away, x is no move of the pattern.
			if spike > 0 && profZ == 0 && a.patterned(ts, x, flatM, daySp, change, js, day) {
				spike = 0
			}
			// Nor is a step the day repeats at this time of day, nor
			// the rest of its excursion (see dailyStep).
			if a.dailyStep(ts, x, m, change, changeSp, c.JumpZ*js, jump == 0, repeat) {
				spike = 0
			}
			// Nor is a value the profile expects, within 2 of its
			// spreads of its prediction (half is 3 of them here), however
			// far it lies from the short baseline: the day's usual step
			// back after a day without it (the hour's slices, widened by
			// that day, no longer call the step usual), or a memory
			// share in the hours after a restart, which each new hour's
			// slice still calls low while the profile's offset has
			// followed the drop. A value inside the verdict's band that
			// paged would be explained as normal.
			if spike > 0 && profBand && 9*(x-exp)*(x-exp) <= 4*half*half {
				spike = 0
			}
			// A jump within the bound that would alert is counted once
			// per excursion, and where such jumps have come more often
			// than crossings may (SpikeRate, one earlier allowed), it is
			// the series' routine and scores nothing: a queue or a heap
			// that climbs and drops back every 35 to 45 samples paged at
			// every drop, its drops' excursions too long to count as
			// crossings and too irregular for the schedule. A first
			// drop, and a second, still page.
			if spike >= c.Threshold && !out && hourZ < c.SpikeZ {
				if a.routine(a.jumps) {
					spike = 0
				}
				if a.run == 1 { // the excursion began with this sample
					a.jumps++
				}
			}
		}
	}
	// Where the trend judged and the day's profile does not, the
	// verdict gives the trend's prediction and band when that band is
	// the narrower: on a KPI's first day a dip the trend pages read
	// "expected 820 (normal 259 to 1382)" for a value of 757, the lagging
	// level's, and now reads what the curve led to.
	//
	// Which band is the narrower is a coin toss to the CPU on a smooth
	// curve, so the choice is made with a mask that a conditional move
	// sets, not a branch (as in Likelihood.z).
	if trendV > 0 && !profBand {
		h := 3 * math.Sqrt(trendV)
		take := uint64(0)
		if h < half {
			take = math.MaxUint64
		}
		exp = math.Float64frombits(math.Float64bits(exp)&^take | math.Float64bits(trendP)&take)
		half = math.Float64frombits(math.Float64bits(half)&^take | math.Float64bits(h)&take)
	}
	if x == a.prev {
		// The value a departure is measured from is the one the metric
		// repeats while its likelihoods are calm (within one standard
		// deviation): a burst that repeats its own value is no such.
		if z == 0 {
			a.dep.value = x
		}
		// A run of repeats: how long it is, against how long runs are
		// on this series (see frozen). A freeze keeps the episode it
		// opened from ending while it lasts.
		if a.frz.run == 0 { // the share without the change that began the run (see frozen)
			a.frz.share = float32(min(1, a.dep.same/(1-a.level.alpha)))
			if a.n <= uint64(c.WarmUp) { // not learnt yet: no freeze
				a.frz.share = 1
			}
		}
		if a.frz.run++; a.frz.run >= a.frzLeast {
			step := a.interval
			if a.noClock || a.synthStep > 0 { // no times to measure the run in
				step = 0
			}
			if fz := a.frz.score(ts, a.first, a.n, a.bound(x), a.frzLeast, step, c.FrozenRuns, a.alertP); fz > 0 {
				if fz >= spike {
					spike, spikeEv = fz, EvidenceFrozen
				}
				if a.quiet > 0 {
					a.quiet = max(a.quiet, c.Quiet)
				}
			}
		}
		a.dep.same += a.level.alpha * (1 - a.dep.same)
	} else {
		if a.frz.run > 0 {
			if a.offLattice && a.chg.observe(x, a.prev) {
				a.fitFloor() // the reading's resolution (see resolution)
			}
			a.frz.end(a.n, a.prev == 0)
		}
		if a.dep.same > 0x1p-20 {
			// Far below the 0.9 that matters the share stops falling:
			// on a metric that never repeats it would reach the
			// denormal numbers, whose arithmetic is many times slower.
			a.dep.same -= a.level.alpha * a.dep.same
		}
	}
	// A scheduled job does not alert (see schedule). Its starts match
	// to within the time since the previous sample.
	if z >= a.depZ || spike > 0 {
		if !a.sch.open {
			a.sch.begin(ts)
		}
		if !a.sch.checked && (z >= a.alertZ || spike >= c.Threshold) {
			step := ts - a.prevTs
			a.sch.check(step, int64(c.Calm)*step)
		}
		if a.sch.muted {
			z, spike = 0, 0
		}
	} else if a.sch.open {
		a.sch.open = false
	}
	// Only a record can be a new extreme; most samples are none and
	// skip the rest. Records are judged here, after the spike path and
	// before the level and the slices learn x: the call to extreme
	// costs the samples that skip it register moves and spills, fewer
	// where fewer values are live.
	//
	// A value beyond the highest (or lowest) sets it. Where the
	// level carried it there, as an ordinary sample on a rising
	// series, it lies no further from the level than the old one
	// did, and the bar keeps the old one's distance. Reset to the
	// sample's own, every sample a little above the level set the
	// bar again, and the next few-sigma noise beat it: a rise of
	// 2 % a day with 1 % noise paged 131 times in 140 series-days,
	// against 31 for the noise alone, and now about as often as
	// the noise alone (see TestAutoRecordsOnRise). On a positive
	// series the distance kept is a ratio (x/locHi as hi/locHi
	// was): there noise grows with the level (latencies, rates),
	// and a difference kept from a lower level is too low a bar at
	// a higher one. The bar is reset to the sample's distance, as
	// before, while records do not count yet (the level is not
	// settled), and where the old value was set within an episode:
	// its distance was measured from a level lagging the
	// incident's step, and is no bar for the next incident
	// (hourly_shifts).
	if a.wild.side != 0 { // rare: the sample after a glitch-sized record
		a.glitch(x)
	}
	if x > a.hi || x < a.lo {
		// The trend-carried level and the scale as at the start (the
		// level has not learnt x yet), worked out again rather than
		// kept in registers all the way here.
		floor := rangeFloor(loc, a.floorReach(loc), a.least, res)
		now, scale := loc+a.lag*a.slope, maxf(a.level.Scale(), floor)
		extreme = a.extreme(ts, x, loc, floor, scale, math.Abs(x-now)/scale, day)
		counts := a.recordsCount(ts)
		// A record more than glitchSpans of the range beyond the bar
		// may be a glitch: the bar it replaces is kept for the next
		// sample to decide (see glitch). So is a drop to 0 on a series
		// that keeps well away from it, until the series leaves 0.
		zero := x <= 0 && a.lo > 0 && a.lo > zeroRanges*(a.hi-a.lo) && (a.zeroAt == 0 || ts-a.zeroAt > zeroGap)
		if x <= 0 && a.lo > 0 {
			a.zeroAt = ts
		}
		if far := glitchSpans * (a.hi - a.lo); counts && a.wild.side == 0 && (x-a.hi > far || a.lo-x > far || zero) {
			if x > a.hi {
				a.wild = bar{a.hi, a.locHi, a.hiEp, 1, false, 0, a.hiRun}
			} else {
				a.wild = bar{a.lo, a.locLo, a.loEp, -1, zero, 0, a.loRun}
			}
		}
		if x > a.hi {
			if !counts || a.hiEp {
				a.locHi = loc
			} else if a.lo > 0 && a.locHi > 0 {
				a.locHi = min(loc, x*(a.locHi/a.hi))
			} else {
				a.locHi = min(loc, x-(a.hi-a.locHi))
			}
			a.hiEp = a.quiet > 0
			a.hiRun = a.hiRun && extreme == 0 // still a short history's, unless it counted
			a.slowHi = a.slow
		}
		if x < a.lo {
			if !counts || a.loEp {
				a.locLo = loc
			} else if x > 0 && a.lo > 0 {
				a.locLo = max(loc, x*(a.locLo/a.lo))
			} else {
				a.locLo = max(loc, x+(a.locLo-a.lo))
			}
			a.loEp = a.quiet > 0
			a.loRun = a.loRun && extreme == 0 // still a short history's, unless it counted
		}
		a.lo, a.hi = min(a.lo, x), max(a.hi, x)
		a.fitFloor()
	}
	a.prev, a.prevTs = x, ts
	if a.level.steady() {
		a.level.learn(a.level.clipped(x))
		// The slope is learnt once the level is steady: before, it moves
		// by a share of each sample that is no trend.
		a.slope += a.slopeAlpha * (a.level.Loc() - loc - a.slope)
	} else {
		a.level.Update(x)
		if a.level.steady() && day != nil {
			a.anchorOffsets()
		}
	}
	// The slow level, and the records' bar after a lasting fall (see
	// fall.go). Until the warm-up is over slowAlpha is 0, and so is the
	// slow level.
	a.slow += float64(a.slowAlpha) * (loc - a.slow)
	if a.slow < fallShare*a.slowHi && a.lo > 0 {
		a.fall()
	}
	if day != nil {
		// EWMA.Update, in place once steady (see EWMA.learn).
		if day.steady() {
			day.learn(x)
		} else {
			day.Update(x)
		}
		// offset.update, written out for a steady slice (past its equal
		// weights and MinDayVisits) and a deviation within the clip.
		o := &a.offset[slot]
		if e := x - loc - o.mean; day.n >= a.offsetSteady && e*e <= offsetClip*offsetClip*o.vr {
			o.mean += day.alpha * e
			o.vr = day.beta * (o.vr + e*day.alpha*e)
		} else {
			o.update(x-loc, day, a.minVisits)
		}
	}

	if a.cycle != nil && a.n > uint64(c.WarmUp)+1 { // a series without a clock, searched for a cycle
		a.searchCycle(x)
	}

	// The verdict is kept and returned field by field from locals: a
	// Verdict built in memory and copied is read back in 16-byte moves
	// right after its 8- and 1-byte stores, which stalls the CPU (no
	// store forwarding) about as long as the rest of this function.
	score, state := 0.0, StateNormal
	switch {
	case a.n <= uint64(c.WarmUp):
		state = StateWarmingUp
	case a.quiet > 0:
		// An episode: no new alert starts until the series has been calm
		// for Calm samples. State is anomalous while the anomaly lasts,
		// i.e. while the score stays at or above half the threshold
		// (hysteresis: an alert needs the threshold, staying anomalous
		// half of it), so that a rule's `for:` sees the incident last and
		// resolves with it. The score is the sample's own while anomalous
		// and 0 otherwise, and 0 on a sample that turns anomalous again
		// within the episode: that is no new alert.
		a.quiet--
		p := 1.0
		if z > 0 {
			p = NormalTail(z)
		}
		if p > a.calmP && extreme == 0 && spike < c.Threshold/2 {
			a.calm++
		} else {
			state = StateAnomalous
			if a.last.State == StateAnomalous {
				score = scoreOf(p, extreme, spike)
			}
			a.calm = 0
		}
		if c.Calm > 0 && a.calm >= c.Calm {
			a.quiet = 0
		}
	case z < a.peakZ && extreme == 0 && spike == 0:
		// A likelihood that scores below the excursion's peak is no new
		// peak and reports 0 (see belowThreshold); only its side of half
		// the peak counts, which z tells without the tail probability
		// except within the bounds' margin. Below half the peak, or with
		// no likelihood in the tail (z = 0, where peakZ > 0), the sample
		// counts towards the calm as a score of 0 would (calmSample;
		// runPeak > 0 where peakZ is not 0); at or above it the calm
		// ends. The calm samples of an excursion take this case whether
		// or not a likelihood is in the tail, which the CPU cannot
		// predict.
		switch {
		case z < a.halfLo || z == 0:
			a.calmSample()
		case z > a.halfHi:
			a.runCalm = 0
		default:
			a.belowThreshold(scoreZ(z, 0, 0))
		}
	default:
		score = maxf(extreme, spike)
		if z > 0 {
			score = scoreZ(z, extreme, spike)
		}
		if score >= c.Threshold {
			state = StateAnomalous
			a.quiet, a.calm = c.Quiet, 0
			a.remember(ts, floor)
			a.setRunPeak(0)
			a.runCalm = 0
		} else if score > 0 {
			score = a.belowThreshold(score)
		} else if a.runPeak > 0 {
			a.calmSample()
		}
	}
	ev := EvidenceNone
	if score > 0 { // rare
		ev = evidenceOf(score, extreme, spike, spikeEv, src)
		if ev == EvidenceRecord && a.wild.zero { // the drop itself: its zeros are held
			ev = EvidenceZero
		}
	}
	// A metric that has never been negative (a count, a rate, a queue
	// length, a share) is not expected below 0, nor is its normal band:
	// a tweet count's band read "normal -24 to 147". Where the band
	// reaches below 0 it is cut there, and so is a trend's prediction.
	lower, upper := exp-half, exp+half
	if lower < 0 && a.lo >= 0 {
		lower, exp, upper = 0, max(exp, 0), max(upper, 0)
	}
	dir := direction(x, exp)
	l := &a.last
	ep := a.quiet > 0                        // the episode this sample opened or continued has not ended
	sh := a.reg.side != 0 && !a.reg.hourOnly // a run beyond the estimates from before it (see regime)
	lg := a.mem.lingering
	l.Score, l.Expected, l.Lower, l.Upper, l.Direction, l.State, l.Evidence, l.Episode, l.Shifted, l.Lingering = score, exp, lower, upper, dir, state, ev, ep, sh, lg
	v.Score, v.Expected, v.Lower, v.Upper, v.Direction, v.State, v.Evidence, v.Episode, v.Shifted, v.Lingering = score, exp, lower, upper, dir, state, ev, ep, sh, lg
	return v
}

// bound reports whether x, a value seen before, is one the series rests
// at rather than a freeze (see frozen): 0, or the highest or lowest value
// seen.
func (a *Auto) bound(x float64) bool { return x == 0 || x == a.hi || x == a.lo }

// likEvidence says which likelihood's z is the largest: the level's
// (zl, 0 where the profile judges), the time of day's (zDay) or the
// step's (zStep).
func likEvidence(zl, zDay, zStep float64) Evidence {
	switch {
	case zStep > zl && zStep > zDay:
		return EvidenceChanges
	case zDay > zl:
		return EvidenceTimeOfDay
	}
	return EvidenceLevel
}

// evidenceOf is the evidence for a positive score. A new extreme that
// counts (extreme > 0) is named whatever else scored: a value beyond any
// seen says most. Otherwise it is the spike path's (spikeEv) or the
// likelihoods' (src), whichever gave the score: the score is the larger
// of the two, so it equals the one it came from. src is EvidenceNone for
// a likelihood below depZ, whose score is below half the threshold:
// which one it was is not worked out there.
func evidenceOf(score, extreme, spike float64, spikeEv, src Evidence) Evidence {
	switch {
	case extreme > 0:
		return EvidenceRecord
	case score == spike:
		return spikeEv
	}
	return src
}

// belowThreshold returns the score to report for a sample scoring below
// the threshold: the score if it is the highest since the series was
// last calm, else 0. Above the threshold an episode gives one alert per
// incident; this gives the same below it, so that a stricter or looser
// threshold than the detector's own (a rule's, or one optimised on a
// user's data by `seismo bench nab`) sees a rising excursion at its first
// crossing and not again on every sample that follows. The excursion
// ends once the score has stayed below half its peak for Calm samples.
func (a *Auto) belowThreshold(score float64) float64 {
	out := 0.0
	if score > a.runPeak {
		a.setRunPeak(score)
		out = score
	}
	if score < a.runPeak/2 {
		a.runCalm++
	} else {
		a.runCalm = 0
	}
	if a.runCalm >= max(a.cfg.Calm, 1) {
		a.setRunPeak(0)
		a.runCalm = 0
	}
	return out
}

// calmSample is belowThreshold(0) where there is a peak (runPeak > 0):
// the sample only counts towards the excursion's calm. It is small
// enough to be inlined, so that most samples below the threshold make
// no call.
func (a *Auto) calmSample() {
	a.runCalm++
	if a.runCalm >= max(a.cfg.Calm, 1) {
		a.setRunPeak(0)
		a.runCalm = 0
	}
}

// setRunPeak sets runPeak and the likelihood z's that bound its score
// from below and around half of it. The bounds come from peakZs, the z
// whose score is k/1024 for each k: the entries on the safe side of the
// peak and of its half, moved by a further margin of 1e-6 (relative, and
// at least absolute). The score changes by some 1e-7 across the margin,
// far above the rounding of the functions the bounds stand in for, so
// that a sample scores the same with or without them; the entries cost a
// band of 1/1024 of score in which a sample still works its score out
// (TestAutoPeakBounds checks the bounds against those functions). With no
// peak (0), or one above 0.9, no z is below peakZ: above 0.9 the tail
// probability is within ten times LogTailScore's offset of 1e-10, and
// inverting it loses the precision the margin needs. Nor is there one
// for a peak at or above the threshold (never set by Observe), since a
// score below such a peak could still alert.
func (a *Auto) setRunPeak(s float64) {
	a.runPeak = s
	if !(s > 0 && s <= 0.9 && s < a.cfg.Threshold) {
		a.peakZ, a.halfLo, a.halfHi = 0, 0, 0
		return
	}
	peak := peakZs[int(s*peakSteps)]
	lo, hi := peakZs[int(s/2*peakSteps)], peakZs[int(math.Ceil(s/2*peakSteps))]
	a.peakZ = peak - 1e-6*(1+math.Abs(peak))
	a.halfLo, a.halfHi = lo-1e-6*(1+math.Abs(lo)), hi+1e-6*(1+math.Abs(hi))
}

// peakSteps is the resolution of peakZs in score.
const peakSteps = 1024

// peakZs[k] is the z whose LogTailScore(NormalTail(z)) is k/peakSteps,
// for scores from 0 to 0.9.
var peakZs = func() []float64 {
	zs := make([]float64, 922) // 0.9 × peakSteps is 921.6
	for k := range zs {
		s := float64(k) / peakSteps
		zs[k] = NormalTailZ(math.Exp(s*logTiny) - 1e-10)
	}
	return zs
}()

// scoreOf is the sample's score: the largest of the likelihood's (from the
// tail probability p), the new extreme's and the spike path's. It is
// small enough to be inlined, so that most samples (p = 1, whose
// LogTailScore is 0) make no call.
func scoreOf(p, extreme, spike float64) float64 {
	if p < 1 {
		return scoreTail(p, extreme, spike)
	}
	return maxf(extreme, spike)
}

// scoreTail is scoreOf for p < 1, kept out of line.
//
//go:noinline
func scoreTail(p, extreme, spike float64) float64 {
	return maxf(maxf(extreme, spike), LogTailScore(p))
}

// scoreZ is scoreOf(NormalTail(z), extreme, spike) for z > 0 in one call
// out of line, so that Observe spills its values once, not around a call
// for the tail probability and another for its logarithm.
//
//go:noinline
func scoreZ(z, extreme, spike float64) float64 {
	s := maxf(extreme, spike)
	if p := NormalTail(z); p < 1 {
		s = maxf(s, LogTailScore(p))
	}
	return s
}

// maxZ is max for likelihood z-values, which are +0 or positive and
// never NaN (see Likelihood.z): for such operands the bit patterns order
// as the values do, and their integer max is a conditional move, not a
// branch. It takes fewer instructions than the builtin max, which also
// orders NaN and -0.
func maxZ(a, b float64) float64 {
	return math.Float64frombits(max(math.Float64bits(a), math.Float64bits(b)))
}

// maxf and minf are max and min for operands that are never NaN and never
// zeros of opposite signs, as in Observe (distances, scales, scores and
// their floors): one comparison instead of the builtins' extra work to
// order NaN and -0.
func maxf(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

func minf(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// extreme returns the new-extreme score of x, a record, judged before the
// record is learnt: 0 unless the range is established, x beats the
// record by the tolerance and by as much as the level has moved towards
// it since it was set, and x is surprising (see recordZ): against the
// usual value at this hour once the time of day's slice is known, and
// against the level before. On a daily cycle, even one that grows with a
// trend, the peak hour's noise beats the record by a hair every few days
// where that hour, relative to the level, has been before. That is no
// news. Once the slice is known, the level no longer judges: on a strong
// daily cycle its spread is the cycle's, so a night-time outage that sets
// a record low lies within 1.5 σ of the level however far it is below
// what the night usually has.
//
// Nor is a record that noise sets. In a series of independent samples
// the nth is a record with probability 1/n, so two weeks of 1-minute
// white noise set about five records after the first day, each three
// and a half to four and a half spreads out, and each paged. A record
// within the normal band (recordBand spreads of the usual value) still
// counts: the usual value itself has come near the extreme, so the
// series as a whole has moved, which noise does not do. Beyond the band
// a record counts only past noiseReach(n), the distance noise at this
// spread reaches once in four histories of the n samples the record
// beats. Records on two weeks of white noise then page 25 times where
// they paged 60 (twenty seeds; TestAutoRecordsOnNoise), and NAB has
// three false alarms fewer and no window lost.
func (a *Auto) extreme(ts int64, x, loc, floor, scale, levelZ float64, day *EWMA) float64 {
	c := &a.cfg
	tol := c.ExtremeTolerance * (a.hi - a.lo)
	if c.ExtremeTolerance >= 0 && a.recordsCount(ts) && (x > a.hi+tol+max(0, loc-a.locHi) || x < a.lo-tol-max(0, a.locLo-loc)) {
		z, noiseZ := a.recordZ(ts, x, loc, floor, scale, levelZ, day)
		run := x > a.hi && a.hiRun || x < a.lo && a.loRun
		if z < extremeMinZ || (z >= recordBand || run) && noiseZ < noiseReach(a.n) {
			return 0
		}
		// Graded by how far the record is beaten, in robust standard
		// deviations: the threshold when barely, 0.999 from SurpriseCap
		// on. Every new extreme alerts; ranking them lets a stricter
		// threshold keep the clear ones.
		beyond := max(x-a.hi-max(0, loc-a.locHi), a.lo-x-max(0, a.locLo-loc)) / scale
		return c.Threshold + (0.999-c.Threshold)*min(beyond/c.SurpriseCap, 1)
	}
	return 0
}

// bar is a record's bar as glitch keeps it: the highest (side 1) or
// lowest (side -1) value, the level it is measured from and whether it
// was set in an episode; side 0 when none waits for the next sample's
// verdict. zero is whether the record was a drop to 0, which waits for
// the first sample above 0 instead, and held the samples at 0 since.
type bar struct {
	v, loc float64
	ep     bool
	side   int8
	zero   bool
	held   uint64
	run    bool // a regime's run's extreme (see Auto.hiRun)
}

// glitch decides, on the sample x after a record that lay more than
// glitchSpans of the range beyond the bar it beat, whether that record
// stands. If x is back within the old bar, the record was one sample
// wide: a glitch (a misread counter, a unit slip, a scrape that
// returned garbage), and the old bar is restored, as is the range the
// floors are measured in. Kept, one wild value ended records for good:
// nothing the series did later came near it. NAB with one value ten
// times each file's largest put in its first half (outside the
// windows) scored 57.95, 15 windows lost, most of them found by
// records; with glitch, 71.80, every window found and the wild values'
// own pages the difference (74.22 without them;
// TestAutoGlitchKeepsRecords). A record that far out which holds for
// two samples is a new bar. On a heavy-tailed series a sample ten
// ranges beyond its largest is a glitch to this rule too, and the
// spikes after it can set records again: heavy_latency lost 0.1 to 0.8
// (docs/detectors.md, "One wild value").
//
// A drop to 0 (or below) on a series whose lowest value lies more than
// zeroRanges of its range above 0 is judged the same way, on the first
// sample above 0 however long the zeros last (up to a day): a restart,
// or missing data written as 0, reads 0 for as long as it lasts. The
// zeros after the first are held as missing samples are (see
// holdZero). Kept, the bar at 0 ended low records for good on such a
// series. NAB with its values set to 0 for one, three, twelve or a
// hundred rows from a third of each file on (`--probe zero=N`) scored
// 70.92, 70.58, 66.32 and 65.87, two windows lost with one or three
// zeros that low records had found; with this, 73.37, 73.18, 70.46 and
// 66.88, none lost with one or three (docs/detectors.md, "A drop to
// 0").
func (a *Auto) glitch(x float64) {
	b := &a.wild
	switch {
	case b.side > 0 && x < b.v:
		a.hi, a.locHi, a.hiEp, a.hiRun = b.v, b.loc, b.ep, b.run
	case b.side < 0 && x > b.v:
		a.lo, a.locLo, a.loEp, a.loRun = b.v, b.loc, b.ep, b.run
	}
	*b = bar{}
	a.fitFloor()
}

// holdZero counts a sample at 0 after a drop that glitch judges and
// reports whether it is held: learnt by nothing, as a missing sample,
// for a day's samples at most. Learnt, twelve zeros swelled the hour's
// slice and the likelihoods' long runs for weeks: NAB with twelve rows
// at 0 scored 68.52, held 70.46. A series at 0 for a day is at 0: the
// drop stands as the bar, and the estimates learn the zeros from then
// on (a new regime a day later).
func (a *Auto) holdZero() bool {
	a.wild.held++
	return a.wild.held < uint64(dayMs/max(a.interval, 1))
}

// glitchSpans is how many of the range a record must lie beyond the bar
// it beats for glitch to judge it. NAB scores the same at 10; at 5 it
// lost 0.76 (17 false alarms more), records beyond the bar by 5 to 10
// ranges that NAB's series repeat.
const glitchSpans = 10

// zeroRanges is how far above 0, in ranges (highest less lowest value),
// a series' lowest value must lie for a drop to 0 to be judged as a
// glitch. NAB's zero probes score the same from 0 to 0.5 (73.32 to 73.37
// with one zero) and less from 1 on (72.56; 70.92 at 4, as without).
// At 0 a ratio that is often near 0 (crash_rate, crash_ratio) lost 0.2
// to 3.1: its first 0 was judged a glitch, the bar put back, and every
// 0 after was a record again. At 0.5 no family moves.
const zeroRanges = 0.5

// zeroGap is how long a series must not have fallen to 0 for a drop to
// 0 to be judged as a glitch: a week and a day, the longest cycle auto
// models and a day's leeway. A series that falls to 0 again within it
// reads 0 as part of its life (a nightly or weekly maintenance window,
// restarts at every deploy), and its zeros are learnt as the series':
// held and put back every time, a nightly half hour at 0 paged every
// night (157 alerts over ten seeds' 21 days, against 37 with the zeros
// learnt; TestAutoNightlyZeros).
const zeroGap = 8 * dayMs

// noiseReach is the distance, in spreads, that n independent Gaussian
// samples pass with probability recordNoiseOdds (n × tail = odds): 3.6
// spreads after a day of 1-minute samples, 4.2 after two weeks, 3.2
// after two weeks of hourly ones.
func noiseReach(n uint64) float64 {
	return NormalTailZ(recordNoiseOdds / float64(max(n, 1)))
}

// recordsCount reports whether new extremes count at ts: after
// ExtremeAfter samples and, with DayBuckets on, a whole day (see
// ExtremeAfter).
func (a *Auto) recordsCount(ts int64) bool {
	return a.n > uint64(a.cfg.ExtremeAfter) && (a.cfg.DayBuckets == 0 || a.noClock || ts-a.first >= dayMs)
}

// spikePath returns the spike path's score for x: the plain z-score's
// score beyond SpikeZ (or, for a jump, the jump's, in the same units), 0
// within it or while the series' crossings exceed 1 + SpikeRate ×
// samples, or those that began in this time-of-day slice (slot) 1 +
// SpikeRate × the slice's samples (see hourRoutine). A crossing counts once per excursion, when it ends (see
// excursion), and only for a short one: a level shift or an outage of
// many samples is no evidence of a heavy tail, and a series whose
// incidents recur must keep paging for them. Crossings count only after
// the warm-up. One earlier crossing is allowed whatever the length,
// since one event is no rate: on a short series the first incident must
// not mute the second. Within the bounds (most samples) the path costs
// one EWMA update and two comparisons.
//
// Observe has already learnt x, computed its distance d from the mean m
// before and the variance v it is judged by, and found it beyond the
// bound (out), a jump (whose least step is jumpBound) or a spike for
// its hour (hourZ, see hourSpike). An excursion seen only against the
// hour's baseline is muted by the crossings but does not count as one: a slice's spread comes from a few
// dozen visits, and after a shift the slices lag the level for days, so
// such crossings would mute the spike path where its own baseline has
// seen nothing unusual.
func (a *Auto) spikePath(m, d, v, jump, jumpBound, hourZ float64, out bool, slot int) (float64, Evidence) {
	c := &a.cfg
	z, ev := jump, EvidenceChanges
	if hourZ > z {
		z, ev = hourZ, EvidenceTimeOfDay
	}
	if out {
		if dz := math.Abs(d) / math.Sqrt(v); dz > z {
			z, ev = dz, EvidenceSpike
		}
	}
	s := 0.0
	seen := a.n - min(a.n, uint64(c.WarmUp))
	if !a.routine(a.crossings) && !a.hourRoutine(slot) {
		s = zScore(z)
	}
	if a.run == 0 {
		a.exSlot = slot
		a.run, a.counts = 1, seen > 0 && (out || jump >= c.SpikeZ)
		a.exMean, a.exVar = m, v
		if !out && jump >= c.SpikeZ {
			// A jump within the short baseline's bound: the excursion
			// lasts while samples stay a jump (jumpBound) from the sample
			// before it, so that a step that stays is a long excursion.
			a.exMean, a.exVar = a.prev, jumpBound*jumpBound/a.spikeZ2
		}
	}
	return s, ev
}

// routine reports whether count excursions of the spike path since the
// warm-up (or, after a new regime, since its run began: see
// regimeStep) are more than it allows, SpikeRate of the samples seen
// since and one more (one event is no rate): excursions that come that
// often are the series' routine, not news.
func (a *Auto) routine(count uint64) bool {
	seen := a.n - min(a.n, max(uint64(a.cfg.WarmUp), a.rateFrom))
	return float64(count) > 1+a.cfg.SpikeRate*float64(seen)
}

// hourRoutine reports whether the spike path's crossings that began in
// this time-of-day slice are more than it allows, SpikeRate of the
// samples the slice has seen and one more: routine's rule for the whole
// series, applied where the crossings come at one time of day. A queue
// that forms only at the busy hours, or a percentile that crosses a
// histogram bucket's bound only at one hour's traffic, steps out of its
// bounds about once a day at that hour. Under the series' rate (one in
// a thousand samples, 1.4 a day at 1 minute) it paged every day
// (TestAutoHourRoutine). A slice has a DayBuckets-th of the samples,
// so there a third crossing is routine for weeks. Without time-of-day
// slices it is false.
func (a *Auto) hourRoutine(slot int) bool {
	if a.hourCrossings == nil || a.noClock {
		return false
	}
	return float64(a.hourCrossings[slot]) > 1+a.cfg.SpikeRate*float64(a.day.buckets[slot].Count())
}

// trendStep returns the prediction of x by the spike path's baseline
// carried on by its trend, and the mean squared error of its predictions
// before x, then learns x; n is the number of samples before x. This is
// Holt's linear method: a level with the short baseline's smoothing (on
// data coarser than a minute, its span of time: see fitTrend), whose
// change per sample the slope averages over ShortHalfLife samples.
// The errors are averaged with the short baseline's weights, the first
// sample's (0: it sets the level, see Observe) included.
func (a *Auto) trendStep(x float64, n uint64) (p, ms float64) {
	p, ms = a.trendLevel+a.trendSlope, a.trendErr
	e := x - p
	w := a.spike.alpha
	if n < a.spike.startUntil {
		w = 1 / float64(n+1)
	}
	a.trendErr += w * (e*e - ms)
	a.trendLevel = p + a.trendAlpha*e
	a.trendSlope += a.trendGain * e
	return p, ms
}

// excursion follows the spike path's excursion with x, the next sample
// (out: beyond the short baseline's bound; jump: its step, as in
// Observe). The excursion lasts while samples stay beyond the bound its
// first sample crossed, measured from the baseline as it was then: the
// baseline itself widens within a few samples of an outage, which would
// make every outage look short. An excursion that began as a jump within
// that bound lasts while samples stay a jump from the sample before it,
// so that a step that stays (a daily schedule's) is a long excursion,
// not a spike that ended on its second sample. It ends on the first
// sample back within that bound, unless the sample is a jump (the way back from a spike is
// part of it); it counts as a crossing if it may (it began beyond the
// bound or as a jump, after the warm-up) and lasted at most shortRun
// samples. A longer one ends, uncounted, once a sample is within the
// current baseline's bound as well, so that a lasting shift does not
// keep the path from counting the spikes that follow it.
func (a *Auto) excursion(x float64, out bool, jump float64) {
	if jump >= a.cfg.SpikeZ {
		a.run = min(a.run+1, a.shortRun+1)
		return
	}
	e := x - a.exMean
	switch {
	case e*e < a.spikeZ2*a.exVar:
		if a.counts && a.run <= a.shortRun {
			a.crossings++
			if a.hourCrossings != nil {
				a.hourCrossings[a.exSlot]++
			}
		}
		a.run, a.counts = 0, false
	case a.run > a.shortRun && !out:
		a.run, a.counts = 0, false
	default:
		a.run = min(a.run+1, a.shortRun+1)
	}
}

// jumpSpread is the spread of changes a jump is measured in: js, the
// robust spread of the series' changes, but on counts (whole numbers
// that are no gauge; see gauge) at least that of the difference of two
// Poisson counts at level loc, √(2 × level) in the counts' unit
// (quantum; see lattice.go), so that the first few errors on a series
// of zeros are no jump of infinite size.
func (a *Auto) jumpSpread(js, loc float64, counts bool) float64 {
	if pf := 2 * a.quantum * max(loc, 0.5*a.quantum); counts && js*js < pf {
		return math.Sqrt(pf)
	}
	return js
}

// gauge reports whether a series of whole numbers at level loc is a
// gauge that happens to be whole (goroutines, connections, a size in
// bytes or in whole seconds) rather than a count: past the warm-up,
// where the level is gaugeCounts of its units or more, its changes'
// robust spread squared is less than a gaugeDispersion-th of that of
// the difference of two Poisson counts at the level (2 × level). A
// count varies at least as much as Poisson noise; at 20 units and more
// the robust spread measures that noise to well within a factor of 10,
// where on sparser counts (mostly 0, a 1 now and then) it reads a
// fraction of it.
//
// On a gauge the count model's floors are far above its noise, and
// they hold the time of day's surprise near 0: its likelihood learns a
// long run with next to no spread and pages on ordinary moves (as the
// floor at the magnitude did on a gauge with an offset; see
// rangeFloor). A 1-minute gauge of whole numbers around 50 with noise
// 1 paged 30 times in ten seeds' two weeks, 19 of them by the time of
// day; as a gauge, 22 and 11 (TestAutoWholeNumberGauge).
//
// Below 20 units a whole number that sits on one value (nine samples in
// ten repeat the one before, as departures reads it) at a level of a
// unit or more is a gauge too: a count of replicas, of workers, of
// targets up. Poisson counts at a level λ repeat their last value with
// probability e^(−2λ)·I₀(2λ), 0.31 at one unit and less above, so they
// cannot. Sixteen such gauges around 5, stepping by one every few hours
// for two weeks, paged 410 times as counts (`zscore` about as often),
// each step a spike to a short baseline that had not moved for hours;
// as gauges, whose unit is their resolution (see resolution), 79
// (TestAutoReadingResolution). Sparser series, a count of errors that
// is 0 for hours, stay counts.
func (a *Auto) gauge(loc float64) bool {
	if a.n <= uint64(a.cfg.WarmUp) {
		return false
	}
	if a.dep.same >= 0.9 && loc >= a.quantum {
		return true
	}
	s := a.step.Scale()
	return loc >= gaugeCounts*a.quantum && gaugeDispersion*s*s < 2*a.quantum*loc
}

// gaugeCounts and gaugeDispersion are gauge's bounds: the level, in
// units, from which the changes' robust spread tells a gauge from a
// count, and how many times less than Poisson noise's variance a
// gauge's changes have. Poisson counts of 50 read as counts throughout
// from a dispersion of 2 (TestAutoWholeNumberGauge). At 10 NAB and the
// families score as before within 0.2 (NAB 74.23 → 74.22: a speed in
// whole miles an hour, a gauge now, found a window a sample later; the
// mean over twelve clock shifts 71.05 → 71.04); at 4 the tweet
// volumes' quiet hours read as gauges now and then, and the mean over
// shifts fell to 70.52.
const (
	gaugeCounts     = 20
	gaugeDispersion = 10
)

// patterned reports whether x, a sample the spike path would score, is
// what the daily pattern makes of this time of day, so that it is no
// spike however far it lies from the short baseline or however large
// its step. Three things must hold, once a whole day has been seen and
// this hour's slice is known (sp, its spread, is then set; see
// Observe):
//
//   - x is no spike for its hour: within SpikeZ spreads of the slice's
//     mean;
//   - its change from the previous sample (d) is, within the jump bound
//     (JumpZ spreads of changes, js), the change between the two
//     samples' slices;
//   - the short baseline's mean (m) lies beyond extremeMinZ spreads of
//     this hour's usual value: it lags the daily pattern, which is why
//     x is out of its bounds. Where the short baseline agrees with the
//     hour, a sample out of its bounds is news for both, however wide
//     the slice (an earlier incident at this hour widens it).
//
// A service at 60 requests by night and 300 by day steps twice a day;
// after a day without its morning step, the next morning's step meets a
// short baseline that has seen only the night. Both are the pattern,
// not news. Their excursions still count (see excursion): a step that
// stays is a long one, which never mutes the path, so that a short
// outage by day is still paged.
func (a *Auto) patterned(ts int64, x, m, sp, d, js float64, day *EWMA) bool {
	c := &a.cfg
	if sp == 0 || ts-a.first < dayMs {
		return false
	}
	before := a.day.At(a.prevTs)
	if before.Count() < a.minVisits {
		return false
	}
	usual := day.Mean() - before.Mean()
	return math.Abs(d-usual) < c.JumpZ*js && math.Abs(x-day.Mean()) < c.SpikeZ*sp && math.Abs(m-day.Mean()) >= extremeMinZ*sp
}

// dailyStep reports whether x, which the spike path judges, belongs to a
// step the day repeats (see dailyJumps), and keeps the state that says
// so: whether the excursion under way is such a step's, where it left
// and where it landed. m is the spike path's baseline, change x's change
// from the previous sample and changeSp the changes' spread; bound is a
// jump in the spike path's spread of changes; notJump says x's change
// was no jump; repeat, whether it was one that repeats one remembered.
//
//   - An excursion that begins with a change short of a jump is the
//     day's step too where it repeats a remembered jump: a step of 10 of
//     the changes' spreads is a jump on some days and not on others.
//   - A repeated jump opens the step's excursion, and so does a job's
//     way back, from where it lands.
//   - An excursion that begins while the baseline is still nearer to
//     where the step left than to where it landed, at a sample near the
//     latter, is that step's lag: on 15 s samples the step's excursion
//     ends and begins again as the baseline catches up.
//   - The step's excursions are no crossings for the spike path's rate:
//     a nightly job counted as a burst made the path call bursts
//     routine, and an incident shaped like the job, hours later, scored
//     nothing.
//
// x belongs to the step while the excursion is the step's and x is near
// where it landed (dailyJumps.near).
func (a *Auto) dailyStep(ts int64, x, m, change, changeSp, bound float64, notJump, repeat bool) bool {
	if a.run == 1 && notJump {
		repeat = a.dailyRepeat(ts, change, a.cfg.JumpZ*changeSp)
	}
	j := &a.daily
	if repeat {
		j.open, j.from, j.landed = true, a.prev, x
		a.counts = false
	} else if a.run == 1 {
		j.open = j.open && j.near(x, bound) && 2*math.Abs(m-j.from) < math.Abs(j.landed-j.from)
		a.counts = a.counts && !j.open
	}
	return j.open && j.near(x, bound)
}

// dailyRepeat reports whether a change d at ts repeats a jump of one or
// two days before (see dailyJumps) by less than tol, at the same time of
// day to within the sampling interval: after a gap the time since the
// previous sample would let the first sample match any jump of those
// hours.
func (a *Auto) dailyRepeat(ts int64, d, tol float64) bool {
	within := ts - a.prevTs
	if a.interval > 0 {
		within = min(within, a.interval)
	}
	return a.daily.repeats(ts, d, within, tol)
}

// hourSpike returns x's distance from this hour's usual value, in spreads
// of the hour (sp), for the spike path: on a strong daily cycle the short
// baseline's spread is the cycle's, and a one-sample drop to what the
// night usually has, at noon, hides within it. The usual value is the
// nearer of the slice's mean and the level plus the slice's offset
// (usualDistance, as for records), so that a shift the level has followed is no spike for
// days while the slices catch up. The spread sp is the caller's
// (hourSpread, or countSpread on counts). Observe asks only once three
// days have been seen (hourSpikeAfter), and uses the result only where
// sp is at most half the short baseline's spread: where the daily
// pattern explains at least three quarters of its variance. Elsewhere
// the short baseline judges as well, and a slice's spread from a few
// visits is the noisier of the two.
func (a *Auto) hourSpike(ts int64, x, loc, sp float64, day *EWMA) (z float64) {
	return a.usualDistance(ts, x, loc, day) / sp
}

// usualDistance is x's distance from where this time of day usually is:
// from the slice's mean (day) or from the level plus the slice's usual
// offset from the level, whichever is nearer. The slice's mean follows a
// trend DayHalfLife visits late; level plus offset follows it as the
// level does.
func (a *Auto) usualDistance(ts int64, x, loc float64, day *EWMA) float64 {
	return min(math.Abs(x-day.Mean()), math.Abs(x-loc-a.offset[a.day.Bucket(ts)].mean))
}

// fitFloor sets what rangeFloor needs, whenever the series' range or
// its lattice changes and once the warm-up is over: the span of the
// range it may reach (see floorReach) and its least value (least).
// Both are derived from the range and the lattice, not kept in
// snapshots.
//
// A reading on a lattice can tell no spread finer than the lattice's
// step allows (res, see resolution), whatever its magnitude: where
// Observe takes it, the floor is the larger of the two.
//
// The least floor is scaleFloor's 10⁻⁹ times the largest magnitude the
// series has reached, where that is below 1. 10⁻⁹ is no least spread
// for a latency of 40 ns in seconds, whose noise is a few of it: NAB
// with its values times 10⁻⁹ scored 68.66 with 10⁻⁹ and 72.99 with
// this (74.22 as published, where nothing changes). It is at least
// 10⁻¹⁵: above 0 for a series that has only been 0, with a square (the
// short baseline's and the profile's floors are squared) far from the
// denormals, and above the rounding that the difference of two values
// near 1 leaves (a derivative of a series that did not move can come
// out as 10⁻¹⁷ rather than 0). A wild value can raise it to no more
// than scaleFloor's 10⁻⁹.
//
// Until the warm-up is over the range is not yet the series' own (its
// first samples have barely moved): the span is unbounded and the least
// 10⁻⁹, the floor scaleFloor's. A floor from that range made the first
// samples' surprise, which the likelihoods' long runs keep with equal
// weights for thousands of samples, as large as an incident's, and a
// rising series' dip on its second day went unseen (TestAutoSecondDay).
func (a *Auto) fitFloor() {
	if a.n <= uint64(a.cfg.WarmUp) {
		a.span, a.least, a.res = math.Inf(1), 1e-9, 0
		return
	}
	a.span, a.least = floorFit(a.lo, a.hi)
	a.res = a.resolution()
}

// floorReach is the magnitude rangeFloor may take its thousandth of
// around level loc: floorSpans times the series' range (span, see
// fitFloor), but at least a billionth of the level, so that a series
// that has never moved does not page on a difference in its last digit
// (0.1+0.2 against 0.3) however large its magnitude
// (TestAutoFlatFloatNoise).
func (a *Auto) floorReach(loc float64) float64 {
	return reachAt(a.span, loc)
}

// reachAt is the magnitude rangeFloor may reach around level loc for a
// series whose range gives span (see floorFit): span, but at least a
// billionth of the level.
func reachAt(span, loc float64) float64 {
	return maxf(span, 1e-9*math.Abs(loc))
}

// floorSpans is how many of a series' ranges the magnitude in
// rangeFloor may reach: the floor is at most a hundredth of the range.
// At 1 NAB lost a window by a near-tie; at 100 most of the gain on a
// constant offset was gone (docs/detectors.md).
const floorSpans = 10

// hourSpread is the spread by which a time-of-day slice (day) judges a
// value: its own, but never below a quarter of the level's (scale) nor
// the level's floor (see floorReach), since a slice's spread is noisy
// with few visits. On a strong daily cycle the level's spread is the
// cycle's, so a night's noise is judged by a quarter of the day's
// swing; on counts Observe uses countSpread instead where it can (and
// says where not).
func hourSpread(day *EWMA, floor, scale float64) float64 {
	return maxf(maxf(day.Std(), 0.25*scale), floor)
}

// sliceFit is, for one time-of-day slice of a series sampled finer than
// a minute, the mean squared errors of two predictions of its samples:
// the level's (carried by its trend) and the slice's usual value, each
// learnt over profileDays of the slice's visits.
//
// It is for a daily step. Counts that double at 09:00 and halve at 18:00,
// sampled every 15 s, paged 4 to 7 minutes after each step, on every day
// (195 alerts over ten seeds' twelve days from the third, about 0.8 a
// step; TestAutoDailyStepsFifteenSecondsCounts). The level learns in
// samples (LevelHalfLife), so at 15 s it leaves each step's surprise
// behind within 40 minutes. The level's likelihood, whose long run
// keeps a minute's span of time, sees that surprise seldom enough to
// page it. The slice that starts at the step has learnt the new value,
// and predicts it: its errors there are the noise's, a quarter of the
// level's or less. Where they are (hourFits), and the sample is no
// spike for the hour (within SpikeZ of its spreads), the level's
// likelihood gives way to the hour's, as it does to the day's profile
// where that judges: 4 alerts. Fitting the level's memory to a minute's
// span did as well but cost a CPU quota's incidents (docs/detectors.md,
// "Daily steps at 15 s").
//
// A quarter, as the profile judges where it explains three quarters of
// the variance: at the error's half (the hour no worse than the level),
// NAB, were it applied at every interval, gained 0.4 but the families
// lost up to 7 points on server metrics whose cycle is days long, not
// one. At a minute or coarser nothing changes: there the level's memory
// spans hours and its likelihood has learnt such steps.
type sliceFit struct{ level, hour float64 }

// hourJudges learns slot's fit from x (sp is the hour's spread; the
// level has not learnt x yet) and reports whether the level's
// likelihood gives way to the hour's for x: the hour's likelihood judges
// (as in Observe), the hour predicted the slice much better than the
// level before x, and x is no spike for the hour (within SpikeZ of its
// spreads).
func (a *Auto) hourJudges(ts int64, slot int, x, sp float64) bool {
	b := &a.day.buckets[slot]
	f := &a.fits[slot]
	fits := f.hourFits()
	now := a.level.Loc() + a.lag*a.slope // as Observe has it
	f.learn(x-now, x-b.Mean(), a.fitAlpha)
	// The hour's likelihood has learnt x's average by now: its count is
	// one more than Observe's test saw.
	judges := a.dayLik.long.n > uint64(a.cfg.WarmUp) && (ts-a.first >= 2*dayMs || a.day.lastTill-dayMs <= a.first)
	return judges && fits && math.Abs(x-b.Mean()) < a.cfg.SpikeZ*sp
}

// hourFits reports whether the hour's errors in this slice are at most a
// quarter of the level's, once both have been learnt.
func (f *sliceFit) hourFits() bool { return f.level > 0 && 4*f.hour <= f.level }

// learn takes the level's error el and the hour's eh, weighted alpha;
// the first pair is taken as it is.
func (f *sliceFit) learn(el, eh, alpha float64) {
	if f.level == 0 && f.hour == 0 {
		f.level, f.hour = el*el, eh*eh
		return
	}
	f.level += alpha * (el*el - f.level)
	f.hour += alpha * (eh*eh - f.hour)
}

// countSpread is hourSpread for a series of counts (whole numbers, or
// whole multiples of quantum; see lattice.go): the slice's own spread
// floored at a Poisson count's, sqrt(mean) in units of quantum
// (√(quantum × mean) in the series' own), instead of a quarter of the
// level's. That is counting noise, which no number
// of quiet visits can rule out and which does not grow with the daily
// cycle. The time-of-day likelihood, the hour's spike and the verdict's
// band use it on counts.
func countSpread(day *EWMA, floor, quantum float64) float64 {
	// One square root of the larger variance: the same as the larger of
	// the two roots, as the root is monotone.
	return maxf(math.Sqrt(maxf(day.Var(), quantum*max(day.Mean(), 0.5*quantum))), floor)
}

// recordZ is the surprise a record x is judged by (see extreme): its
// distance from the level in robust spreads (levelZ) until the time of
// day's slice (day, nil when DayBuckets is 0) has been seen MinDayVisits
// times, and from then on its distance from where this time of day
// usually is (usualDistance), in the slice's spreads (hourSpread), so
// that a daily peak on a growing series is judged against this day's
// peak hour, not one a few days old. noiseZ is the same distance in the slice's own
// spread, without hourSpread's floor of a quarter of the level's spread:
// noise's reach is the hour's noise's, and against the floor a record
// far beyond that noise would look like one within it.
func (a *Auto) recordZ(ts int64, x, loc, floor, scale, levelZ float64, day *EWMA) (z, noiseZ float64) {
	if day == nil || day.Count() < a.minVisits {
		return levelZ, levelZ
	}
	// Counts keep the quarter-level floor here: a clean daily cycle's
	// records are its peak hours' noise beating the record by a hair, two
	// or three Poisson spreads out, and at the Poisson floor those alert
	// (TestAutoHourSpike's plain cycle does).
	d := a.usualDistance(ts, x, loc, day)
	return d / hourSpread(day, floor, scale), d / maxf(day.Std(), floor)
}

// sliceStep is the finest interval at which DayHalfLife and
// MinDayVisits count samples: the defaults were chosen on 5-minute data
// (NAB) and are measured from 1-minute to hourly data (the families).
const sliceStep = 60_000

// maxSliceScale bounds the fitting below at one sample a second.
const maxSliceScale = sliceStep / 1000

// clockEpoch is 2000-01-01 UTC in Unix milliseconds: no metric's
// samples are older, and timestamps before it are row numbers.
const clockEpoch = 946_684_800_000

// fitClock sets noClock once the warm-up has measured the interval (and
// again on restore): the series' timestamps are row numbers, not times,
// where its samples are a second apart or less and it began before 2000.
// That is how a series without times reads: public data sets that
// number their rows 1, 2, 3, ... instead of timing them give Unix
// seconds from 1970, and so does a row index that a conversion to NAB's
// layout writes as a time.
// On such a series the time of day, the day's wait before records count
// and the fitting of windows to a sub-minute interval all rest on a
// clock that is not there: NAB's corpus so retimed scored 22.65 against
// 74.23 as published, below zscore's 37.55, whose samples know no time.
// Without a clock auto judges as with DayBuckets 0 at a minute's
// interval, until it finds a daily cycle in the samples (see cycle.go)
// (docs/detectors.md, "Timestamps that are row numbers").
func (a *Auto) fitClock() {
	a.noClock = a.n > uint64(a.cfg.WarmUp) && RowNumbers(a.first, a.interval)
	// Such a series is searched for a cycle in samples (see cycle.go),
	// once, when its warm-up ends. The search needs every sample from
	// the first, which snapshots do not keep: a series restored before
	// its search ended is not searched again.
	if a.noClock && a.cfg.DayBuckets > 0 && a.warm != nil && uint64(len(a.warm.early)) == a.n {
		a.cycle = &cycleSearch{buf: a.warm.early, from: len(a.warm.early)}
	}
	a.warm = nil
}

// warmUp is what the warm-up keeps until it ends: the samples of a
// series whose timestamps are before 2000, for the search for a cycle
// (see cycle.go), and the gaps between samples, whose median is the
// interval (see median).
type warmUp struct {
	early []float64
	gaps  []int64
}

// median returns the median of the warm-up's gaps (the lower of the two
// middle ones), 0 if there are none. The least gap, which the interval
// was before, is the interval where samples only go missing (a missed
// scrape is a gap of two). Where timestamps wander, it is less: 5-minute
// samples moved by up to a tenth of that either way came 4 minutes
// apart in some warm-up, no usual interval was found within a tenth of
// it (see fitGrid), and their times were read as they came. NAB so
// moved (`--probe jitter=0.1`) scored 73.71 against 74.85 as loaded.
// The median is the interval while fewer than half the samples go
// missing, and it scores 74.96 (docs/detectors.md, "The interval is the
// median gap"). The gaps are sorted in place: the warm-up is over.
func (w *warmUp) median() int64 {
	if len(w.gaps) == 0 {
		return 0
	}
	slices.Sort(w.gaps)
	return w.gaps[(len(w.gaps)-1)/2]
}

// WarmUpInterval returns the interval auto measures for a series whose
// first samples are at times, with a warm-up of n samples: the median
// of the positive gaps among its first n+1 samples (see warmUp.median),
// 0 where there are none.
func WarmUpInterval(times []int64, n int) int64 {
	var w warmUp
	for i := 1; i <= n && i < len(times); i++ {
		if d := times[i] - times[i-1]; d > 0 {
			w.gaps = append(w.gaps, d)
		}
	}
	return w.median()
}

// usualIntervals are the intervals scrapes, rule groups and exports
// use.
var usualIntervals = [...]int64{
	1_000, 2_000, 5_000, 10_000, 15_000, 20_000, 30_000,
	60_000, 2 * 60_000, 3 * 60_000, 4 * 60_000, 5 * 60_000, 6 * 60_000, 10 * 60_000, 12 * 60_000, 15 * 60_000, 20 * 60_000, 30 * 60_000,
	dayMs / 24, dayMs / 12, dayMs / 8, dayMs / 6, dayMs / 4, dayMs / 3, dayMs / 2, dayMs,
}

// fitGrid sets grid: the usual interval within a tenth of the one
// measured (the warm-up's median gap, see warmUp.median), if there is
// one.
func (a *Auto) fitGrid() {
	a.grid = 0
	if a.noClock || a.synthStep > 0 || a.interval <= 0 {
		return
	}
	for _, g := range usualIntervals {
		if 10*a.interval >= 9*g && 10*a.interval <= 11*g {
			a.grid = g
			return
		}
	}
}

// onGrid reads ts on the grid, for a sample other than one interval
// after the previous one (which is on the grid the previous was read
// on). Within an eighth of the grid of one of its points counted from
// midnight (:00, :05, :10 … for 5 minutes) it is that point. Else,
// within an eighth of the grid of a whole number of intervals after the
// previous sample's time, it is that many intervals after it: a series
// on a grid of its own, as at 4 past every fifth minute. Else it is as
// it came. Timestamps taken when a scrape ran rather than when it was
// due, or exported from such, wander by a few seconds about their due
// times, and a sample due on the hour fell into the hour before on some
// days and not on others (docs/detectors.md, "Timestamps that wander").
// A time so read stays within an eighth of the grid of the sample's
// own, and a series whose samples move by more (a traffic sensor's
// 5-minute samples four minutes apart once) is read as it comes from
// there on.
func (a *Auto) onGrid(ts int64) int64 {
	g := a.grid
	if r := ((ts % g) + g) % g; 8*r <= g {
		return ts - r
	} else if 8*(g-r) <= g {
		return ts + g - r
	}
	d := ts - a.prevTs
	k := (d + g/2) / g
	if k < 1 {
		return ts
	}
	if off := d - k*g; 8*off <= g && -8*off <= g {
		return a.prevTs + k*g
	}
	return ts
}

// RowNumbers reports whether a series that starts at first (Unix ms)
// with samples step ms apart (auto's interval, see warmUp.median) is
// timestamped by row number rather than by time: a second apart or
// less from before 2000 (see fitClock). auto judges such a series
// without the time of day.
func RowNumbers(first, step int64) bool {
	return step > 0 && step <= 1000 && first < clockEpoch
}

// fitInterval fits what counts samples to the interval measured in the
// warm-up: the likelihoods' windows, the slices' memory, the trend's and
// the changes' spread's (see each). Each sets its state from the config
// and the interval alone, so it runs once the warm-up ends and again on
// restore.
func (a *Auto) fitInterval() {
	a.fitClock()
	a.fitGrid()
	a.fitLikelihoods()
	a.fitSlices()
	a.fitTrend()
	a.fitChanges()
	a.fitLinger()
	a.fitFall()
}

// watchInterval refits the detector to a lasting change of the
// interval between samples (d is the latest gap, other than the
// interval). Before, what counts samples stayed fitted to the interval
// of the warm-up for good. A rule group whose interval went from a
// minute to 15 s on a reload judged its series with windows four times
// too short in time: Poisson counts of about 200 on a daily cycle paged
// 62 times over ten seeds' six days, against 3 for a series sampled
// every 15 s from the start (TestAutoIntervalChange). WarmUp gaps in a
// row that agree with each other to a quarter and not with the
// interval are the new interval: the least of them becomes it, as the
// warm-up measures it, and everything is fitted again; what was learnt
// is kept. A gap of missed samples is one gap, and an irregular
// series' gaps do not agree for long, so neither refits.
//
// The likelihoods' long runs keep what they learnt, but the short
// average they judge now spans a different number of samples: from 15 s
// to a minute, two rather than eight. Its spread from noise alone is
// then twice as large as the long run has it, and the same counts paged
// 121 times in six days. Each long run's variance is rescaled as for
// independent samples, by the ratio of an average's variance,
// alpha/(2−alpha), under the new window and the old: 2 pages, against
// 1 sampled every minute from the start.
func (a *Auto) watchInterval(d int64) {
	near := func(d, ref int64) bool { return 4*d >= 3*ref && 4*d <= 5*ref }
	switch {
	case near(d, a.interval):
		a.ivRun = 0
	case a.ivRun == 0 || !near(d, a.ivRef):
		a.ivRun, a.ivRef, a.ivLeast = 1, d, d
	default:
		a.ivRun++
		a.ivLeast = min(a.ivLeast, d)
		if a.ivRun >= a.cfg.WarmUp {
			a.interval, a.ivRun = a.ivLeast, 0
			liks := []*Likelihood{&a.lik, &a.stepLk, &a.dayLik, &a.prof.lik}
			var before [4]float64
			for i, l := range liks {
				before[i] = l.short.alpha
			}
			a.fitInterval()
			for i, l := range liks {
				if b, n := before[i], l.short.alpha; b > 0 && n != b {
					l.long.vr *= n / (2 - n) / (b / (2 - b))
				}
			}
		}
	}
}

// fitChanges fits the memory of the changes' spread (LevelHalfLife
// samples) to the interval measured in the warm-up. Finer than a minute
// it keeps the span of time it has at one minute, as the slices and the
// likelihoods do. At 15 s it followed a daily step to noisier values
// within 40 minutes rather than 150, and the step likelihood, whose
// windows span a minute's time, took the day's new noise for changes
// the series had never made: a service stepping from 60 to 300 at
// 09:00 (3 % noise) paged 84 times over ten seeds' twelve days at 15 s;
// fitted, 16 (TestAutoDailyStepsFifteenSeconds). The level keeps its
// memory in samples: fitted as well, it cost the ceiling of a CPU quota
// 6 to 7 points. At a minute or coarser nothing changes.
func (a *Auto) fitChanges() {
	a.step.alpha = AlphaForHalfLife(a.cfg.LevelHalfLife * float64(a.sliceScale()))
	a.step.derive()
}

// fitSlices fits the time-of-day slices' memory to the sampling
// interval once the warm-up has measured it. At a minute or coarser
// nothing changes. At a finer interval a slice sees more samples per
// visit and, its memory counted in samples, forgets sooner: at 15 s, 20
// samples are the last five minutes of yesterday's hour, against which
// all of today's is judged, and healthy daily cycles paged (a 1-minute
// rate of a counter on a daily cycle, evaluated every 15 s: 7 pages
// held two minutes in five weeks, 2 fitted). There the slices'
// half-life and the visits they need are scaled by the samples in a
// minute, keeping the span of time they have at one minute. The slices'
// means and spreads so far are kept.
func (a *Auto) fitSlices() {
	if a.cfg.DayBuckets == 0 {
		return
	}
	f := a.sliceScale()
	alpha := AlphaForHalfLife(a.cfg.DayHalfLife * float64(f))
	for i := range a.day.buckets {
		a.day.buckets[i].alpha = alpha
		a.day.buckets[i].derive()
	}
	a.deriveVisits()
	if f == 1 {
		a.fits = nil
		return
	}
	if a.fits == nil {
		a.fits = make([]sliceFit, len(a.day.buckets))
	}
	visit := dayMs / int64(len(a.day.buckets)) / a.interval // samples in a slice's visit
	a.fitAlpha = AlphaForHalfLife(profileDays * float64(visit))
}

// fitLikelihoods fits the likelihoods' windows to the interval measured
// in the warm-up, as fitSlices does the slices' memory: ShortHalfLife,
// PatternHalfLife and LongHalfLife count samples at a minute, and under
// a minute they are scaled by the samples in a minute, keeping the span
// of time they have at one minute. At the agent's own 15 s the level's
// likelihood averaged 30 seconds of surprise, and a Poisson count's
// noise paged once a day (84 to 111 pages in 105 series-days, none held
// two minutes more than 6 times); fitted, 4 to 10. At a minute or
// coarser the scale is 1 and nothing changes.
func (a *Auto) fitLikelihoods() {
	f := float64(a.sliceScale())
	c := &a.cfg
	fit := func(l *Likelihood, short float64) {
		l.short.alpha = AlphaForHalfLife(short * f)
		l.short.derive()
		l.long.alpha = AlphaForHalfLife(c.LongHalfLife * f)
		l.long.derive()
	}
	fit(&a.lik, c.ShortHalfLife)
	fit(&a.stepLk, c.PatternHalfLife)
	if c.DayBuckets > 0 {
		fit(&a.dayLik, c.PatternHalfLife)
		fit(&a.prof.lik, c.PatternHalfLife)
	}
}

// fitTrend fits the trend baseline's memory (see trendStep) to the
// interval measured in the warm-up. SpikeHalfLife counts samples at a
// minute: at 5 minutes its 50 samples span four hours, a sixth of the
// day, and a line that slow cuts the bends of a daily curve, so on a
// 5-minute KPI the trend's errors rarely cleared the bar it must clear
// to judge (see Observe) in the days before the profile knows the day.
// Coarser than a minute, the memory keeps the span of time it has at a
// minute, but not below minTrendHalfLife samples. At a minute or finer
// nothing changes: the flat baseline it is measured against keeps its
// samples too.
func (a *Auto) fitTrend() {
	if a.n <= uint64(a.cfg.WarmUp) || a.interval <= sliceStep {
		a.setTrendMemory(a.cfg.SpikeHalfLife)
		return
	}
	hl := a.cfg.SpikeHalfLife * float64(sliceStep) / float64(a.interval)
	a.setTrendMemory(minf(a.cfg.SpikeHalfLife, maxf(hl, minTrendHalfLife)))
}

// spikeClip is where the spike path's short baseline clips what it
// learns, in its standard deviations: the level's clip (see NewAuto).
// At 2 a lasting shift takes the baseline too long to follow, and the
// families lost 0.2 to 0.5 points on average; at 4 and 5 a burst
// still swells the spread (see docs/detectors.md).
const spikeClip = 3

// minTrendHalfLife is the shortest memory fitTrend gives the trend, in
// samples: what it has at 5 minutes. On hourly data (the families'
// weekly_quiet) 5 samples lost 0.4 to 0.9 points where 10 gained up to
// 5: a level that follows a few samples takes in the noise it is
// there to judge.
const minTrendHalfLife = 10

// setTrendMemory sets the trend's level share and slope gain for a
// memory of hl samples.
func (a *Auto) setTrendMemory(hl float64) {
	a.trendAlpha = AlphaForHalfLife(hl)
	a.trendGain = a.trendAlpha * AlphaForHalfLife(a.cfg.ShortHalfLife)
}

// deriveVisits sets the visits a slice needs before it judges, and from
// which an offset's update is steady, from the slices' fitted memory.
func (a *Auto) deriveVisits() {
	a.minVisits = uint64(a.cfg.MinDayVisits) * uint64(a.sliceScale())
	a.offsetSteady = max(a.day.buckets[0].startUntil, a.minVisits+1)
}

// sliceScale is how many samples at the interval measured in the
// warm-up fit in a minute (at most maxSliceScale): the factor by which
// fitSlices scales the slices' memory. It is 1 at a minute or coarser,
// and until the warm-up has ended.
func (a *Auto) sliceScale() int64 {
	if a.n <= uint64(a.cfg.WarmUp) || a.interval <= 0 || a.interval >= sliceStep || a.noClock {
		return 1
	}
	return min(sliceStep/a.interval, maxSliceScale)
}

// anchorOffsets sets every visited slice's offset to the slice's mean
// less the level, once, when the level has become steady. Until then the
// level is still on its way from the first samples (its clipping scale
// starts from them: hourly data that starts at night takes it a week or
// more to reach the daily mean), and offsets learnt against it carry
// that distance for DayHalfLife visits more: on such a series the level
// plus a night hour's offset lies far above the night, and a night surge
// looks usual. The slice means, which never depended on the level, are
// the anchor; from here on the offsets follow the level's trend again.
func (a *Auto) anchorOffsets() {
	for i := range a.offset {
		if b := &a.day.buckets[i]; b.Count() > 0 {
			a.offset[i].mean = b.Mean() - a.level.Loc()
		}
	}
}

// offset is a time-of-day slice's exponentially weighted mean and
// variance of values' distance from the level at its visits.
type offset struct{ mean, vr float64 }

// update adds d, weighed as day (the slice's EWMA, just updated with the
// same sample) weighed it, so that both count the same visits. Once the
// slice is known (more than minVisits visits), a deviation is clipped at
// offsetClip of the offset's spread, as the level clips its samples: an
// incident, or the level's lag behind a shift, must not become the usual
// offset. A spread of 0 (a slice that has seen one value) clips nothing,
// as the level's does not. Observe writes out the common case (see
// offsetSteady).
func (o *offset) update(d float64, day *EWMA, minVisits uint64) {
	n := day.n
	if n == 1 {
		o.mean, o.vr = d, 0
		return
	}
	w := day.alpha
	if n < day.startUntil {
		w = 1 / float64(n)
	}
	e := d - o.mean
	if n > minVisits && o.vr > 0 && e*e > offsetClip*offsetClip*o.vr {
		e = math.Copysign(offsetClip*math.Sqrt(o.vr), e)
	}
	o.mean += w * e
	o.vr = (1 - w) * (o.vr + e*w*e)
}

const (
	autoKind = "auto"
	// extremeMinZ is the least surprise (robust standard deviations from
	// the time of day's usual value, or from the level until that is
	// known) a new extreme needs: a record set within the noise right
	// after a calm spell, or at the level this hour usually has, is not
	// news.
	extremeMinZ = 1.5
	// recordBand is the normal band's half-width in spreads (the
	// verdict's, 3): a record within it is the usual value's own, beyond
	// it one that must pass noiseReach (see extreme).
	recordBand = 3
	// recordNoiseOdds is how often noise may reach a record's distance
	// for the record to count: once in four histories as long. NAB loses
	// a window at 0.15, and from 0.2 to 1 scores within 0.05 of this (see
	// docs/detectors.md).
	recordNoiseOdds = 0.25
	// stepBack is how many of the changes' spreads a change lies out
	// for the next to be measured as a way back too (see Observe): one
	// change in twenty of Gaussian noise. NAB scores 73.77 at 1.5, 74.00
	// here, and 73.37 (as without it) from 2.5 on, where clean series
	// keep more of their pages (docs/detectors.md).
	stepBack = 2
	dayMs    = 24 * 3600 * 1000
	// hourSpikeAfter is how long a series is watched before a sample
	// can be a spike for its hour: three days, so that every slice has
	// seen three earlier visits. A slice's spread is learnt from its
	// samples, and on data finer than an hour most of them come from
	// one visit, near each other; from one or two visits it holds too
	// little of how one day differs from the next. A machine's
	// temperature (NAB) paged at 13:00 on its third day, inside the
	// level's band, 8.4 of the 13:00 slice's spreads from the mean of
	// its two visits; the spread was 3.9 a sample later. Waiting from
	// one day to three, the families' means rose 0.2 to 0.4 on every
	// seed set (odd_cycles 5 to 7) and NAB 0.10 (docs/detectors.md,
	// "The hour's spike waits for three days").
	hourSpikeAfter = 3 * dayMs
	// offsetClip clips a time-of-day offset's deviations, in its spreads,
	// as the level's Robust clips at 3.
	offsetClip = 3
)

// MarshalBinary implements Detector.
func (a *Auto) MarshalBinary() ([]byte, error) {
	// About 1 KB of fixed fields and 150 bytes per time-of-day slice
	// (its baseline, offset, profile slice and seven days of the week),
	// so that the buffer is allocated once.
	w := newEncoder(autoKind, 1024+160*a.cfg.DayBuckets)
	encodeConfig(w, a.cfg.fields())
	w.str(a.cfg.TimeZone)
	a.level.encode(w)
	a.lik.encode(w)
	a.step.encode(w)
	a.stepLk.encode(w)
	w.f64(a.prevDev)
	w.f64(a.prev)
	w.i64(a.prevTs)
	w.f64(a.lo)
	w.f64(a.hi)
	w.f64(a.locLo)
	w.f64(a.locHi)
	w.u8(barFlags(a.loEp, a.loRun))
	w.u8(barFlags(a.hiEp, a.hiRun))
	w.f64(a.wild.v)
	w.f64(a.wild.loc)
	w.u8(barFlags(a.wild.ep, a.wild.run))
	w.i64(int64(a.wild.side))
	w.bool(a.wild.zero)
	w.u64(a.wild.held)
	w.i64(a.zeroAt)
	w.i64(a.first)
	w.u64(a.n)
	w.i64(int64(a.quiet))
	w.i64(int64(a.calm))
	a.spike.encode(w)
	w.f64(a.trendLevel)
	w.f64(a.trendSlope)
	w.f64(a.trendErr)
	w.u64(a.crossings)
	w.u64(a.jumps)
	w.u64(a.run)
	w.bool(a.counts)
	w.f64(a.exMean)
	w.f64(a.exVar)
	w.bool(a.offLattice)
	w.f64(a.perQuantum)
	w.f64(a.latticeTol)
	w.f64(a.chg.q)
	w.f64(a.chg.prec)
	w.u64(a.chg.agree)
	w.f64(a.runPeak)
	w.i64(int64(a.runCalm))
	w.f64(a.slope)
	w.i64(a.interval)
	w.i64(int64(a.ivRun))
	w.i64(a.ivRef)
	w.i64(a.ivLeast)
	w.i64(a.synthStep)
	a.dep.encode(w)
	a.sch.encode(w)
	a.daily.encode(w)
	a.reg.encode(w)
	a.mem.encode(w)
	a.frz.encode(w)
	a.mem.encodePrior(w)
	w.f64(a.slow)
	w.f64(a.slowHi)
	w.u64(a.rateFrom)
	if a.cfg.DayBuckets > 0 {
		a.day.encode(w)
		a.dayLik.encode(w)
		a.prof.encode(w)
		for _, o := range a.offset {
			w.f64(o.mean)
			w.f64(o.vr)
		}
		for _, c := range a.hourCrossings {
			w.u32(c)
		}
		w.u32(uint32(a.exSlot))
		w.u32(uint32(len(a.fits)))
		for _, f := range a.fits {
			w.f64(f.level)
			w.f64(f.hour)
		}
	}
	encodeVerdict(w, a.last)
	return w.b, nil
}

// UnmarshalBinary implements Detector.
func (a *Auto) UnmarshalBinary(b []byte) error {
	r, err := newDecoder(autoKind, b)
	if err != nil {
		return err
	}
	fields := a.cfg.fields()
	if r.version < 36 { // made before frozen_runs (format 36): read as made with its default
		last := len(fields) - 1
		if fields[last].v != frozenRecs && r.err == nil {
			r.err = fmt.Errorf("%w: made before frozen_runs, with its default %v; this detector has %v", ErrSnapshot, float64(frozenRecs), fields[last].v)
		}
		fields = fields[:last]
	}
	checkConfig(r, fields)
	r.configStr("time_zone", a.cfg.TimeZone)
	a.level.decode(r)
	a.lik.decode(r)
	a.step.decode(r)
	a.stepLk.decode(r)
	a.prevDev = r.f64()
	a.prev = r.f64()
	a.prevTs = r.i64()
	a.lo = r.f64()
	a.hi = r.f64()
	a.locLo = r.f64()
	a.locHi = r.f64()
	a.loEp, a.loRun = r.barFlags()
	a.hiEp, a.hiRun = r.barFlags()
	a.wild.v = r.f64()
	a.wild.loc = r.f64()
	a.wild.ep, a.wild.run = r.barFlags()
	if side := r.i64(); side >= -1 && side <= 1 {
		a.wild.side = int8(side)
	} else if r.err == nil {
		r.err = errorf("side of a wild record %d", side)
	}
	if a.wild.zero = r.bool(); a.wild.zero && a.wild.side != -1 && r.err == nil {
		r.err = errorf("a drop to 0 on side %d", a.wild.side)
	}
	a.wild.held = r.u64()
	a.zeroAt = r.i64()
	a.first = r.i64()
	a.n = r.u64()
	a.quiet = int(r.i64())
	a.calm = int(r.i64())
	a.spike.decode(r)
	a.trendLevel = r.f64()
	a.trendSlope = r.f64()
	a.trendErr = r.f64()
	a.crossings = r.u64()
	a.jumps = r.u64()
	a.run = r.u64()
	a.counts = r.bool()
	a.exMean = r.f64()
	a.exVar = r.f64()
	off := r.bool()
	if m, tol := r.f64(), r.f64(); m >= 1 && m <= maxPerQuantum && m == math.Trunc(m) && tol >= 0 && tol <= latticeSlack {
		a.setLattice(m, tol)
	} else if r.err == nil {
		r.err = errorf("lattice of 1/%v within %v", m, tol)
	}
	a.offLattice = off
	a.fraction = a.fraction || off
	a.chg = stepLattice{}
	if r.version >= 38 { // before, no steps were kept off a lattice
		a.chg = stepLattice{q: r.f64(), prec: r.f64(), agree: r.u64()}
		if !(finite(a.chg.q) && finite(a.chg.prec) && a.chg.q >= 0 && a.chg.prec >= 0) && r.err == nil {
			r.err = errorf("step of %v to a precision of %v", a.chg.q, a.chg.prec)
		}
	}
	a.setRunPeak(r.f64())
	a.runCalm = int(r.i64())
	a.slope = r.f64()
	a.interval = r.i64()
	a.ivRun, a.ivRef, a.ivLeast = int(r.i64()), r.i64(), r.i64()
	if (a.ivRun < 0 || a.ivRun >= max(a.cfg.WarmUp, 1) || a.ivRef < 0 || a.ivLeast < 0) && r.err == nil {
		r.err = errorf("run of %d gaps from %d ms, least %d", a.ivRun, a.ivRef, a.ivLeast)
	}
	a.warm, a.cycle = nil, nil // a search under way is not kept (see fitClock), nor what the warm-up kept
	a.synthStep = r.i64()
	if (a.synthStep < 0 || a.synthStep > dayMs) && r.err == nil {
		r.err = errorf("clock of a cycle: step %d", a.synthStep)
	}
	a.dep.decode(r)
	a.sch.decode(r)
	a.daily.decode(r)
	a.decodeRegime(r)
	if r.version >= 34 { // before, no normal was remembered (see snapshotOldest)
		a.decodeLinger(r)
	} else {
		a.mem.forget()
	}
	if r.version >= 35 { // before, runs of repeats were not counted
		a.frz.decode(r)
	} else {
		a.frz = frozen{since: a.prevTs}
	}
	if r.version >= 37 { // before, no slices were kept after an incident
		a.decodePrior(r)
	} else {
		a.mem.prior = nil
	}
	if r.version >= 41 { // before, no slow level was kept: it starts at the level
		a.slow, a.slowHi = r.f64(), r.f64()
		if !(finite(a.slow) && finite(a.slowHi)) && r.err == nil {
			r.err = errorf("slow level %v, at the highest value %v", a.slow, a.slowHi)
		}
	} else if l := a.level.Loc(); a.n > uint64(a.cfg.WarmUp) && finite(l) {
		a.slow, a.slowHi = l, l
	}
	a.rateFrom = 0 // before format 43 the rate counted from the warm-up
	if r.version >= 43 {
		if a.rateFrom = r.u64(); a.rateFrom > a.n && r.err == nil {
			r.err = errorf("spike rate counted from sample %d of %d", a.rateFrom, a.n)
		}
	}
	if a.cfg.DayBuckets > 0 {
		a.day.decode(r)
		a.dayLik.decode(r)
		a.prof.decode(r)
		for i := range a.offset {
			a.offset[i].mean = r.f64()
			a.offset[i].vr = r.f64()
		}
		for i := range a.hourCrossings {
			a.hourCrossings[i] = r.u32()
		}
		if a.exSlot = int(r.u32()); a.exSlot >= len(a.hourCrossings) && r.err == nil {
			r.err = errorf("excursion's slice %d of %d", a.exSlot, len(a.hourCrossings))
		}
		a.fits = nil
		if n := int(r.u32()); n == len(a.day.buckets) {
			a.fits = make([]sliceFit, n)
			for i := range a.fits {
				a.fits[i] = sliceFit{level: r.f64(), hour: r.f64()}
				if !(finite(a.fits[i].level) && finite(a.fits[i].hour) && a.fits[i].level >= 0 && a.fits[i].hour >= 0) && r.err == nil {
					r.err = errorf("slice %d's fit: %v, %v", i, a.fits[i].level, a.fits[i].hour)
				}
			}
		} else if n != 0 && r.err == nil {
			r.err = errorf("fits of %d slices, want %d", n, len(a.day.buckets))
		}
	}
	a.fitFloor()
	a.fitInterval()
	a.last = decodeVerdict(r)
	a.last.Episode = a.quiet > 0                        // not kept: the episode is the quiet period
	a.last.Shifted = a.reg.side != 0 && !a.reg.hourOnly // nor this: the run under way is
	a.mem.lingering = a.mem.on && a.mem.lingers()       // over the window fitInterval fitted
	a.last.Lingering = a.mem.lingering
	return r.finish()
}

// barFlags is the byte a snapshot keeps for how a record's bar was set:
// within an episode (1), from a regime's run (2). Formats before 39 wrote
// the first alone, as a bool.
func barFlags(ep, run bool) uint8 {
	var f uint8
	if ep {
		f |= 1
	}
	if run {
		f |= 2
	}
	return f
}

// barFlags reads what barFlags wrote.
func (d *decoder) barFlags() (ep, run bool) {
	f := d.u8()
	if f > 3 && d.err == nil {
		d.err = errorf("record's bar flags %#x", f)
	}
	return f&1 != 0, f&2 != 0
}
