package detect

import (
	"fmt"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name:      "mad",
		Doc:       "Deviation from a robust location in robust scale units: a single outlier barely moves the baseline.",
		NewConfig: func() Config { c := DefaultMADConfig(); return &c },
	})
}

// MADConfig configures the MAD detector: a robust (Huber) baseline whose outliers do not drag it.
type MADConfig struct {
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

// DefaultMADConfig returns the defaults.
func DefaultMADConfig() MADConfig {
	return MADConfig{HalfLife: 100, WarmUp: 30, Threshold: 0.5, Band: 3}
}

// Validate reports every invalid field.
func (c *MADConfig) Validate() error {
	var errs configutil.Errors
	checkHalfLife(&errs, "half_life", c.HalfLife)
	checkCommon(&errs, c.Threshold, c.WarmUp, c.Band)
	return errs.Err()
}

// New builds a detector.
func (c *MADConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("mad detector: %w", err)
	}
	return &madDetector{locScale: newLocScale("mad", c.WarmUp, c.Threshold, c.Band, c.fields()), stats: NewRobust(AlphaForHalfLife(c.HalfLife), 3)}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *MADConfig) AlertThreshold() float64 { return c.Threshold }

func (c *MADConfig) fields() []configField {
	return []configField{{"half_life", c.HalfLife}, {"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type madDetector struct {
	locScale
	stats Robust
}

func (d *madDetector) Observe(_ int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	loc := d.stats.Loc()
	scale := max(d.stats.Scale(), d.rng.floor(loc, d.stats.Count() >= d.warmUp))
	v := bandVerdict(x, loc, scale, d.band, zScore((x-loc)/scale))
	settle(&v, d.stats.Count() >= d.warmUp, d.threshold)
	v.Evidence = scored(v.Score, EvidenceSpike)
	d.stats.Update(x)
	d.rng.observe(x)
	d.last = v
	return v
}

func (d *madDetector) MarshalBinary() ([]byte, error) { return d.marshal(&d.stats) }

func (d *madDetector) UnmarshalBinary(b []byte) error { return d.unmarshal(b, &d.stats) }
