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
	return &madDetector{cfg: *c, stats: NewRobust(AlphaForHalfLife(c.HalfLife), 3)}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *MADConfig) AlertThreshold() float64 { return c.Threshold }

func (c *MADConfig) fields() []configField {
	return []configField{{"half_life", c.HalfLife}, {"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type madDetector struct {
	cfg   MADConfig
	stats Robust
	last  Verdict
}

func (d *madDetector) Observe(_ int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	mean := d.stats.Loc()
	scale := max(d.stats.Scale(), scaleFloor(mean))
	v := bandVerdict(x, mean, scale, d.cfg.Band, zScore((x-mean)/scale))
	warm := d.stats.Count() >= uint64(d.cfg.WarmUp)
	settle(&v, warm, d.cfg.Threshold)
	d.stats.Update(x)
	d.last = v
	return v
}

const madKind = "mad"

func (d *madDetector) MarshalBinary() ([]byte, error) {
	w := newEncoder(madKind, 128)
	encodeConfig(w, d.cfg.fields())
	d.stats.encode(w)
	encodeVerdict(w, d.last)
	return w.b, nil
}

func (d *madDetector) UnmarshalBinary(b []byte) error {
	r, err := newDecoder(madKind, b)
	if err != nil {
		return err
	}
	checkConfig(r, d.cfg.fields())
	d.stats.decode(r)
	d.last = decodeVerdict(r)
	return r.finish()
}
