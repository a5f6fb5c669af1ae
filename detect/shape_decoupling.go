package detect

import (
	"math"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

func init() {
	register(Kind{
		Name: "decoupling",
		Doc: "Fires when a symptom (latency, queue, in-flight requests) departs from its " +
			"baseline while the resource that should explain it (CPU) stays flat: " +
			"requests are waiting, not computing.",
		Signals: []SignalSpec{
			{Name: "symptom", Required: true, Doc: "what users feel: p99 latency, queue length or in-flight requests"},
			{Name: "resource", Required: true, Doc: "what should rise with the symptom under plain overload: CPU cores or utilisation"},
			{Name: "traffic", Doc: "request rate; a symptom rise matched by a traffic rise is not decoupling"},
		},
		NewConfig: func() Config { c := shapeDecouplingDefaults(); return &c },
	})
}

// DecouplingConfig configures the "latency up, CPU flat" detector.
type DecouplingConfig struct {
	// Baseline is the time constant of the symptom, resource and traffic
	// baselines.
	Baseline time.Duration `yaml:"baseline"`
	// WarmUp is the number of samples before the detector judges.
	WarmUp int `yaml:"warm_up"`
	// Sigmas is the symptom z-score (standard deviations above its
	// baseline) needed to call the symptom up.
	Sigmas float64 `yaml:"sigmas"`
	// MinRatio is the symptom's minimum rise as a multiple of its baseline,
	// so a very steady series does not fire on a tiny absolute change.
	MinRatio float64 `yaml:"min_ratio"`
	// ResourceRatio is the multiple of its baseline at which the resource
	// counts as having moved with the symptom (plain overload: no fire).
	// A traffic rise of this multiple that explains the symptom also
	// suppresses firing.
	ResourceRatio float64 `yaml:"resource_ratio"`
	// Capacity is the resource's capacity in its own unit (cores, or 1 for
	// utilisation); 0 means unknown. When it is known, a resource at
	// CapacityShare of it is saturated (overload, not decoupling), and a
	// resource rise only counts while the resource is above half of
	// CapacityShare: a CPU going from 5 % to 10 % is still well below
	// capacity, so latency up is still decoupled from it.
	Capacity      float64 `yaml:"capacity"`
	CapacityShare float64 `yaml:"capacity_share"`
	// MinSymptom is the lowest symptom value that may fire, in the
	// symptom's unit; set it for symptoms that are normally zero, such as
	// a queue length, so that one queued request does not fire.
	MinSymptom float64 `yaml:"min_symptom"`
	// Lag is how long the symptom may trail the resource and traffic: the
	// longest window in the signals' expressions (the rate() range of a
	// histogram quantile), plus the time a queue takes to drain. A
	// resource that moved, or a traffic peak that explains the symptom,
	// within the last Lag still counts: after a surge, latency measured
	// over a one-minute window stays high for up to a minute after CPU
	// and traffic are back to normal, and that is overload draining, not
	// decoupling. 0 judges each sample on its own.
	Lag time.Duration `yaml:"lag"`
	// Confirm is the number of consecutive decoupled samples before firing.
	Confirm int `yaml:"confirm"`
	// ResolveAfter is how long the condition must stay clear to resolve.
	ResolveAfter time.Duration `yaml:"resolve_after"`
	// RelearnAfter lets the frozen baselines learn again after an anomaly
	// has lasted this long, so a deliberate new level eventually resolves.
	RelearnAfter time.Duration `yaml:"relearn_after"`
	// Names and units used in the explanation.
	SymptomName  string `yaml:"symptom_name"`
	SymptomUnit  string `yaml:"symptom_unit"`
	ResourceName string `yaml:"resource_name"`
	ResourceUnit string `yaml:"resource_unit"`
}

func shapeDecouplingDefaults() DecouplingConfig {
	return DecouplingConfig{
		Baseline:      30 * time.Minute,
		WarmUp:        30,
		Sigmas:        4,
		MinRatio:      1.5,
		ResourceRatio: 1.25,
		CapacityShare: 0.8,
		Lag:           time.Minute,
		Confirm:       2,
		ResolveAfter:  time.Minute,
		RelearnAfter:  2 * time.Hour,
		SymptomName:   "p99 latency",
		SymptomUnit:   "s",
		ResourceName:  "CPU",
		ResourceUnit:  "cores",
	}
}

// Validate reports every problem, named by YAML key.
func (c *DecouplingConfig) Validate() error {
	var errs configutil.Errors
	shapeCheckCommon(&errs, c.Baseline, c.WarmUp, c.Sigmas, c.Confirm, c.ResolveAfter, c.RelearnAfter)
	if !(c.MinRatio >= 1) {
		errs.Addf("min_ratio", "must be at least 1, got %v", c.MinRatio)
	}
	if !(c.ResourceRatio > 1) {
		errs.Addf("resource_ratio", "must be greater than 1, got %v", c.ResourceRatio)
	}
	if !(c.Capacity >= 0) {
		errs.Addf("capacity", "must be 0 (unknown) or positive, got %v", c.Capacity)
	}
	if c.Lag < 0 {
		errs.Addf("lag", "must not be negative, got %v", c.Lag)
	}
	if !(c.MinSymptom >= 0) {
		errs.Addf("min_symptom", "must not be negative, got %v", c.MinSymptom)
	}
	if !(c.CapacityShare > 0 && c.CapacityShare <= 1) {
		errs.Addf("capacity_share", "must be in (0, 1], got %v", c.CapacityShare)
	}
	return errs.Err()
}

// New builds a Decoupling detector.
func (c *DecouplingConfig) New() (Composite, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Decoupling{cfg: *c}, nil
}

// Decoupling detects saturation without CPU: the symptom rises far above its
// baseline while the resource stays within ResourceRatio of its own (and
// below capacity) and traffic does not explain the rise. Baselines are
// winsorised EWMAs, frozen while the detector is pending or firing.
type Decoupling struct {
	cfg DecouplingConfig

	sym, res, tr shapeBaseline
	shapeLatch
	// resAt is the last time the resource clearly moved (resSeen: ever);
	// trPeak is the highest clear traffic ratio since trPeakAt, restarted
	// once older than Lag (trSeen: ever).
	resAt, trPeakAt int64
	trPeak          float64
	resSeen, trSeen bool
	carried         int
	last            Result
}

var _ Composite = (*Decoupling)(nil)

// The symptom baseline lives in log space (see shapeLogBaseline); symOff
// keeps the log finite for a symptom that can be zero.
func (d *Decoupling) symOff() float64 { return math.Max(d.cfg.MinSymptom, 1e-9) }

func (d *Decoupling) symLog(v float64) float64 { return shapeLog(v, d.symOff()) }

// symExpected is the symptom's baseline in its own unit (a geometric mean).
func (d *Decoupling) symExpected() float64 { return shapeLogExpected(&d.sym, d.symOff()) }

// symAt is the symptom value k log-space standard deviations from the
// baseline.
func (d *Decoupling) symAt(k float64) float64 { return shapeLogAt(&d.sym, k, d.symOff()) }

// Observe judges one evaluation instant.
func (d *Decoupling) Observe(ts int64, in Inputs) Result {
	c := &d.cfg
	sym, okS := shapeScalar(in["symptom"])
	res, okR := shapeScalar(in["resource"])
	tr, okT := shapeScalar(in["traffic"])
	warm := d.sym.n >= int64(c.WarmUp) && d.res.n >= int64(c.WarmUp)
	if !okS || !okR {
		d.last = shapeCarry(&d.last, &d.carried, warm)
		return d.last
	}
	d.carried = 0
	step := d.tick(ts)

	lsym := d.symLog(sym)
	zS := d.sym.z(lsym, 0, shapeLogFloor)
	rS := sym / d.symExpected()
	if d.symExpected() <= 0 {
		rS = math.Inf(1)
	}
	rR := d.res.ratio(res)
	resMoved := rR >= c.ResourceRatio
	if c.Capacity > 0 {
		resMoved = res >= c.CapacityShare*c.Capacity || (resMoved && res >= c.CapacityShare*c.Capacity/2)
	}
	// Only a clear rise, beyond the resource's own noise (Sigmas), is
	// remembered for Lag: a busy CPU's ordinary jitter must not mask a
	// real decoupling for a whole window.
	lag := c.Lag.Milliseconds()
	if resMoved && warm && d.res.z(res, shapeFloorRel, shapeFloorAbs) >= c.Sigmas {
		d.resAt, d.resSeen = ts, true
	}
	if !resMoved && d.resSeen && ts-d.resAt <= lag {
		// The symptom's window still holds the time the resource was up.
		resMoved = true
	}
	rT := 1.0
	if okT && d.tr.n >= int64(c.WarmUp) {
		rT = d.tr.ratio(tr)
		peak := 1.0
		if d.tr.z(tr, shapeFloorRel, shapeFloorAbs) >= c.Sigmas {
			peak = rT
		}
		if !d.trSeen || peak >= d.trPeak || ts-d.trPeakAt > lag {
			d.trPeak, d.trPeakAt, d.trSeen = peak, ts, true
		}
	}
	rTx := rT
	if d.trSeen && ts-d.trPeakAt <= lag {
		rTx = math.Max(rT, d.trPeak)
	}
	explained := rTx >= c.ResourceRatio && rS < rTx*c.MinRatio
	cond := warm && zS >= c.Sigmas && rS >= c.MinRatio && sym >= c.MinSymptom && !resMoved && !explained

	r := Result{Verdict: Verdict{
		Expected:  d.symExpected(),
		Lower:     d.symAt(-c.Sigmas),
		Upper:     d.symAt(c.Sigmas),
		State:     StateNormal,
		Direction: DirNone,
	}}
	if !resMoved && !explained {
		r.Score = shapeScore(zS)
	}
	if zS > 0 {
		r.Direction = DirUp
	} else if zS < 0 {
		r.Direction = DirDown
	}

	if !warm {
		r.State, r.Score = StateWarmingUp, 0
	} else if d.step(ts, cond, c.Confirm, c.ResolveAfter) {
		r.State = StateAnomalous
		r.Explanation = d.explain(ts, sym, res, tr, okT, rS, rT, r.Score, cond)
	}
	if d.learning(ts, c.RelearnAfter) {
		d.sym.update(step, lsym, c.Baseline, c.Sigmas, 0, shapeLogFloor, c.WarmUp)
		d.res.update(step, res, c.Baseline, c.Sigmas, shapeFloorRel, shapeFloorAbs, c.WarmUp)
		if okT {
			d.tr.update(step, tr, c.Baseline, c.Sigmas, shapeFloorRel, shapeFloorAbs, c.WarmUp)
		}
	}
	d.last = r
	return r
}

func (d *Decoupling) explain(ts int64, sym, res, tr float64, okT bool, rS, rT, score float64, cond bool) *model.Explanation {
	c := &d.cfg
	sd := d.symAt(1) - d.symExpected()
	x := &model.Explanation{
		Detector:  "decoupling",
		Kind:      "saturation_without_cpu",
		Score:     score,
		Direction: "up",
		Signals: []model.Signal{
			{Name: "symptom", Unit: c.SymptomUnit, Current: sym, Expected: d.symExpected(),
				Lower: d.symAt(-c.Sigmas), Upper: d.symAt(c.Sigmas)},
			shapeSignal("resource", c.ResourceUnit, res, &d.res, c.Sigmas, shapeFloorRel, shapeFloorAbs),
		},
		Cause: "requests are waiting on a limit (workers, threads, connection pool), not on " + c.ResourceName,
	}
	s := c.SymptomName + " " + shapeVal(sym, c.SymptomUnit) +
		" (normal " + shapeVal(d.symExpected(), c.SymptomUnit) + " " + shapeSpread(sd, c.SymptomUnit) +
		shapeTimes(rS) + ") while " + c.ResourceName + " " + shapeVal(res, c.ResourceUnit) +
		" (normal " + shapeVal(d.res.mean, c.ResourceUnit) + ")"
	if okT && d.tr.n > 0 {
		x.Signals = append(x.Signals, shapeSignal("traffic", "req/s", tr, &d.tr, c.Sigmas, shapeFloorRel, shapeFloorAbs))
		s += " and traffic " + shapeNum(rT) + "× normal"
	}
	if !cond {
		s += ", easing (holding " + shapeDur(c.ResolveAfter.Milliseconds()) + " before resolving)"
	}
	s += " for " + shapeDur(ts-d.since) +
		": requests are waiting, not computing — check worker, thread and connection-pool limits; " +
		c.ResourceName + "-based autoscaling will not react"
	x.Summary = s
	return x
}

func (c *DecouplingConfig) fields() []configField {
	return []configField{
		{"baseline", shapeMs(c.Baseline)}, {"warm_up", float64(c.WarmUp)}, {"sigmas", c.Sigmas},
		{"min_ratio", c.MinRatio}, {"resource_ratio", c.ResourceRatio}, {"capacity", c.Capacity},
		{"capacity_share", c.CapacityShare}, {"lag", shapeMs(c.Lag)}, {"min_symptom", c.MinSymptom}, {"confirm", float64(c.Confirm)},
		{"resolve_after", shapeMs(c.ResolveAfter)}, {"relearn_after", shapeMs(c.RelearnAfter)},
	}
}

// MarshalBinary snapshots the detector state.
func (d *Decoupling) MarshalBinary() ([]byte, error) {
	w := newEncoder("decoupling", 256)
	encodeConfig(w, d.cfg.fields())
	d.sym.encode(w)
	d.res.encode(w)
	d.tr.encode(w)
	d.shapeLatch.encode(w)
	w.i64(d.resAt)
	w.i64(d.trPeakAt)
	w.f64(d.trPeak)
	w.bool(d.resSeen)
	w.bool(d.trSeen)
	w.i64(int64(d.carried))
	if err := shapePutResult(w, &d.last); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary restores a snapshot made by MarshalBinary with the same
// config; it wraps ErrSnapshot otherwise.
func (d *Decoupling) UnmarshalBinary(b []byte) error {
	r, err := newDecoder("decoupling", b)
	if err != nil {
		return err
	}
	checkConfig(r, d.cfg.fields())
	n := Decoupling{cfg: d.cfg}
	n.sym.decode(r)
	n.res.decode(r)
	n.tr.decode(r)
	n.shapeLatch.decode(r)
	n.resAt = r.i64()
	n.trPeakAt = r.i64()
	n.trPeak = r.f64()
	n.resSeen = r.bool()
	n.trSeen = r.bool()
	n.carried = int(r.i64())
	n.last = shapeGetResult(r)
	if err := r.finish(); err != nil {
		return err
	}
	*d = n
	return nil
}
