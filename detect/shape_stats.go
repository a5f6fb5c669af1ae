package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

// This file holds the small building blocks the incident-shape detectors
// (decoupling, storm, surge, error_rate) share: a time-aware winsorised EWMA
// baseline, score mapping, input helpers and the snapshot encoding.

// Noise floors of the shape baselines: a relative floor on the standard
// deviation keeps a perfectly flat series from turning a 1 % wiggle into a
// page.
const (
	shapeFloorRel = 0.02
	shapeFloorAbs = 1e-9
)

// shapeCheckCommon validates the keys every shape detector shares.
func shapeCheckCommon(errs *configutil.Errors, baseline time.Duration, warmup int, sigmas float64, confirm int, resolve, relearn time.Duration) {
	if baseline < time.Second {
		errs.Addf("baseline", "must be at least 1s, got %v", baseline)
	}
	if warmup < 2 {
		errs.Addf("warm_up", "must be at least 2 samples, got %d", warmup)
	}
	if !(sigmas > 0) || math.IsInf(sigmas, 0) {
		errs.Addf("sigmas", "must be a positive number of standard deviations, got %v", sigmas)
	}
	if confirm < 1 {
		errs.Addf("confirm", "must be at least 1 sample, got %d", confirm)
	}
	if resolve < 0 {
		errs.Addf("resolve_after", "must not be negative, got %v", resolve)
	}
	if relearn <= 0 {
		errs.Addf("relearn_after", "must be positive, got %v", relearn)
	}
}

// Latency and queue baselines live in log space: their noise is
// multiplicative and right-skewed, and a linear z-score pages on the ordinary
// tail of a log-normal series. The baseline's mean and variance are those of
// log(v + off), where off keeps zero values finite. shapeLogFloor is the
// smallest log-space standard deviation (2 %, multiplicative).
const shapeLogFloor = 0.02

func shapeLog(v, off float64) float64 { return math.Log(math.Max(v, 0) + off) }

// shapeLogExpected is a log-space baseline in the value's own unit (a
// geometric mean).
func shapeLogExpected(b *shapeBaseline, off float64) float64 { return math.Exp(b.mean) - off }

// shapeLogAt is the value k log-space standard deviations from the baseline.
func shapeLogAt(b *shapeBaseline, k, off float64) float64 {
	return math.Exp(b.mean+k*b.sd(0, shapeLogFloor)) - off
}

// shapeLogZ is v's log-space z-score.
func shapeLogZ(b *shapeBaseline, v, off float64) float64 {
	return b.z(shapeLog(v, off), 0, shapeLogFloor)
}

// shapeLogRatio is v over the baseline in its own unit (+Inf over zero).
func shapeLogRatio(b *shapeBaseline, v, off float64) float64 {
	e := shapeLogExpected(b, off)
	if e <= 0 {
		return math.Inf(1)
	}
	return v / e
}

// shapeLogSignal describes a log-space baseline in an explanation.
func shapeLogSignal(name, unit string, cur float64, b *shapeBaseline, k, off float64) model.Signal {
	return model.Signal{
		Name: name, Unit: unit, Current: shapeFinite(cur), Expected: shapeFinite(shapeLogExpected(b, off)),
		Lower: shapeFinite(shapeLogAt(b, -k, off)), Upper: shapeFinite(shapeLogAt(b, k, off)),
	}
}

// shapeBaseline is an exponentially weighted mean and variance whose weight
// follows the time between samples, so the time constant means the same at
// any evaluation interval. The first updates use weight 1/n (a plain running
// mean), so a fresh baseline is not dominated by its first sample.
type shapeBaseline struct {
	n    int64 // updates so far
	mean float64
	vari float64
}

// update folds v into the baseline with time constant tau; step is the time
// since the previous observed sample. The step is capped at tau/10: a gap,
// or a stretch when learning was frozen during an incident, must not make
// the next sample replace the baseline and collapse its variance. When
// clip > 0 and the baseline is warm, v is first clipped to mean ± clip·sd so
// a single outlier or the start of an incident moves the baseline only a
// little.
func (b *shapeBaseline) update(step int64, v float64, tau time.Duration, clip, floorRel, floorAbs float64, warm int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if b.n == 0 {
		b.n, b.mean, b.vari = 1, v, 0
		return
	}
	if clip > 0 && b.n >= int64(warm) {
		sd := b.sd(floorRel, floorAbs)
		v = math.Max(b.mean-clip*sd, math.Min(b.mean+clip*sd, v))
	}
	alpha := shapeAlpha(step, tau)
	if w := 1 / float64(b.n+1); alpha < w {
		alpha = w
	}
	d := v - b.mean
	b.mean += alpha * d
	b.vari = (1 - alpha) * (b.vari + alpha*d*d)
	b.n++
}

// shapeAlpha is the EWMA weight of a sample step ms after the previous one,
// with the step capped at tau/10.
func shapeAlpha(step int64, tau time.Duration) float64 {
	t := float64(tau.Milliseconds())
	dt := math.Max(0, math.Min(float64(step), t/10))
	return 1 - math.Exp(-dt/t)
}

// sd is the standard deviation, floored relative to the mean and absolutely,
// so a flat series does not turn every wiggle into a huge z-score.
func (b *shapeBaseline) sd(floorRel, floorAbs float64) float64 {
	return math.Max(math.Sqrt(b.vari), math.Max(floorRel*math.Abs(b.mean), floorAbs))
}

func (b *shapeBaseline) z(v, floorRel, floorAbs float64) float64 {
	return (v - b.mean) / b.sd(floorRel, floorAbs)
}

// ratio is v over the baseline mean, or +Inf/1 when the mean is zero.
func (b *shapeBaseline) ratio(v float64) float64 {
	if b.mean <= 0 {
		if v > 0 {
			return math.Inf(1)
		}
		return 1
	}
	return v / b.mean
}

func (b *shapeBaseline) encode(e *encoder) {
	e.i64(b.n)
	e.f64(b.mean)
	e.f64(b.vari)
}

func (b *shapeBaseline) decode(d *decoder) {
	b.n = d.i64()
	b.mean = d.f64()
	b.vari = d.f64()
}

// shapeScore maps a z-like statistic (up only) to the package-wide score
// in [0, 1] (zScore: 0.5 is about 4.4 standard deviations), so scores of the
// shape detectors compare with those of the univariate ones.
func shapeScore(z float64) float64 {
	if !(z > 0) {
		return 0
	}
	return zScore(z)
}

// shapeScalar sums a signal's samples, skipping NaN and ±Inf. ok is false
// when the signal is absent or has no finite sample.
func shapeScalar(s []Sample) (v float64, ok bool) {
	for _, x := range s {
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			continue
		}
		v += x.Value
		ok = true
	}
	return v, ok
}

// shapeMaxCarry is how many consecutive samples with a required signal
// missing repeat the previous verdict before the detector drops to normal.
// Scrapes fail during outages; one lost sample must not resolve an alert.
const shapeMaxCarry = 6

// shapeCarry returns the verdict for a sample whose required signals are
// missing: the previous one while carry allows, then a neutral one.
func shapeCarry(last *Result, carried *int, warm bool) Result {
	*carried++
	if *carried <= shapeMaxCarry && last.State == StateAnomalous {
		return *last
	}
	r := Result{Verdict: last.Verdict}
	r.Score, r.Direction = 0, DirNone
	r.State = StateNormal
	if !warm {
		r.State = StateWarmingUp
	}
	return r
}

// Snapshots use the package's encoder and decoder (snapshot.go): version,
// kind, the numeric config fields (a snapshot from another config is
// refused), then each detector's state in a fixed order. The helpers below
// add what the shape detectors need on top: strings and a whole Result.

func shapePutStr(w *encoder, s string) {
	w.u64(uint64(len(s)))
	w.b = append(w.b, s...)
}

func shapeGetStr(r *decoder) string {
	n := r.u64()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errorf("truncated string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// shapePutResult stores a verdict with its explanation (as JSON, which the
// model types already define) so a restored detector repeats it while
// inputs are missing.
func shapePutResult(w *encoder, r *Result) error {
	encodeVerdict(w, r.Verdict)
	w.bool(r.Informational)
	if r.Explanation == nil {
		shapePutStr(w, "")
		return nil
	}
	j, err := json.Marshal(r.Explanation)
	if err != nil {
		return fmt.Errorf("encode explanation: %w", err)
	}
	shapePutStr(w, string(j))
	return nil
}

func shapeGetResult(r *decoder) Result {
	res := Result{Verdict: decodeVerdict(r)}
	res.Informational = r.bool()
	if j := shapeGetStr(r); j != "" && r.err == nil {
		var x model.Explanation
		if err := json.Unmarshal([]byte(j), &x); err != nil {
			r.err = errorf("explanation: %v", err)
			return res
		}
		res.Explanation = &x
	}
	return res
}

// shapeMs turns a duration into a config field value.
func shapeMs(d time.Duration) float64 { return float64(d.Milliseconds()) }

// shapeLatch turns a per-sample condition into a verdict with confirmation
// (Confirm consecutive samples to fire) and hysteresis (the condition must
// stay clear for ResolveAfter to resolve), so a sawtooth does not resolve and
// re-fire every cycle.
type shapeLatch struct {
	streak   int64 // consecutive samples with the condition true
	first    int64 // ts of the first sample of the current streak
	firing   bool
	since    int64 // ts of the first sample of the firing episode
	clearing bool
	clearAt  int64 // ts of the first clear sample while firing
	prevTS   int64 // ts of the previous sample with data
	seen     bool
}

// tick records a sample with data and returns the time since the previous
// one (0 for the first).
func (l *shapeLatch) tick(ts int64) int64 {
	step := int64(0)
	if l.seen {
		step = max(0, ts-l.prevTS)
	}
	l.prevTS, l.seen = ts, true
	return step
}

// step feeds one sample's condition and reports whether the latch fires.
func (l *shapeLatch) step(ts int64, cond bool, confirm int, resolve time.Duration) bool {
	if cond {
		if l.streak == 0 {
			l.first = ts
		}
		l.streak++
		l.clearing = false
		if !l.firing && l.streak >= int64(confirm) {
			l.firing, l.since = true, l.first
		}
		return l.firing
	}
	l.streak = 0
	if !l.firing {
		return false
	}
	if !l.clearing {
		l.clearing, l.clearAt = true, ts
	}
	if ts-l.clearAt >= resolve.Milliseconds() {
		l.firing, l.clearing = false, false
		return false
	}
	return true
}

// learning reports whether baselines may learn from this sample: not while
// pending or firing, except after an anomaly has lasted relearn.
func (l *shapeLatch) learning(ts int64, relearn time.Duration) bool {
	if !l.firing {
		return l.streak == 0
	}
	return ts-l.since >= relearn.Milliseconds()
}

func (l *shapeLatch) encode(e *encoder) {
	e.i64(l.streak)
	e.i64(l.first)
	e.bool(l.firing)
	e.i64(l.since)
	e.bool(l.clearing)
	e.i64(l.clearAt)
	e.i64(l.prevTS)
	e.bool(l.seen)
}

func (l *shapeLatch) decode(d *decoder) {
	l.streak = d.i64()
	l.first = d.i64()
	l.firing = d.bool()
	l.since = d.i64()
	l.clearing = d.bool()
	l.clearAt = d.i64()
	l.prevTS = d.i64()
	l.seen = d.bool()
}
