package detect

import (
	"fmt"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name:      "ewma",
		Doc:       "Deviation from an exponentially weighted mean, in exponentially weighted standard deviations.",
		NewConfig: func() Config { c := DefaultEWMAConfig(); return &c },
	})
}

// EWMAConfig configures the EWMA detector.
type EWMAConfig struct {
	// HalfLife is how many samples it takes the baseline to half forget.
	HalfLife float64 `yaml:"half_life"`
	// WarmUp is the number of samples before any score is given.
	WarmUp int `yaml:"warm_up"`
	// Threshold is the score at and above which a sample is anomalous
	// (0.5 is about 4.4 standard deviations).
	Threshold float64 `yaml:"threshold"`
	// Band is the half-width of the reported normal band in standard
	// deviations.
	Band float64 `yaml:"band"`
}

// DefaultEWMAConfig returns the defaults.
func DefaultEWMAConfig() EWMAConfig {
	return EWMAConfig{HalfLife: 50, WarmUp: 30, Threshold: 0.5, Band: 3}
}

// Validate reports every invalid field.
func (c *EWMAConfig) Validate() error {
	var errs configutil.Errors
	checkHalfLife(&errs, "half_life", c.HalfLife)
	checkCommon(&errs, c.Threshold, c.WarmUp, c.Band)
	return errs.Err()
}

// New builds a detector.
func (c *EWMAConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("ewma detector: %w", err)
	}
	return &ewmaDetector{locScale: newLocScale("ewma", c.WarmUp, c.Threshold, c.Band, c.fields()), stats: NewEWMA(AlphaForHalfLife(c.HalfLife))}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *EWMAConfig) AlertThreshold() float64 { return c.Threshold }

func (c *EWMAConfig) fields() []configField {
	return []configField{{"half_life", c.HalfLife}, {"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type ewmaDetector struct {
	locScale
	stats EWMA
}

func (d *ewmaDetector) Observe(_ int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	loc := d.stats.Mean()
	scale := max(d.stats.Std(), d.rng.floor(loc, d.stats.Count() >= d.warmUp))
	v := bandVerdict(x, loc, scale, d.band, zScore((x-loc)/scale))
	settle(&v, d.stats.Count() >= d.warmUp, d.threshold)
	v.Evidence = scored(v.Score, EvidenceSpike)
	d.stats.Update(x)
	d.rng.observe(x)
	d.last = v
	return v
}

func (d *ewmaDetector) MarshalBinary() ([]byte, error) { return d.marshal(&d.stats) }

func (d *ewmaDetector) UnmarshalBinary(b []byte) error { return d.unmarshal(b, &d.stats) }
