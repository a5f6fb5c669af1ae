package nab

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/seismo-agent/seismo/detect"
)

// Thresholder is implemented by detector configs that carry a default alert
// threshold; the benchmark scores the standard profile at that threshold.
type Thresholder interface {
	AlertThreshold() float64
}

// SetThreshold sets cfg's alert threshold to t as a rule's `threshold:`
// key in its detector block sets it, so that the detector runs with it.
// A detector's state follows its own threshold (auto's episodes, and
// what it learns while one is open), and the benchmark reads a run's
// episodes from that state: a run at the default threshold scored at t
// is not what a rule with threshold t would see. Range checks are
// Factory's (the config's Validate).
func SetThreshold(cfg detect.Config, t float64) error {
	th, ok := cfg.(Thresholder)
	if !ok {
		return fmt.Errorf("config %T has no alert threshold", cfg)
	}
	var n yaml.Node
	if err := n.Encode(map[string]float64{"threshold": t}); err != nil {
		return err
	}
	if err := n.Decode(cfg); err != nil {
		return fmt.Errorf("threshold: %w", err)
	}
	if got := th.AlertThreshold(); got != t {
		return fmt.Errorf("config %T did not take threshold %v (reads %v)", cfg, t, got)
	}
	return nil
}

// Factory returns a constructor for fresh detectors built from cfg and the
// config's alert threshold (0.5 when it declares none).
func Factory(cfg detect.Config) (func() (detect.Detector, error), float64, error) {
	uc, ok := cfg.(detect.UnivariateConfig)
	if !ok {
		return nil, 0, fmt.Errorf("config %T is not for a univariate detector", cfg)
	}
	if err := uc.Validate(); err != nil {
		return nil, 0, err
	}
	threshold := 0.5
	if t, ok := cfg.(Thresholder); ok {
		threshold = t.AlertThreshold()
	}
	return uc.New, threshold, nil
}

// KindConfig returns the default config of the univariate detector kind
// registered under name.
func KindConfig(name string) (detect.Config, error) {
	k, ok := detect.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown detector %q (known: %v)", name, detect.Kinds())
	}
	if len(k.Signals) > 0 {
		return nil, fmt.Errorf("detector %q watches several signals; NAB series are univariate", name)
	}
	return k.NewConfig(), nil
}
