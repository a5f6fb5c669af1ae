package nab

import (
	"fmt"

	"github.com/seismo-agent/seismo/detect"
)

// Thresholder is implemented by detector configs that carry a default alert
// threshold; the benchmark scores the standard profile at that threshold.
type Thresholder interface {
	AlertThreshold() float64
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
