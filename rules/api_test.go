package rules

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

func TestAPI(t *testing.T) {
	lset := labels.FromStrings("__name__", "x", "instance", "a")
	src := vecSource(lset, func(q string, ts time.Time) (float64, bool) { return 9, true })
	rules := `groups:
  - name: g
    rules:
      - anomaly: A
        expr: x
        detector: {type: fake, threshold: 5}
        draft: {component: Shop}
      - alert: B
        expr: 'x > 5'
        for: 1m
      - record: r:x
        expr: x
`
	m, _ := newTestManager(t, src, &recorder{}, "", rules)
	require.NoError(t, m.EvalGroups(context.Background(), t0))

	get := func(url string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h := m.RulesHandler()
		if strings.HasPrefix(url, "/api/v1/alerts") {
			h = m.AlertsHandler()
		}
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		return rec.Code, body
	}

	tests := []struct {
		url   string
		code  int
		check func(t *testing.T, data map[string]any)
	}{
		{"/api/v1/rules", 200, func(t *testing.T, data map[string]any) {
			g := data["groups"].([]any)[0].(map[string]any)
			require.Equal(t, "g", g["name"])
			rs := g["rules"].([]any)
			require.Len(t, rs, 3)
			a := rs[0].(map[string]any)
			require.Equal(t, "alerting", a["type"])
			require.Equal(t, "anomaly", a["kind"])
			require.Equal(t, "firing", a["state"])
			require.Equal(t, "ok", a["health"])
			require.Equal(t, "fake", a["detector"].(map[string]any)["type"])
			al := a["alerts"].([]any)[0].(map[string]any)
			require.Equal(t, 0.99, al["score"])
			require.Equal(t, map[string]any{"lower": 0.0, "upper": 5.0}, al["band"])
			require.Equal(t, "spike", al["explanation"].(map[string]any)["kind"])
			require.Equal(t, "9e+00", al["value"])
			b := rs[1].(map[string]any)
			require.Equal(t, "pending", b["state"])
			require.Equal(t, 60.0, b["duration"])
			require.Equal(t, "recording", rs[2].(map[string]any)["type"])
		}},
		{"/api/v1/rules?type=record", 200, func(t *testing.T, data map[string]any) {
			rs := data["groups"].([]any)[0].(map[string]any)["rules"].([]any)
			require.Len(t, rs, 1)
		}},
		{"/api/v1/rules?rule_name[]=B", 200, func(t *testing.T, data map[string]any) {
			rs := data["groups"].([]any)[0].(map[string]any)["rules"].([]any)
			require.Len(t, rs, 1)
			require.Equal(t, "B", rs[0].(map[string]any)["name"])
		}},
		{"/api/v1/rules?exclude_alerts=true", 200, func(t *testing.T, data map[string]any) {
			a := data["groups"].([]any)[0].(map[string]any)["rules"].([]any)[0].(map[string]any)
			require.NotContains(t, a, "alerts")
			require.Equal(t, "firing", a["state"])
		}},
		{"/api/v1/rules?type=bogus", 400, nil},
		{"/api/v1/alerts", 200, func(t *testing.T, data map[string]any) {
			as := data["alerts"].([]any)
			require.Len(t, as, 2)
			states := map[string]string{}
			for _, a := range as {
				am := a.(map[string]any)
				states[am["labels"].(map[string]any)["alertname"].(string)] = am["state"].(string)
			}
			require.Equal(t, map[string]string{"A": "firing", "B": "pending"}, states)
			require.NotContains(t, data, "omitted", "no filter, nothing omitted")
		}},
		{"/api/v1/alerts?state=firing", 200, func(t *testing.T, data map[string]any) {
			as := data["alerts"].([]any)
			require.Len(t, as, 1)
			require.Equal(t, "A", as[0].(map[string]any)["labels"].(map[string]any)["alertname"])
			require.Equal(t, 1.0, data["omitted"])
		}},
		{"/api/v1/alerts?state=firing&state=pending", 200, func(t *testing.T, data map[string]any) {
			require.Len(t, data["alerts"].([]any), 2)
			require.Equal(t, 0.0, data["omitted"])
		}},
		{"/api/v1/alerts?state=resolved", 200, func(t *testing.T, data map[string]any) {
			require.Empty(t, data["alerts"].([]any))
			require.Equal(t, 2.0, data["omitted"])
		}},
		{"/api/v1/alerts?state=active", 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			code, body := get(tt.url)
			require.Equal(t, tt.code, code)
			if tt.check != nil {
				require.Equal(t, "success", body["status"])
				tt.check(t, body["data"].(map[string]any))
			}
		})
	}
}
