package detect

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestShapeKindsRegistered(t *testing.T) {
	tests := []struct {
		name    string
		signals []string // name, with * for required and [] for per-key
	}{
		{"decoupling", []string{"symptom*", "resource*", "traffic"}},
		{"storm", []string{"requests*[]", "limited*[]"}},
		{"surge", []string{"requests*", "latency", "queue", "in_flight", "workers", "errors", "health[]"}},
		{"error_rate", []string{"errors*", "requests*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := Lookup(tt.name)
			require.True(t, ok)
			var got []string
			for _, s := range k.Signals {
				n := s.Name
				if s.Required {
					n += "*"
				}
				if s.PerKey {
					n += "[]"
				}
				got = append(got, n)
				require.NotEmpty(t, s.Doc)
			}
			require.Equal(t, tt.signals, got)
			cfg := k.NewConfig()
			require.NoError(t, cfg.Validate(), "defaults must validate")
			_, isComposite := cfg.(CompositeConfig)
			require.True(t, isComposite)
		})
	}
}

// TestShapeConfigValidate decodes YAML over the defaults strictly and checks
// that every problem is reported with its YAML key.
func TestShapeConfigValidate(t *testing.T) {
	tests := []struct {
		name, kind, yaml string
		wantErrs         []string // substrings; empty means valid
	}{
		{"decoupling ok", "decoupling", "{sigmas: 5, baseline: 1h, capacity: 4}", nil},
		{"decoupling bad", "decoupling", "{sigmas: 0, min_ratio: 0.5, resource_ratio: 1, capacity_share: 2, confirm: 0, warm_up: 1, baseline: 10ms, lag: -1s}",
			[]string{"sigmas: must be a positive number of standard deviations", "min_ratio:", "resource_ratio:", "capacity_share:", "confirm:", "warm_up:", "baseline:", "lag:"}},
		{"storm ok", "storm", "{key_label: tenant, resolve_after: 10m}", nil},
		{"storm bad", "storm", "{key_label: '', breadth: 0, client_share: 1.5, min_share: -1, concentrated_clients: -1, relearn_after: 0s}",
			[]string{"key_label:", "breadth:", "client_share:", "min_share:", "concentrated_clients:", "relearn_after:"}},
		{"surge ok", "surge", "{factor: 5, ramp: 4m, key_label: pod}", nil},
		{"surge bad", "surge", "{factor: 1, ramp: 0s, latency_ratio: 0.5, error_share: 0, health_drop: 2, key_label: '', resolve_after: -1s, busy_share: 1.5, lead: 0s}",
			[]string{"factor:", "ramp:", "latency_ratio:", "error_share:", "health_drop:", "key_label:", "resolve_after:", "busy_share:", "lead:"}},
		{"error_rate ok", "error_rate", "{input: count, min_errors: 10}", nil},
		{"error_rate bad", "error_rate", "{input: ratio, dispersion: 0.5, min_share: 1, min_ratio: 0, min_baseline: 0, min_errors: -1}",
			[]string{`input: must be "rate" or "count"`, "dispersion:", "min_share:", "min_ratio:", "min_baseline:", "min_errors:"}},
		{"error_rate rate window", "error_rate", "{input: rate, rate_window: 0s}", []string{"rate_window:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := Lookup(tt.kind)
			require.True(t, ok)
			cfg := k.NewConfig()
			dec := yaml.NewDecoder(strings.NewReader(tt.yaml))
			dec.KnownFields(true)
			require.NoError(t, dec.Decode(cfg))
			err := cfg.Validate()
			_, newErr := cfg.(CompositeConfig).New()
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				require.NoError(t, newErr)
				return
			}
			require.Error(t, err)
			require.Error(t, newErr, "New must refuse an invalid config")
			for _, w := range tt.wantErrs {
				require.Contains(t, err.Error(), w)
			}
			require.Len(t, strings.Split(err.Error(), "\n"), len(tt.wantErrs), "one line per problem: %v", err)
		})
	}
}

func TestShapeConfigUnknownKey(t *testing.T) {
	k, _ := Lookup("storm")
	dec := yaml.NewDecoder(strings.NewReader("{key_labell: client}"))
	dec.KnownFields(true)
	require.Error(t, dec.Decode(k.NewConfig()), "typed configs must reject unknown keys under strict decoding")
}

// TestShapeBadInputs feeds absent, NaN, infinite, negative and mismatched
// inputs; the detectors must neither panic nor page, and must keep
// judging once good inputs return.
func TestShapeBadInputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	bad := []Inputs{
		nil,
		{},
		{"symptom": {{Value: nan}}, "resource": {{Value: inf}}, "requests": {{Value: nan}}, "errors": {{Value: -inf}}},
		{"requests": {{Key: "a", Value: -5}}, "limited": {{Key: "b", Value: 7}}, "health": {{Value: nan}}},
		{"requests": {{Value: 0}}, "errors": {{Value: 3}}, "limited": {{Value: inf}}},
		{"symptom": {}, "resource": {{Value: 0}}, "latency": {{Value: -1}}},
	}
	for _, kind := range []string{"decoupling", "storm", "surge", "error_rate"} {
		t.Run(kind, func(t *testing.T) {
			k, _ := Lookup(kind)
			d, err := k.NewConfig().(CompositeConfig).New()
			require.NoError(t, err)
			good := func(i int) Inputs {
				v := 1 + 0.01*float64(i%3)
				return Inputs{
					"symptom": {{Value: 0.2 * v}}, "resource": {{Value: 0.3 * v}},
					"requests": {{Key: "a", Value: 100 * v}, {Key: "b", Value: 50}},
					"limited":  {{Key: "a", Value: 0}}, "errors": {{Value: 0.5 * v}},
				}
			}
			ts := int64(0)
			for i := range 40 {
				ts += 10_000
				d.Observe(ts, good(i))
			}
			for i, in := range bad {
				ts += 10_000
				r := d.Observe(ts, in)
				require.NotEqual(t, StateAnomalous, r.State, "bad input %d", i)
				require.False(t, math.IsNaN(r.Score), "bad input %d", i)
			}
			ts += 10_000
			r := d.Observe(ts, good(0))
			require.Equal(t, StateNormal, r.State)
			_, err = d.MarshalBinary()
			require.NoError(t, err)
		})
	}
}

func TestShapeSnapshotRejectsForeign(t *testing.T) {
	newDet := func(kind, config string) Composite {
		k, _ := Lookup(kind)
		cfg := k.NewConfig()
		require.NoError(t, yaml.Unmarshal([]byte(config), cfg))
		d, err := cfg.(CompositeConfig).New()
		require.NoError(t, err)
		return d
	}
	storm := newDet("storm", "{}")
	storm.Observe(0, Inputs{"requests": {{Key: "a", Value: 1}}})
	snap, err := storm.MarshalBinary()
	require.NoError(t, err)

	tests := []struct {
		name, kind, config string
		data               []byte
	}{
		{"other kind", "surge", "{}", snap},
		{"other config", "storm", "{breadth: 0.7}", snap},
		{"empty", "storm", "{}", nil},
		{"truncated", "storm", "{}", snap[:len(snap)-5]},
		{"trailing", "storm", "{}", append(append([]byte{}, snap...), 0)},
		{"future version", "storm", "{}", append([]byte{99}, snap[1:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDet(tt.kind, tt.config)
			require.ErrorIs(t, d.UnmarshalBinary(tt.data), ErrSnapshot)
		})
	}
	require.NoError(t, newDet("storm", "{}").UnmarshalBinary(snap))
}

func TestShapeBinomZ(t *testing.T) {
	tests := []struct {
		k, n, p float64
		lo, hi  float64
		name    string
	}{
		{1, 3, 0.005, 2.5, 3.5, "one in three at night: unremarkable"},
		{15, 3000, 0.005, 0, 0, "at the baseline: no surprise"},
		{10, 3000, 0.005, 0, 0, "below the baseline: no surprise"},
		{600, 3000, 0.005, 50, 60, "20 % of 3000: overwhelming"},
		{3, 3, 0.005, 5.5, 6, "all of three"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := shapeBinomZ(tt.k, tt.n, tt.p)
			require.GreaterOrEqual(t, z, tt.lo)
			require.LessOrEqual(t, z, tt.hi)
		})
	}
}

func TestShapeNum(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0.2234, "0.223"}, {1.8, "1.8"}, {0.04, "0.04"}, {1234.4, "1234"}, {31, "31"},
		{0, "0"}, {math.NaN(), "?"}, {-2.5, "-2.5"}, {99.96, "100"},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatFloat(tt.v, 'g', -1, 64), func(t *testing.T) {
			require.Equal(t, tt.want, shapeNum(tt.v))
		})
	}
}

// TestShapeStormJoin checks that the three ways of joining limited to
// requests (aligned, sorted merge, map) give the same figures.
func TestShapeStormJoin(t *testing.T) {
	reqs := []Sample{{"a", 10}, {"b", 20}, {"c", 30}, {"d", 40}}
	tests := []struct {
		name string
		lim  []Sample
	}{
		{"aligned", []Sample{{"a", 1}, {"b", 0}, {"c", 30}, {"d", 0}}},
		{"sorted subset", []Sample{{"a", 1}, {"c", 30}}},
		{"sorted subset with a stranger", []Sample{{"a", 1}, {"bb", 7}, {"c", 30}, {"zz", 9}}},
		{"unordered", []Sample{{"c", 30}, {"a", 1}}},
		{"unordered with duplicates", []Sample{{"c", 20}, {"a", 1}, {"c", 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, _ := Lookup("storm")
			d, err := k.NewConfig().(CompositeConfig).New()
			require.NoError(t, err)
			st := d.(*Storm).stats(reqs, tt.lim)
			require.Equal(t, shapeStormStats{req: 100, lim: 31, hhi: (1 + 900) / 961.0, active: 4, affected: 1, keyed: true}, st)
			require.Equal(t, "c", d.(*Storm).shapeTop[0].key)
			require.Equal(t, "a", d.(*Storm).shapeTop[1].key)
		})
	}
}
