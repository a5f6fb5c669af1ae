package rules

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// TestTimeZoneDefault: rules.time_zone is the time_zone of auto and
// seasonal detectors whose rule sets none, the built-in pack's included;
// a rule's own key wins, and a bad zone is an error at its place.
func TestTimeZoneDefault(t *testing.T) {
	const src = `groups:
- name: g
  rules:
  - anomaly: Plain
    expr: up
    detector: {type: auto}
  - anomaly: Tokyo
    expr: up
    detector: {type: auto, time_zone: Asia/Tokyo}
  - anomaly: Weekly
    expr: up
    detector: {type: seasonal}
`
	zoneOf := func(opts ParseOptions) map[string]string {
		t.Helper()
		groups, err := Parse(opts, "tz.yml", []byte(src))
		require.NoError(t, err)
		out := map[string]string{}
		for _, r := range groups[0].Rules {
			switch c := r.Detector.Config.(type) {
			case *detect.AutoConfig:
				out[r.Name] = c.TimeZone
			case *detect.SeasonalConfig:
				out[r.Name] = c.TimeZone
			}
		}
		return out
	}
	require.Equal(t, map[string]string{"Plain": "", "Tokyo": "Asia/Tokyo", "Weekly": ""}, zoneOf(ParseOptions{}))
	require.Equal(t, map[string]string{"Plain": "Europe/Berlin", "Tokyo": "Asia/Tokyo", "Weekly": "Europe/Berlin"}, zoneOf(ParseOptions{TimeZone: "Europe/Berlin"}))

	_, err := Parse(ParseOptions{}, "tz.yml", []byte(`groups:
- name: g
  rules:
  - anomaly: Typo
    expr: up
    detector: {type: auto, time_zone: Europe/Atlantis}
`))
	require.ErrorContains(t, err, `tz.yml:6:`)
	require.ErrorContains(t, err, `detector: time_zone: must be an IANA time zone`)

	pack := DefaultBuiltinConfig()
	groups, err := pack.Groups(ParseOptions{TimeZone: "America/New_York"})
	require.NoError(t, err)
	autos := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Detector == nil {
				continue
			}
			if c, ok := r.Detector.Config.(*detect.AutoConfig); ok {
				require.Equal(t, "America/New_York", c.TimeZone, r.Name)
				autos++
			}
		}
	}
	require.Positive(t, autos, "the pack has auto detectors")

	cfg := DefaultConfig()
	cfg.TimeZone = "Nowhere/Else"
	require.ErrorContains(t, cfg.Validate(), "time_zone")
	cfg.TimeZone = "Europe/Berlin"
	require.NoError(t, cfg.Validate())
}

// TestTimeZoneFromConfig: the manager hands rules.time_zone to the rule
// files it loads.
func TestTimeZoneFromConfig(t *testing.T) {
	m, err := NewManager(Options{Source: &fakeSource{}, Lookup: detect.Lookup, Kinds: detect.Kinds})
	require.NoError(t, err)
	defer m.Close()
	cfg := testConfig(writeRules(t, t.TempDir(), "r.yml", "groups: [{name: g, rules: [{anomaly: A, expr: x, detector: {type: auto}}]}]"))
	cfg.TimeZone = "Europe/Berlin"
	groups, err := m.load(cfg, nil)
	require.NoError(t, err)
	found := false
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Name == "A" {
				require.Equal(t, "Europe/Berlin", r.Detector.Config.(*detect.AutoConfig).TimeZone)
				found = true
			}
		}
	}
	require.True(t, found)
}
