package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/model"
)

// fakeConfig configures fakeDetector: warming up for WarmUp samples, then
// anomalous above Threshold.
type fakeConfig struct {
	Threshold float64 `yaml:"threshold"`
	WarmUp    int     `yaml:"warm_up"`
}

func (c *fakeConfig) Validate() error {
	var errs []error
	if c.Threshold <= 0 {
		errs = append(errs, fmt.Errorf("threshold: must be positive, got %g", c.Threshold))
	}
	if c.WarmUp < 0 {
		errs = append(errs, fmt.Errorf("warm_up: must not be negative, got %d", c.WarmUp))
	}
	return errors.Join(errs...)
}

func (c *fakeConfig) New() (detect.Detector, error) { return &fakeDetector{cfg: *c}, nil }

type fakeDetector struct {
	cfg fakeConfig
	N   int `json:"n"`
}

func (d *fakeDetector) Observe(_ int64, v float64) detect.Verdict {
	d.N++
	vd := detect.Verdict{Expected: 1, Lower: 0, Upper: d.cfg.Threshold, State: detect.StateNormal}
	switch {
	case d.N <= d.cfg.WarmUp:
		vd.State = detect.StateWarmingUp
	case v > d.cfg.Threshold:
		vd.State, vd.Score, vd.Direction, vd.Evidence = detect.StateAnomalous, 0.99, detect.DirUp, detect.EvidenceSpike
	}
	return vd
}

func (d *fakeDetector) MarshalBinary() ([]byte, error) { return json.Marshal(d) }
func (d *fakeDetector) UnmarshalBinary(b []byte) error { return json.Unmarshal(b, d) }

// fakeCompConfig configures fakeComposite: anomalous when the sum of
// signal "a" exceeds Threshold.
type fakeCompConfig struct {
	Threshold float64 `yaml:"threshold"`
	KeyLabel  string  `yaml:"key_label"`
}

func (c *fakeCompConfig) Validate() error                { return nil }
func (c *fakeCompConfig) New() (detect.Composite, error) { return &fakeComposite{cfg: *c}, nil }

type fakeComposite struct {
	cfg  fakeCompConfig
	Keys []string `json:"keys"`
	// N counts observations.
	N int `json:"n"`
}

func (d *fakeComposite) Observe(_ int64, in detect.Inputs) detect.Result {
	d.N++
	sum := 0.0
	for _, s := range in["a"] {
		sum += s.Value
	}
	d.Keys = d.Keys[:0]
	for _, s := range in["b"] {
		d.Keys = append(d.Keys, s.Key)
	}
	r := detect.Result{Verdict: detect.Verdict{State: detect.StateNormal, Expected: 1, Upper: d.cfg.Threshold}}
	if sum > d.cfg.Threshold {
		r.State, r.Score = detect.StateAnomalous, 0.9
		r.Explanation = &model.Explanation{Detector: "fakecomp", Kind: "surge_saturation", Score: 0.9, Summary: fmt.Sprintf("a is %g", sum)}
		// A sum just over the threshold is only worth telling.
		r.Informational = sum < 2*d.cfg.Threshold
	}
	return r
}

func (d *fakeComposite) MarshalBinary() ([]byte, error) { return json.Marshal(d) }
func (d *fakeComposite) UnmarshalBinary(b []byte) error { return json.Unmarshal(b, d) }

var fakeKinds = map[string]detect.Kind{
	"fake": {Name: "fake", NewConfig: func() detect.Config { return &fakeConfig{Threshold: 10} }},
	"fakecomp": {Name: "fakecomp", Signals: []detect.SignalSpec{
		{Name: "a", Required: true, Doc: "the driving signal"},
		{Name: "b", PerKey: true, Doc: "per-client signal"},
	}, NewConfig: func() detect.Config { return &fakeCompConfig{Threshold: 10, KeyLabel: "client"} }},
}

func fakeLookup(n string) (detect.Kind, bool) { k, ok := fakeKinds[n]; return k, ok }
func fakeKindNames() []string                 { return []string{"fake", "fakecomp"} }

var fakeParseOpts = ParseOptions{Lookup: fakeLookup, Kinds: fakeKindNames, DefaultInterval: 10 * time.Second}

// fakeSource answers queries from a function.
type fakeSource struct {
	instant func(q string, ts time.Time) (promql.Vector, error)
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Instant(_ context.Context, q string, ts time.Time) (promql.Vector, error) {
	return f.instant(q, ts)
}
func (f *fakeSource) Range(context.Context, string, time.Time, time.Time, time.Duration) (promql.Matrix, error) {
	return nil, errors.New("not implemented")
}
