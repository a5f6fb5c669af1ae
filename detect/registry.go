package detect

import "sort"

// Config is a detector's typed configuration, decoded strictly from a rule's
// `detector:` block (yaml tags, snake_case) over the defaults that
// Kind.NewConfig returns.
type Config interface {
	// Validate reports every problem in the config; field names in messages
	// use the YAML keys.
	Validate() error
}

// TimeZoned is a config whose days follow a time zone (time_zone: auto's
// and seasonal's); the rules parser sets an agent-wide default through it
// before a rule's own keys are read.
type TimeZoned interface {
	SetTimeZone(zone string)
}

// UnivariateConfig builds detectors that watch one series at a time.
type UnivariateConfig interface {
	Config
	New() (Detector, error)
}

// CompositeConfig builds detectors that watch several named signals.
type CompositeConfig interface {
	Config
	New() (Composite, error)
}

// SignalSpec describes one named input of a composite detector. In a rule
// file the signal is a key of the `detector:` block whose value is PromQL.
type SignalSpec struct {
	Name     string
	Required bool
	// PerKey means the signal is a vector broken down by a label (the
	// detector's key label, e.g. client); otherwise it is summed to a scalar.
	PerKey bool
	Doc    string
}

// Kind describes one detector type as rule files name it.
type Kind struct {
	// Name is the `type:` value, e.g. "auto", "ewma", "decoupling".
	Name string
	Doc  string
	// Signals is empty for univariate kinds.
	Signals []SignalSpec
	// NewConfig returns a pointer to a config holding the defaults; it is a
	// UnivariateConfig or a CompositeConfig.
	NewConfig func() Config
}

// kinds is filled by register calls from init functions, one per detector
// file, and read-only afterwards.
var kinds = map[string]Kind{}

func register(k Kind) {
	if _, dup := kinds[k.Name]; dup {
		panic("detect: duplicate kind " + k.Name)
	}
	kinds[k.Name] = k
}

// Lookup returns the kind registered under name.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Kinds returns the registered kind names, sorted.
func Kinds() []string {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
