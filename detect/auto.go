package detect

import (
	"fmt"
	"math"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name: "auto",
		Doc: "Default univariate detector: robust level tracking, an anomaly-likelihood " +
			"layer over the surprise, and a quiet period after each alert.",
		NewConfig: func() Config { c := DefaultAutoConfig(); return &c },
	})
}

// AutoConfig configures the default detector. Lengths are in samples so the
// same config suits any scrape interval.
type AutoConfig struct {
	// Threshold is the score at and above which a sample is anomalous.
	Threshold float64 `yaml:"threshold"`
	// WarmUp is the number of samples before any score is given.
	WarmUp int `yaml:"warm_up"`
	// LevelHalfLife is how fast the expected level follows the series.
	LevelHalfLife float64 `yaml:"level_half_life"`
	// ShortHalfLife and LongHalfLife are the likelihood layer's windows:
	// recent surprise is averaged over the first and judged against its
	// distribution over the second.
	ShortHalfLife float64 `yaml:"short_half_life"`
	LongHalfLife  float64 `yaml:"long_half_life"`
	// Quiet is the number of samples after an alert during which the score
	// is held at zero, so that one incident yields one alert.
	Quiet int `yaml:"quiet"`
}

// DefaultAutoConfig returns the defaults, chosen by measurement on NAB (see
// docs/detectors.md).
func DefaultAutoConfig() AutoConfig {
	return AutoConfig{
		Threshold:     0.5,
		WarmUp:        150,
		LevelHalfLife: 100,
		ShortHalfLife: 2,
		LongHalfLife:  1000,
		Quiet:         200,
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
	if c.Quiet < 0 {
		errs.Addf("quiet", "must not be negative, got %d", c.Quiet)
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

// Auto is the default univariate detector.
type Auto struct {
	cfg   AutoConfig
	level Robust
	lik   Likelihood
	n     uint64
	quiet int
	last  Verdict
}

// NewAuto returns a detector for a valid config.
func NewAuto(c AutoConfig) *Auto {
	return &Auto{
		cfg:   c,
		level: NewRobust(AlphaForHalfLife(c.LevelHalfLife), 3),
		lik:   NewLikelihood(c.ShortHalfLife, c.LongHalfLife, 0.05),
	}
}

// Observe implements Detector.
func (a *Auto) Observe(ts int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(a.last)
	}
	a.n++
	loc, scale := a.level.Loc(), max(a.level.Scale(), scaleFloor(a.level.Loc()))
	z := 0.0
	if a.level.Count() > 0 {
		z = (x - loc) / scale
	}
	a.level.Update(x)
	raw := min(math.Abs(z), 20)
	p := a.lik.Update(raw)

	v := Verdict{
		Expected:  loc,
		Lower:     loc - 3*scale,
		Upper:     loc + 3*scale,
		Direction: direction(x, loc),
		State:     StateNormal,
	}
	switch {
	case a.n <= uint64(a.cfg.WarmUp):
		v.State = StateWarmingUp
	case a.quiet > 0:
		a.quiet--
	default:
		v.Score = LogTailScore(p)
		if v.Score >= a.cfg.Threshold {
			v.State = StateAnomalous
			a.quiet = a.cfg.Quiet
		}
	}
	a.last = v
	return v
}

const autoKind = "auto"

// MarshalBinary implements Detector.
func (a *Auto) MarshalBinary() ([]byte, error) {
	w := newEncoder(autoKind, 256)
	a.encodeConfig(w)
	a.level.encode(w)
	a.lik.encode(w)
	w.u64(a.n)
	w.i64(int64(a.quiet))
	encodeVerdict(w, a.last)
	return w.b, nil
}

// UnmarshalBinary implements Detector.
func (a *Auto) UnmarshalBinary(b []byte) error {
	r, err := newDecoder(autoKind, b)
	if err != nil {
		return err
	}
	a.checkConfig(r)
	a.level.decode(r)
	a.lik.decode(r)
	a.n = r.u64()
	a.quiet = int(r.i64())
	a.last = decodeVerdict(r)
	return r.finish()
}

func (a *Auto) encodeConfig(w *encoder) {
	c := a.cfg
	for _, v := range []float64{c.Threshold, float64(c.WarmUp), c.LevelHalfLife, c.ShortHalfLife, c.LongHalfLife, float64(c.Quiet)} {
		w.f64(v)
	}
}

func (a *Auto) checkConfig(r *decoder) {
	c := a.cfg
	r.configF64("threshold", c.Threshold)
	r.configF64("warm_up", float64(c.WarmUp))
	r.configF64("level_half_life", c.LevelHalfLife)
	r.configF64("short_half_life", c.ShortHalfLife)
	r.configF64("long_half_life", c.LongHalfLife)
	r.configF64("quiet", float64(c.Quiet))
}
