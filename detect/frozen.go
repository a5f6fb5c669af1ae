package detect

import "math"

// A value that stops moving
//
// An exporter that hangs keeps serving its last values, and so does a
// cache in front of a dead source or a collector whose loop is stuck: the
// series goes on, at one value. Nothing else in auto sees that. A value
// frozen within the normal band is no record, no spike and no move, and
// an adaptive level only grows surer of it. Through the rules engine a
// daily cycle frozen for good paged twice at 15 s, an hour apart, as
// "unusual for this time of day" once the hour's usual value had moved
// away, and never at a minute (docs/detectors.md, "A value that stops
// moving").
//
// frozen counts the samples in a row equal to the one before (run) and
// keeps two measures of how long such runs are on this series:
//   - share, the share of recent samples that repeat the one before (the
//     departures' same, over the level's half-life), as it was when the
//     run began, less the change that began it: the chance that a sample
//     repeats the one before. Under it a run of r repeats has the chance
//     share^r. Taken right after a change, the share counts that change
//     at the full weight of the latest sample, which on a value that
//     changes seldom is most of its rate of change: on a gauge stepping
//     one minute in 500, the change rate read at a run's start was 0.0066
//     where it is 0.002, and a run of 1,748 minutes scored as frozen. A series that never
//     repeats has a share near 0; one that is scraped four times as often
//     as its source updates, 3/4; counts at a low level, the chance that
//     two draws agree. A run that began within the warm-up has no share
//     learnt yet, and is no freeze however long it lasts (NAB's
//     art_flatline, 45 all through, paged after 3,000 samples without
//     this, at the share's prior of 1 less one sample's learning).
//   - the longest run of the last frozenPeriod samples to 2·frozenPeriod
//     (the longer of this period's and the last one's): a series whose
//     runs come in a pattern (a source that updates every 20 scrapes, a
//     night of one value) has runs far longer than its share says. Runs
//     at 0 are left out, as they are from judging (below): a count that
//     rests at 0 all night says nothing of how long it holds a value by
//     day. Runs at the highest or lowest value seen are kept: what is a
//     bound now (a gauge held at 70 on its first night) may not be once
//     the series has gone beyond it.
//
// A run is a freeze once it is at least Calm samples (the calm that ends
// an episode: a freeze must last as long as an incident's end takes to be
// believed) and at least frozenLeast, spans at least frozenSpan (10
// minutes, which only samples finer than 30 s need), is at least
// FrozenRuns (frozenRecs, 4) times the longest run remembered, follows
// frozenChanges changes of value or more, and has a chance share^r of at
// most the threshold's tail probability. Its score is
// LogTailScore(share^r), and its evidence EvidenceFrozen. It is judged
// only a day after the first sample (a day's runs are known: a night at
// one value is no freeze), and never at a bound: 0, the value at which a
// count, a rate or a queue rests when nothing happens (a counter whose
// exporter hangs reads 0 as a rate, which the drop to 0 judges), nor the
// highest or lowest value seen, at which a share pinned at 100 % or a
// pool at its size rests (saturation, which records and the likelihoods
// judge: called a freeze, a CPU at 100 % for an hour read as an exporter
// that hangs, and its page left status drafts).
//
// Once a run is a freeze, its later samples are held as missing samples
// are (Observe): nothing learns them, and the verdict stays the one the
// freeze gave (anomalous, in its episode), with no new score. The stuck
// value neither teaches the level a spread of 0 nor rewrites the hours
// it lasts in, whose slices would take the next day's normal for a dip
// (a three-hour freeze at 15 s paged again the next day before this). One
// incident, which resolves once the value moves and the series has been
// calm for Calm samples. A run judged a freeze does not become the
// longest run remembered: it was an incident, and the next freeze as long
// still pages.
type frozen struct {
	run   uint32  // the samples in a row equal to the one before, under way
	share float32 // dep.same when the run began
	// The longest run (not judged a freeze) of the current period and of
	// the one before; the current period began at sample from.
	rec, prevRec uint32
	from         uint64
	// since: runs are judged from a day after it, as from a day after
	// the first sample. 0 on a detector that counted runs from its first
	// sample; the time of the latest sample on one restored from a
	// snapshot made before runs were counted (format 34 or older).
	since int64
	on    bool // the run under way is a freeze
}

// frozenRecs is how many times the longest run remembered a freeze
// lasts at least, by default (AutoConfig.FrozenRuns). Where runs end at random (a count that steps now and
// then), the longest of N runs is about ln N of their mean, and a run
// exceeds k times that with the chance N^-k: over the next N runs,
// N^(1-k). Runs come at the slowest rate the series has (a quiet night)
// about ten to a period, so k = 4 is about once in a thousand periods;
// at 2, one in ten. A client count at 15 s that steps one sample in 20
// by day and one in 200 at night paged as frozen 6 to 9 times over 30
// seeds' weeks at 2, 3 at 3, 1 at 4.
const frozenRecs = 4

// frozenChanges is how many times the value must have changed, as the
// share of repeats says (1 − share for each sample before the run), for a
// run to be judged: the longest of fewer runs says little. Past k times
// the longest of N runs a run goes by chance about N^(1−k) of the time:
// with the 2 or 3 runs a day holds on a gauge that steps every few hours,
// one run in 9 to 27 at k = 4. On such a gauge, stepping by 0.02 every
// 100 to 2,000 minutes on average (five rates, 100 series of three weeks
// at a minute each), 4 series of 500 paged as frozen before this and
// the share without the change that began the run; 1 with either alone;
// none with both (docs/detectors.md, "A value that stops moving").
const frozenChanges = 20

// frozenLeast is the least run of repeats that may be a freeze where
// Calm is set lower: 20 samples, the default Calm.
const frozenLeast = 20

// frozenSpan is the least time a freeze lasts, in ms: 10 minutes, twice
// the 5-minute lookback with which a Prometheus-compatible store goes on
// answering with a series' last value once it has stopped, where no
// staleness marker ends it (a target gone, data pushed or federated
// without markers). At 15 s that lookback alone is 20 repeats; a series
// so served goes away after it, and is no freeze.
const frozenSpan = 10 * 60 * 1000

// frozenPeriod is the span, in samples, of each period whose longest run
// is remembered: the likelihoods' long-run half-life (LongHalfLife, 8000),
// 5.6 days at a minute and 33 hours at 15 s.
const frozenPeriod = 8000

// end ends the run under way at sample n: a run longer than the
// period's longest so far becomes it, unless it was judged a freeze or
// was at 0.
func (f *frozen) end(n uint64, zero bool) {
	if d := n - f.from; d >= 2*frozenPeriod { // no run ended for two periods
		f.prevRec, f.rec, f.from = 0, 0, n
	} else if d >= frozenPeriod {
		f.prevRec, f.rec, f.from = f.rec, 0, n
	}
	if !f.on && f.run > f.rec && !zero {
		f.rec = f.run
	}
	f.run, f.on = 0, false
}

// score judges the run under way at ts, on a value that is a bound (see
// Auto.bound) or not, of a series whose first sample came at first and
// whose samples are step ms apart (0 where it has no clock), where least
// is the least run that may be a freeze, recs the times the longest run
// remembered a freeze must be (FrozenRuns) and tail the threshold's tail
// probability. It is called only while run ≥ least. It returns the run's
// score, 0 where it is no freeze.
//
//go:noinline
func (f *frozen) score(ts, first int64, n uint64, bound bool, least uint32, step int64, recs, tail float64) float64 {
	if bound || ts-max(first, f.since) < dayMs || int64(f.run)*step < frozenSpan {
		return 0
	}
	if (1-float64(f.share))*float64(n-uint64(f.run)) < frozenChanges {
		return 0
	}
	r := float64(f.run)
	if r < recs*float64(max(f.rec, f.prevRec)) || f.run < least {
		return 0
	}
	p := math.Pow(float64(f.share), r)
	if p > tail {
		return 0
	}
	f.on = true
	return LogTailScore(p)
}

func (f *frozen) encode(w *encoder) {
	w.u32(f.run)
	w.f32(f.share)
	w.u32(f.rec)
	w.u32(f.prevRec)
	w.u64(f.from)
	w.i64(f.since)
	w.bool(f.on)
}

func (f *frozen) decode(r *decoder) {
	f.run = r.u32()
	f.share = r.f32()
	f.rec = r.u32()
	f.prevRec = r.u32()
	f.from = r.u64()
	f.since = r.i64()
	f.on = r.bool()
	if !(f.share >= 0 && f.share <= 1) && r.err == nil {
		r.err = errorf("share of repeats %v", f.share)
	}
}
