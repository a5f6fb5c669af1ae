package rules

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// TestBuiltinIncidentSettings checks what makes the pack page once per
// incident: keep_firing_for on the rules whose incidents come in waves,
// and the 5xx and probe rules suppressed by the surge rule (but not when
// the surge detector is missing, as the rule then is).
func TestBuiltinIncidentSettings(t *testing.T) {
	rulesOf := func(t *testing.T, cfg BuiltinConfig, opts ParseOptions) map[string]*Rule {
		t.Helper()
		groups, err := cfg.Groups(opts)
		require.NoError(t, err)
		out := map[string]*Rule{}
		for _, r := range groups[0].Rules {
			out[r.Name] = r
		}
		return out
	}
	cfg := DefaultBuiltinConfig()
	rs := rulesOf(t, cfg, ParseOptions{})
	for _, n := range []string{"RateLimitStorm", "TrafficSurgeSaturation", "HighErrorRate", "ProbeFailing"} {
		require.Equal(t, 2*time.Minute, rs[n].KeepFiringFor, n)
	}
	require.Zero(t, rs["SaturationWithoutCPU"].KeepFiringFor, "a saturation resolves as soon as its detector does")
	require.Equal(t, []string{"TrafficSurgeSaturation"}, rs["HighErrorRate"].SuppressedBy)
	require.Equal(t, []string{"TrafficSurgeSaturation"}, rs["ProbeFailing"].SuppressedBy)
	require.Contains(t, rs["TrafficSurgeSaturation"].Detector.Signals, Signal{Name: "in_flight", Expr: "sum(http_server_requests_in_flight)"})

	// A pool size given in the config stands in for the missing gauge.
	pool := cfg
	pool.Metrics.WorkerPoolSize = 64
	rs = rulesOf(t, pool, ParseOptions{})
	require.Contains(t, rs["TrafficSurgeSaturation"].Detector.Signals, Signal{Name: "workers", Expr: "vector(64)"})
	rs = rulesOf(t, cfg, ParseOptions{})
	require.Contains(t, rs["TrafficSurgeSaturation"].Detector.Signals, Signal{Name: "workers", Expr: "sum(http_server_workers)"})

	cfg.KeepFiringFor = 0
	rs = rulesOf(t, cfg, ParseOptions{})
	require.Zero(t, rs["RateLimitStorm"].KeepFiringFor)

	// Without the surge kind the pack has no surge rule to be suppressed by.
	noSurge := func(k string) (detect.Kind, bool) {
		if k == "surge" {
			return detect.Kind{}, false
		}
		return detect.Lookup(k)
	}
	rs = rulesOf(t, cfg, ParseOptions{Lookup: noSurge})
	require.Nil(t, rs["TrafficSurgeSaturation"])
	require.Empty(t, rs["HighErrorRate"].SuppressedBy)
}

func TestBuiltinConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*BuiltinConfig)
		want string // "" for valid
	}{
		{"defaults", func(*BuiltinConfig) {}, ""},
		{"no hold", func(c *BuiltinConfig) { c.KeepFiringFor = 0 }, ""},
		{"negative hold", func(c *BuiltinConfig) { c.KeepFiringFor = -time.Second }, "builtin.keep_firing_for: must not be negative, got -1s"},
		{"rate window", func(c *BuiltinConfig) { c.RateWindow = 0 }, "builtin.rate_window: must be at least 1s"},
		{"pool size", func(c *BuiltinConfig) { c.Metrics.WorkerPoolSize = 12 }, ""},
		{"negative pool size", func(c *BuiltinConfig) { c.Metrics.WorkerPoolSize = -1 }, "builtin.metrics.worker_pool_size: must be 0 (read metrics.workers) or the pool's size, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c.Builtin)
			err := c.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
