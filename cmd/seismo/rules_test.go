package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRulesCommands(t *testing.T) {
	td := "../../rules/testdata"
	svg := filepath.Join(t.TempDir(), "plot.svg")
	// An agent config naming the rule file, relative to the config's
	// directory, with the built-in pack off.
	cfgDir := t.TempDir()
	slow, err := filepath.Abs(td + "/replay/slow.yml")
	require.NoError(t, err)
	cfgFile := filepath.Join(cfgDir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("rules:\n  files: ["+slow+"]\n  builtin: {enabled: false}\n"), 0o600))
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		notInOut []string
	}{
		{"check good", []string{"check", "rules", td + "/real/shop.good.yml"}, 0,
			[]string{"Checking", "SUCCESS: 5 rules found"}, nil},
		{"check bad reports every problem", []string{"check", "rules", td + "/real/shop.good.yml", td + "/many.bad.yml"}, 1,
			[]string{"SUCCESS: 5 rules found", "FAILED", `many.bad.yml:21:9: group "g", rule 1 "A": unknown key "fro" in rule`,
				`many.bad.yml:51:5: group "g": duplicate group name "g" in file`}, nil},
		{"check warns of a raw counter", []string{"check", "rules", td + "/counter.warn.yml"}, 0,
			[]string{"SUCCESS: 1 rules found", `WARNING: ` + td + `/counter.warn.yml:5:15: group "shop", rule 1 "Requests": expr: http_requests_total is a counter`}, nil},
		{"check missing file", []string{"check", "rules", td + "/nope.yml"}, 1, []string{"no such file"}, nil},
		{"test rules passes", []string{"test", "rules", td + "/unit/real.test.yml"}, 0, []string{"SUCCESS"}, nil},
		{"test rules fails", []string{"test", "rules", td + "/unit/real.test.yml", td + "/unit/plain_fail.test.yml"}, 1,
			[]string{"SUCCESS", "FAILED", "alertname: InstanceDown, time: 5m"}, nil},
		{"replay text", []string{"replay", td + "/replay/slow.yml", "--csv", td + "/replay/latency.csv"}, 0,
			[]string{"2026-01-01T00:05:30Z  FIRING     SlowRoute", "2026-01-01T00:07:30Z  RESOLVED   SlowRoute", "value=0.1"},
			[]string{"WARMING_UP"}},
		{"replay plot", []string{"replay", td + "/replay/slow.yml", "--openmetrics", td + "/replay/latency.om", "--plot", svg}, 0,
			[]string{"FIRING"}, nil},
		{"replay needs one input", []string{"replay", td + "/replay/slow.yml"}, 2, nil, nil},
		{"replay with an agent config", []string{"replay", "--config", cfgFile, "--csv", td + "/replay/latency.csv"}, 0,
			[]string{"FIRING     SlowRoute"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			for _, s := range tt.stdout {
				require.Contains(t, out, s)
			}
			for _, s := range tt.notInOut {
				require.NotContains(t, out, s)
			}
		})
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(b), "SlowRoute")
}

func TestReplayJSON(t *testing.T) {
	code, out, errOut := cli(t, "replay", "../../rules/testdata/replay/slow.yml", "--csv", "../../rules/testdata/replay/latency.csv", "--output", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "samples/s")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	var states []string
	for _, l := range lines {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		require.Equal(t, "SlowRoute", v["alert"])
		require.Equal(t, "/", v["labels"].(map[string]any)["route"])
		states = append(states, v["state"].(string))
	}
	require.Equal(t, []string{"pending", "firing", "resolved"}, states)
}

// TestReplayRemote replays against a Prometheus-compatible API: every tick
// is an instant query answered by the server.
func TestReplayRemote(t *testing.T) {
	var queries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		queries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"latency_seconds","route":"/"},"value":[%s,"2"]}]}}`, r.Form.Get("time"))
	}))
	defer srv.Close()
	code, out, errOut := cli(t, "replay", "../../rules/testdata/replay/slow.yml", "--remote-url", srv.URL,
		"--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:01:00Z")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2026-01-01T00:00:30Z  FIRING     SlowRoute")
	require.Contains(t, errOut, "5 evaluations")
	require.Equal(t, int64(5), queries.Load())

	code, _, _ = cli(t, "replay", "--remote-url", srv.URL)
	require.Equal(t, 2, code, "--remote-url needs --start and --end")
}

// TestCheckRulesTyped: with --datasource-url the check's counter warning
// goes by the API's metric metadata: a metric it calls a gauge is no
// counter whatever its name; a metadata call that fails is an error that
// names the URL.
func TestCheckRulesTyped(t *testing.T) {
	typ := "gauge"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/metadata" || typ == "" {
			http.Error(w, `{"status":"error","errorType":"internal","error":"down"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"http_requests_total":[{"type":%q,"help":"","unit":""}]}}`, typ)
	}))
	defer srv.Close()
	file := "../../rules/testdata/counter.warn.yml"
	code, out, errOut := cli(t, "check", "rules", "--datasource-url", srv.URL, file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "SUCCESS: 1 rules found")
	require.NotContains(t, out, "WARNING", "a gauge by the metadata")

	typ = "counter"
	code, out, errOut = cli(t, "check", "rules", "--datasource-url", srv.URL, file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "http_requests_total is a counter")

	typ = ""
	code, _, errOut = cli(t, "check", "rules", "--datasource-url", srv.URL, file)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "metric types from "+srv.URL)
}
