package detect

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
)

// This file holds the small building blocks the incident-shape detectors
// (decoupling, storm, surge, error_rate) share: a time-aware winsorised EWMA
// baseline, score mapping, input helpers and the snapshot encoding.

// shapeBaseline is an exponentially weighted mean and variance whose weight
// follows elapsed time, so irregular intervals and gaps are handled. The
// first updates use weight 1/n (a plain running mean), so a fresh baseline
// is not dominated by its first sample.
type shapeBaseline struct {
	n      int64 // updates so far
	mean   float64
	vari   float64
	lastTS int64
}

// update folds v into the baseline with time constant tau. When clip > 0 and
// the baseline is warm, v is first clipped to mean ± clip·sd so a single
// outlier or the start of an incident moves the baseline only a little.
func (b *shapeBaseline) update(ts int64, v float64, tau time.Duration, clip, floorRel, floorAbs float64, warm int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if b.n == 0 {
		b.n, b.mean, b.vari, b.lastTS = 1, v, 0, ts
		return
	}
	if clip > 0 && b.n >= int64(warm) {
		sd := b.sd(floorRel, floorAbs)
		v = math.Max(b.mean-clip*sd, math.Min(b.mean+clip*sd, v))
	}
	dt := float64(ts - b.lastTS)
	if dt < 0 {
		dt = 0
	}
	alpha := 1 - math.Exp(-dt/float64(tau.Milliseconds()))
	if w := 1 / float64(b.n+1); alpha < w {
		alpha = w
	}
	d := v - b.mean
	b.mean += alpha * d
	b.vari = (1 - alpha) * (b.vari + alpha*d*d)
	b.n++
	b.lastTS = ts
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

func (b *shapeBaseline) encode(e *shapeEnc) {
	e.i64(b.n)
	e.f64(b.mean)
	e.f64(b.vari)
	e.i64(b.lastTS)
}

func (b *shapeBaseline) decode(d *shapeDec) {
	b.n = d.i64()
	b.mean = d.f64()
	b.vari = d.f64()
	b.lastTS = d.i64()
}

// shapeScore maps a z-like statistic to [0, 1]: 0.5 at the threshold, 0.94
// at twice the threshold, 0 at or below zero. The same threshold therefore
// means the same score on every detector.
func shapeScore(z, threshold float64) float64 {
	if !(z > 0) || threshold <= 0 {
		return 0
	}
	if math.IsInf(z, 1) {
		return 1
	}
	r := z / threshold
	return 1 - math.Pow(0.5, r*r)
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

// Snapshot encoding: "SHP" magic, kind name, version byte, then fixed-width
// little-endian fields in the detector's own order. Decoding checks the
// header and that every byte was consumed.

const shapeSnapshotVersion = 1

type shapeEnc struct{ b []byte }

func newShapeEnc(kind string) *shapeEnc {
	e := &shapeEnc{b: make([]byte, 0, 256)}
	e.b = append(e.b, 'S', 'H', 'P')
	e.str(kind)
	e.b = append(e.b, shapeSnapshotVersion)
	return e
}

func (e *shapeEnc) f64(v float64) { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *shapeEnc) i64(v int64)   { e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v)) }
func (e *shapeEnc) u8(v uint8)    { e.b = append(e.b, v) }
func (e *shapeEnc) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *shapeEnc) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

// result stores a verdict with its explanation (as JSON, which model types
// already define) so a restored detector repeats it while inputs are missing.
func (e *shapeEnc) result(r *Result) error {
	e.f64(r.Score)
	e.f64(r.Expected)
	e.f64(r.Lower)
	e.f64(r.Upper)
	e.u8(uint8(r.Direction))
	e.u8(uint8(r.State))
	e.bool(r.Informational)
	if r.Explanation == nil {
		e.str("")
		return nil
	}
	j, err := json.Marshal(r.Explanation)
	if err != nil {
		return fmt.Errorf("encode explanation: %w", err)
	}
	e.str(string(j))
	return nil
}

var errShapeSnapshot = errors.New("corrupt or foreign snapshot")

type shapeDec struct {
	b   []byte
	err error
}

func newShapeDec(b []byte, kind string) *shapeDec {
	d := &shapeDec{b: b}
	if len(b) < 3 || string(b[:3]) != "SHP" {
		d.err = fmt.Errorf("%s: %w: bad magic", kind, errShapeSnapshot)
		return d
	}
	d.b = d.b[3:]
	if k := d.str(); d.err == nil && k != kind {
		d.err = fmt.Errorf("%s: %w: snapshot is of kind %q", kind, errShapeSnapshot, k)
	}
	if v := d.u8(); d.err == nil && v != shapeSnapshotVersion {
		d.err = fmt.Errorf("%s: %w: unsupported version %d", kind, errShapeSnapshot, v)
	}
	return d
}

func (d *shapeDec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: truncated", errShapeSnapshot)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *shapeDec) f64() float64 {
	if p := d.take(8); p != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return 0
}

func (d *shapeDec) i64() int64 {
	if p := d.take(8); p != nil {
		return int64(binary.LittleEndian.Uint64(p))
	}
	return 0
}

func (d *shapeDec) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *shapeDec) bool() bool { return d.u8() == 1 }

func (d *shapeDec) str() string {
	if d.err != nil {
		return ""
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.err = fmt.Errorf("%w: bad string length", errShapeSnapshot)
		return ""
	}
	d.b = d.b[k:]
	return string(d.take(int(n)))
}

func (d *shapeDec) result(r *Result) {
	r.Score = d.f64()
	r.Expected = d.f64()
	r.Lower = d.f64()
	r.Upper = d.f64()
	r.Direction = Direction(int8(d.u8()))
	r.State = State(d.u8())
	r.Informational = d.bool()
	r.Explanation = nil
	if j := d.str(); j != "" && d.err == nil {
		var x model.Explanation
		if err := json.Unmarshal([]byte(j), &x); err != nil {
			d.err = fmt.Errorf("%w: explanation: %v", errShapeSnapshot, err)
			return
		}
		r.Explanation = &x
	}
}

// done reports the first decoding error, or trailing bytes.
func (d *shapeDec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errShapeSnapshot, len(d.b))
	}
	return d.err
}

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

func (l *shapeLatch) encode(e *shapeEnc) {
	e.i64(l.streak)
	e.i64(l.first)
	e.bool(l.firing)
	e.i64(l.since)
	e.bool(l.clearing)
	e.i64(l.clearAt)
}

func (l *shapeLatch) decode(d *shapeDec) {
	l.streak = d.i64()
	l.first = d.i64()
	l.firing = d.bool()
	l.since = d.i64()
	l.clearing = d.bool()
	l.clearAt = d.i64()
}
