package detect

import (
	"math"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

func init() {
	register(Kind{
		Name: "error_rate",
		Doc: "Fires when the error share of requests is surprisingly high for the " +
			"volume seen (a binomial surprise against the learned share), with floors " +
			"so a handful of errors at night does not page.",
		Signals: []SignalSpec{
			{Name: "errors", Required: true, Doc: "error (5xx) rate or count per evaluation"},
			{Name: "requests", Required: true, Doc: "request rate or count per evaluation, including errors"},
		},
		NewConfig: func() Config { c := shapeErrorRateDefaults(); return &c },
	})
}

// ErrorRateConfig configures the volume-aware error-rate detector.
type ErrorRateConfig struct {
	// Input says what the signals are: "rate" (per second, as from
	// rate(x[RateWindow])) or "count" (events per evaluation, as from
	// increase()).
	Input string `yaml:"input"`
	// RateWindow is the range of the rate() in the expressions; rates are
	// turned into counts over it.
	RateWindow time.Duration `yaml:"rate_window"`
	// Baseline is the time constant of the learned error share.
	Baseline time.Duration `yaml:"baseline"`
	// WarmUp is the number of samples before the detector judges.
	WarmUp int `yaml:"warm_up"`
	// Sigmas is the surprise, as a normal deviate, needed to fire:
	// sqrt(2·n·KL(observed‖expected)/Dispersion).
	Sigmas float64 `yaml:"sigmas"`
	// Dispersion divides the binomial surprise, because real errors come
	// in bursts (overdispersion); 1 is a pure binomial.
	Dispersion float64 `yaml:"dispersion"`
	// MinErrors is the fewest errors in the window that may page.
	MinErrors float64 `yaml:"min_errors"`
	// MinShare is the lowest error share that may page.
	MinShare float64 `yaml:"min_share"`
	// MinRatio is how many times the learned share the current share must be.
	MinRatio float64 `yaml:"min_ratio"`
	// MinBaseline floors the learned share, so a service that never errs
	// does not find a single error infinitely surprising.
	MinBaseline float64 `yaml:"min_baseline"`
	// Confirm is the number of consecutive surprising samples before firing.
	Confirm int `yaml:"confirm"`
	// ResolveAfter is how long the share must stay normal to resolve.
	ResolveAfter time.Duration `yaml:"resolve_after"`
	// RelearnAfter lets the frozen baseline learn again after an anomaly
	// has lasted this long.
	RelearnAfter time.Duration `yaml:"relearn_after"`
}

func shapeErrorRateDefaults() ErrorRateConfig {
	return ErrorRateConfig{
		Input:        "rate",
		RateWindow:   time.Minute,
		Baseline:     time.Hour,
		WarmUp:       30,
		Sigmas:       4,
		Dispersion:   2,
		MinErrors:    5,
		MinShare:     0.01,
		MinRatio:     2,
		MinBaseline:  0.001,
		Confirm:      2,
		ResolveAfter: time.Minute,
		RelearnAfter: 2 * time.Hour,
	}
}

// Validate reports every problem, named by YAML key.
func (c *ErrorRateConfig) Validate() error {
	var errs configutil.Errors
	shapeCheckCommon(&errs, c.Baseline, c.WarmUp, c.Sigmas, c.Confirm, c.ResolveAfter, c.RelearnAfter)
	if c.Input != "rate" && c.Input != "count" {
		errs.Addf("input", `must be "rate" or "count", got %q`, c.Input)
	}
	if c.Input == "rate" && c.RateWindow < time.Second {
		errs.Addf("rate_window", "must be at least 1s when input is rate, got %v", c.RateWindow)
	}
	if !(c.Dispersion >= 1) {
		errs.Addf("dispersion", "must be at least 1, got %v", c.Dispersion)
	}
	if !(c.MinErrors >= 0) {
		errs.Addf("min_errors", "must not be negative, got %v", c.MinErrors)
	}
	if !(c.MinShare >= 0 && c.MinShare < 1) {
		errs.Addf("min_share", "must be in [0, 1), got %v", c.MinShare)
	}
	if !(c.MinRatio >= 1) {
		errs.Addf("min_ratio", "must be at least 1, got %v", c.MinRatio)
	}
	if !(c.MinBaseline > 0 && c.MinBaseline < 1) {
		errs.Addf("min_baseline", "must be in (0, 1), got %v", c.MinBaseline)
	}
	return errs.Err()
}

// New builds an ErrorRate detector.
func (c *ErrorRateConfig) New() (Composite, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &ErrorRate{cfg: *c}, nil
}

// ErrorRate detects a rise in the error share that is surprising for the
// volume seen. The expected share p0 is a volume-weighted EWMA (errors and
// requests decayed with the same time constant); the surprise of k errors in
// n requests is the binomial large-deviation bound n·KL(k/n‖p0), reported
// as the normal deviate sqrt(2·n·KL/Dispersion). Paging also needs
// MinErrors errors, MinShare share and MinRatio × p0, which keeps
// one error in three requests at night quiet.
type ErrorRate struct {
	cfg ErrorRateConfig

	errSum, reqSum float64 // decayed sums
	n              int64
	shapeLatch
	carried int
	last    Result
}

var _ Composite = (*ErrorRate)(nil)

// shapeBinomZ is the upward surprise of k successes in n trials against
// probability p, as a normal deviate: sqrt(2·n·KL(k/n‖p)) when k/n > p, else 0.
func shapeBinomZ(k, n, p float64) float64 {
	if n <= 0 || p <= 0 || p >= 1 {
		return 0
	}
	q := k / n
	if q <= p {
		return 0
	}
	kl := q * math.Log(q/p)
	if q < 1 {
		kl += (1 - q) * math.Log((1-q)/(1-p))
	}
	return math.Sqrt(2 * n * math.Max(0, kl))
}

func (e *ErrorRate) p0() float64 {
	if e.reqSum <= 0 {
		return e.cfg.MinBaseline
	}
	return math.Max(e.cfg.MinBaseline, e.errSum/e.reqSum)
}

// Observe judges one evaluation instant.
func (e *ErrorRate) Observe(ts int64, in Inputs) Result {
	c := &e.cfg
	warm := e.n >= int64(c.WarmUp)
	ev, okE := shapeScalar(in["errors"])
	rv, okR := shapeScalar(in["requests"])
	if !okR || rv < 0 {
		e.last = shapeCarry(&e.last, &e.carried, warm)
		return e.last
	}
	if !okE {
		// An absent error series is no errors: PromQL returns nothing for a
		// status code that never occurred.
		ev = 0
	}
	e.carried = 0
	step := e.tick(ts)
	scale := 1.0
	if c.Input == "rate" {
		scale = c.RateWindow.Seconds()
	}
	n := rv * scale
	k := math.Min(math.Max(0, ev*scale), n)
	p0 := e.p0()
	share := 0.0
	if n > 0 {
		share = k / n
	}
	z := shapeBinomZ(k, n, p0) / math.Sqrt(c.Dispersion)
	cond := warm && z >= c.Sigmas && k >= c.MinErrors && share >= c.MinShare && share >= c.MinRatio*p0

	// The verdict's band is in the unit of the first signal, errors: what
	// the learned share expects at the current volume, and the error level
	// at which the share floors start to allow a page.
	r := Result{Verdict: Verdict{
		Score: shapeScore(z), Expected: p0 * rv, Lower: 0,
		Upper: math.Max(c.MinShare, c.MinRatio*p0) * rv, State: StateNormal,
	}}
	switch {
	case share > p0:
		r.Direction = DirUp
	case share < p0:
		r.Direction = DirDown
	}
	if !warm {
		r.State, r.Score = StateWarmingUp, 0
	} else if e.step(ts, cond, c.Confirm, c.ResolveAfter) {
		r.State = StateAnomalous
		r.Explanation = e.explain(ts, k, n, share, p0, z, r, cond)
	}
	if e.learning(ts, c.RelearnAfter) {
		e.learn(step, k, n, p0)
	}
	e.last = r
	return r
}

// learn folds the window into the decayed sums. Errors above MinRatio × p0
// are clipped so a burst moves the baseline only a little.
func (e *ErrorRate) learn(step int64, k, n, p0 float64) {
	c := &e.cfg
	if e.n >= int64(c.WarmUp) {
		k = math.Min(k, n*p0*c.MinRatio)
	}
	decay := 1 - shapeAlpha(step, c.Baseline)
	e.errSum = e.errSum*decay + k
	e.reqSum = e.reqSum*decay + n
	e.n++
}

func (e *ErrorRate) explain(ts int64, k, n, share, p0, z float64, r Result, cond bool) *model.Explanation {
	c := &e.cfg
	tail := ": far beyond chance at this volume (surprise " + shapeNum(z) + " σ)"
	if !cond {
		tail = ": easing, holding " + shapeDur(c.ResolveAfter.Milliseconds()) + " before resolving"
	}
	win := "evaluation"
	if c.Input == "rate" {
		win = shapeDur(c.RateWindow.Milliseconds())
	}
	return &model.Explanation{
		Detector: "error_rate", Kind: "error_rate", Score: r.Score, Direction: "up",
		Signals: []model.Signal{
			{Name: "errors", Unit: "ratio", Current: share, Expected: p0, Lower: 0, Upper: math.Max(c.MinShare, c.MinRatio*p0)},
			{Name: "requests", Unit: "", Current: n, Expected: n, Lower: 0, Upper: n},
		},
		Cause: "the service is failing a rising share of requests",
		Summary: "errors " + shapeVal(share, "ratio") + " of requests (" + shapeNum(k) + " of " + shapeNum(n) +
			" in the last " + win + "; normal " + shapeVal(p0, "ratio") + ", about " + shapeNum(p0*n) +
			" expected) for " + shapeDur(ts-e.since) + tail,
	}
}

func (c *ErrorRateConfig) fields() []configField {
	count := 0.0
	if c.Input == "count" {
		count = 1
	}
	return []configField{
		{"input", count}, {"rate_window", shapeMs(c.RateWindow)}, {"baseline", shapeMs(c.Baseline)},
		{"warm_up", float64(c.WarmUp)}, {"sigmas", c.Sigmas}, {"dispersion", c.Dispersion},
		{"min_errors", c.MinErrors}, {"min_share", c.MinShare}, {"min_ratio", c.MinRatio},
		{"min_baseline", c.MinBaseline}, {"confirm", float64(c.Confirm)},
		{"resolve_after", shapeMs(c.ResolveAfter)}, {"relearn_after", shapeMs(c.RelearnAfter)},
	}
}

// MarshalBinary snapshots the detector state.
func (e *ErrorRate) MarshalBinary() ([]byte, error) {
	w := newEncoder("error_rate", 256)
	encodeConfig(w, e.cfg.fields())
	w.f64(e.errSum)
	w.f64(e.reqSum)
	w.i64(e.n)
	e.shapeLatch.encode(w)
	w.i64(int64(e.carried))
	if err := shapePutResult(w, &e.last); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary restores a snapshot made by MarshalBinary with the same
// config; it wraps ErrSnapshot otherwise.
func (e *ErrorRate) UnmarshalBinary(b []byte) error {
	r, err := newDecoder("error_rate", b)
	if err != nil {
		return err
	}
	checkConfig(r, e.cfg.fields())
	n := ErrorRate{cfg: e.cfg}
	n.errSum = r.f64()
	n.reqSum = r.f64()
	n.n = r.i64()
	n.shapeLatch.decode(r)
	n.carried = int(r.i64())
	n.last = shapeGetResult(r)
	if err := r.finish(); err != nil {
		return err
	}
	*e = n
	return nil
}
