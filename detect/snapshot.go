package detect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Snapshots are: one format version byte, the kind name (length-prefixed),
// then the detector's fixed fields little-endian (float64 as IEEE bits,
// counters as uint64), config first so that a snapshot from a different
// config is refused. Bump snapshotVersion when any layout changes.
const snapshotVersion = 43 // 2: auto keeps the time of its first sample; storm and surge remember their episode. 3: auto's spike path and the level at its records. 4: auto's peak below the threshold. 5: auto's offsets from the level per time of day. 6: auto's slope. 7: auto's spike-path excursion length. 8: auto's previous timestamp. 9: auto's day profile and time zone. 10: the profile's week. 11: auto's departures from a repeated value. 12: auto's schedule of excursions. 13: whether the excursion under way was checked against it. 14: which of the schedule's excursions would alert. 15: auto's spike baseline's trend. 16: auto's count of jumps. 17: auto's sampling interval. 18: the profile's rise per day and its slices' ages. 19: whether auto's records were set in an episode. 20: auto's previous change from the sample before. 21: auto's spike-path crossings by time of day. 22: the lattice of auto's counts. 23: the cycle auto found in a series without a clock. 24: auto's last jumps, for steps the day repeats. 25: the value such a step left. 26: the bar a glitch-sized record replaced. 27: the plain kinds' range of values. 28: auto's run towards a new regime. 29: whether auto's wild record was a drop to 0. 30: the zeros held after it. 31: when auto's series last fell to 0. 32: finer than a minute, how well the level and the hour predict each slice. 33: a run of gaps towards a new interval. 34: the normal at auto's latest alert, while the series lingers away from it. 35: auto's run of repeated values. 36: auto's frozen_runs in its config. 37: finer than a minute, the slices auto keeps a day after an incident. 38: the step auto's changes agree on off a lattice. 39: the extremes of auto's run towards a new regime, and whether a record's bar is one. 40: the line through that run's samples. 41: auto's slow level, for a lasting fall in scale. 42: whether auto's run towards a new regime began on its time of day alone. 43: where auto's spike rate counts from, and its counts at the start of a run towards a new regime

// snapshotOldest is the oldest format restored. A change that appends
// fields with a neutral value (one that a series without them has)
// reads the format before it as well, so that an upgrade across it
// keeps what every detector has learnt; any other change sets it to
// snapshotVersion, and an upgrade across that starts detectors cold.
// 33 is read as 34 with no normal remembered at an alert, and 33 and
// 34 as 35 with no run of repeats counted: runs are judged from a day
// after the latest sample the snapshot kept (see frozen). Formats before
// 36 have no frozen_runs in auto's config, and are read as made with its
// default; formats before 37 as keeping no slices after an incident,
// before 38 as having seen no step off a lattice, before 39 as keeping
// no extremes of a run towards a new regime, and before 40 as keeping no
// line through that run (its samples so far count at the run's means).
const snapshotOldest = 33

// ErrSnapshot is wrapped by every snapshot restore error.
var ErrSnapshot = errors.New("invalid detector snapshot")

type encoder struct{ b []byte }

func newEncoder(kind string, capacity int) *encoder {
	e := &encoder{b: make([]byte, 0, capacity+2+len(kind))}
	e.b = append(e.b, snapshotVersion, byte(len(kind)))
	e.b = append(e.b, kind...)
	return e
}

func (e *encoder) u64(v uint64)  { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) f64(v float64) { e.u64(math.Float64bits(v)) }
func (e *encoder) f32(v float32) { e.u32(math.Float32bits(v)) }
func (e *encoder) u32(v uint32)  { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) i64(v int64)   { e.u64(uint64(v)) }
func (e *encoder) u8(v uint8)    { e.b = append(e.b, v) }
func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// str writes a length and the bytes of v.
func (e *encoder) str(v string) {
	e.u64(uint64(len(v)))
	e.b = append(e.b, v...)
}

type decoder struct {
	b       []byte
	err     error
	version byte // the snapshot's format, snapshotOldest to snapshotVersion
}

// newDecoder checks the version and kind header.
func newDecoder(kind string, b []byte) (*decoder, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%w: too short", ErrSnapshot)
	}
	if b[0] < snapshotOldest || b[0] > snapshotVersion {
		return nil, fmt.Errorf("%w: version %d, want %d to %d", ErrSnapshot, b[0], snapshotOldest, snapshotVersion)
	}
	n := int(b[1])
	if len(b) < 2+n {
		return nil, fmt.Errorf("%w: truncated kind", ErrSnapshot)
	}
	if got := string(b[2 : 2+n]); got != kind {
		return nil, fmt.Errorf("%w: made by detector %q, not %q", ErrSnapshot, got, kind)
	}
	return &decoder{b: b[2+n:], version: b[0]}, nil
}

// take returns the next n bytes, or nil (recording the error) when
// fewer are left.
func (d *decoder) take(n int) []byte {
	if len(d.b) < n {
		if d.err == nil {
			d.err = fmt.Errorf("%w: truncated", ErrSnapshot)
		}
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) f64() float64 { return math.Float64frombits(d.u64()) }
func (d *decoder) i64() int64   { return int64(d.u64()) }

func (d *decoder) f32() float32 { return math.Float32frombits(d.u32()) }

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// u8 reads what encoder.u8 wrote (0 once the input is short).
func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// str reads what encoder.str wrote.
func (d *decoder) str() string {
	n := d.u64()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: truncated", ErrSnapshot)
		return ""
	}
	v := string(d.b[:n])
	d.b = d.b[n:]
	return v
}

// configStr is configF64 for a string field.
func (d *decoder) configStr(name, want string) {
	if got := d.str(); d.err == nil && got != want {
		d.err = fmt.Errorf("%w: made with %s=%q, this detector has %q", ErrSnapshot, name, got, want)
	}
}

// configMatches records an error when a snapshot's config field differs
// from the detector's own.
func (d *decoder) configF64(name string, want float64) {
	if got := d.f64(); d.err == nil && got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
		d.err = fmt.Errorf("%w: made with %s=%v, this detector has %v", ErrSnapshot, name, got, want)
	}
}

// finish reports the first decoding error or trailing bytes.
func (d *decoder) finish() error {
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrSnapshot, len(d.b))
	}
	return nil
}

// errorf builds an ErrSnapshot error.
func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSnapshot}, args...)...)
}

func encodeVerdict(w *encoder, v Verdict) {
	w.f64(v.Score)
	w.f64(v.Expected)
	w.f64(v.Lower)
	w.f64(v.Upper)
	w.i64(int64(v.Direction))
	w.u64(uint64(v.State))
}

func decodeVerdict(r *decoder) Verdict {
	return Verdict{
		Score:     r.f64(),
		Expected:  r.f64(),
		Lower:     r.f64(),
		Upper:     r.f64(),
		Direction: Direction(r.i64()),
		State:     State(r.u64()),
	}
}

// configField is one config value recorded in a snapshot so that restoring
// into a detector with a different config is refused.
type configField struct {
	name string
	v    float64
}

func encodeConfig(w *encoder, fields []configField) {
	w.u64(uint64(len(fields)))
	for _, f := range fields {
		w.f64(f.v)
	}
}

func checkConfig(r *decoder, fields []configField) {
	if n := r.u64(); r.err == nil && n != uint64(len(fields)) {
		r.err = errorf("%d config fields, this detector has %d", n, len(fields))
		return
	}
	for _, f := range fields {
		r.configF64(f.name, f.v)
	}
}
