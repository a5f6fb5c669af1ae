package detect

import (
	"fmt"

	"github.com/seismo-agent/seismo/internal/configutil"
)

func init() {
	register(Kind{
		Name: "cusum",
		Doc: "Two-sided CUSUM over deviations from a slow robust baseline: finds small, " +
			"lasting level shifts that no single sample reveals.",
		NewConfig: func() Config { c := DefaultCUSUMConfig(); return &c },
	})
}

// CUSUMConfig configures the CUSUM change detector.
type CUSUMConfig struct {
	// HalfLife is how many samples it takes the baseline to half forget;
	// it should be long against the shifts to find.
	HalfLife float64 `yaml:"half_life"`
	// Slack is half the shift to detect, in standard deviations.
	Slack float64 `yaml:"slack"`
	// Decision is the cumulative evidence (in standard deviations) at which
	// a change is declared; the score is 0.5 there.
	Decision float64 `yaml:"decision"`
	// WarmUp is the number of samples before any score is given.
	WarmUp int `yaml:"warm_up"`
	// Threshold is the score at and above which a sample is anomalous.
	Threshold float64 `yaml:"threshold"`
	// Band is the half-width of the reported normal band in standard
	// deviations.
	Band float64 `yaml:"band"`
}

// DefaultCUSUMConfig returns the defaults.
func DefaultCUSUMConfig() CUSUMConfig {
	return CUSUMConfig{HalfLife: 500, Slack: 0.5, Decision: 8, WarmUp: 60, Threshold: 0.5, Band: 3}
}

// Validate reports every invalid field.
func (c *CUSUMConfig) Validate() error {
	var errs configutil.Errors
	checkHalfLife(&errs, "half_life", c.HalfLife)
	if !(c.Slack >= 0) {
		errs.Addf("slack", "must not be negative, got %v", c.Slack)
	}
	if !(c.Decision > 0) {
		errs.Addf("decision", "must be positive, got %v", c.Decision)
	}
	checkCommon(&errs, c.Threshold, c.WarmUp, c.Band)
	return errs.Err()
}

// New builds a detector.
func (c *CUSUMConfig) New() (Detector, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("cusum detector: %w", err)
	}
	return &cusumDetector{
		cfg:   *c,
		base:  NewRobust(AlphaForHalfLife(c.HalfLife), 3),
		cusum: NewCUSUM(c.Slack, c.Decision),
		rng:   newValueRange(),
	}, nil
}

// AlertThreshold is the default threshold for alerts.
func (c *CUSUMConfig) AlertThreshold() float64 { return c.Threshold }

func (c *CUSUMConfig) fields() []configField {
	return []configField{{"half_life", c.HalfLife}, {"slack", c.Slack}, {"decision", c.Decision},
		{"warm_up", float64(c.WarmUp)}, {"threshold", c.Threshold}, {"band", c.Band}}
}

type cusumDetector struct {
	cfg   CUSUMConfig
	base  Robust
	cusum CUSUM
	rng   valueRange // for the floor under the scale
	last  Verdict
}

func (d *cusumDetector) Observe(_ int64, x float64) Verdict {
	if !finite(x) {
		return skipVerdict(d.last)
	}
	loc := d.base.Loc()
	warm := d.base.Count() >= uint64(d.cfg.WarmUp)
	scale := max(d.base.Scale(), d.rng.floor(loc, warm))
	score := 0.0
	var dir Direction
	if warm {
		// Clip so that one wild sample cannot declare a change alone.
		stat, sdir := d.cusum.Update(min(max((x-loc)/scale, -4), 4))
		score, dir = stat/(1+stat), sdir // 0.5 at the decision interval
	}
	v := bandVerdict(x, loc, scale, d.cfg.Band, score)
	if dir != DirNone {
		v.Direction = dir
	}
	settle(&v, warm, d.cfg.Threshold)
	v.Evidence = scored(v.Score, EvidenceLevel) // a lasting shift
	if v.State == StateAnomalous {
		// The change is reported; start accumulating afresh so the next
		// alert needs new evidence.
		d.cusum.Reset()
	}
	d.base.Update(x)
	d.rng.observe(x)
	d.last = v
	return v
}

const cusumKind = "cusum"

func (d *cusumDetector) MarshalBinary() ([]byte, error) {
	w := newEncoder(cusumKind, 160)
	encodeConfig(w, d.cfg.fields())
	d.base.encode(w)
	d.cusum.encode(w)
	d.rng.encode(w)
	encodeVerdict(w, d.last)
	return w.b, nil
}

func (d *cusumDetector) UnmarshalBinary(b []byte) error {
	r, err := newDecoder(cusumKind, b)
	if err != nil {
		return err
	}
	checkConfig(r, d.cfg.fields())
	d.base.decode(r)
	d.cusum.decode(r)
	d.rng.decode(r)
	d.last = decodeVerdict(r)
	return r.finish()
}
