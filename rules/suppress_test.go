package rules

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
)

// TestSuppressedBy drives a cause rule and a rule suppressed by it through
// the orders an incident takes: the suppressed alert's own lifecycle runs
// (and shows in transitions), but it is sent only when no cause fires, and
// an alert already sent is not taken back.
func TestSuppressedBy(t *testing.T) {
	rules := `groups:
  - name: g
    rules:
      - alert: Cause
        expr: c > 5
        labels: {severity: page}
      - alert: Effect
        expr: e > 5
        labels: {severity: warning}
        suppressed_by: Cause
`
	type step struct {
		c, e float64
		// sent lists the alerts sent by this evaluation as "Name state".
		sent []string
		// effect is the Effect alert's state and SuppressedBy afterwards.
		effect     model.AlertState
		suppressed string
	}
	tests := []struct {
		name string
		// instance is the Effect series' instance label; the cause's is "a".
		instance string
		steps    []step
	}{
		{
			name: "cause first: effect never sent, then sent once the cause ends", instance: "a",
			steps: []step{
				{c: 9, e: 1, sent: []string{"Cause firing"}},
				{c: 9, e: 9, effect: model.StateFiring, suppressed: "Cause"},
				{c: 9, e: 1, effect: model.StateResolved, suppressed: "Cause"}, // its resolve is not sent either
				{c: 9, e: 9, effect: model.StateFiring, suppressed: "Cause"},
				{c: 1, e: 9, sent: []string{"Cause resolved", "Effect firing"}, effect: model.StateFiring},
			},
		},
		{
			name: "effect first: already paged, not taken back", instance: "a",
			steps: []step{
				{c: 1, e: 9, sent: []string{"Effect firing"}, effect: model.StateFiring},
				{c: 9, e: 9, sent: []string{"Cause firing"}, effect: model.StateFiring},
				{c: 9, e: 1, sent: []string{"Effect resolved"}, effect: model.StateResolved},
			},
		},
		{
			name: "another instance is another cause", instance: "b",
			steps: []step{
				{c: 9, e: 9, sent: []string{"Cause firing", "Effect firing"}, effect: model.StateFiring},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			src := &fakeSource{instant: func(q string, ts time.Time) (promql.Vector, error) {
				st := tt.steps[i]
				v, inst := st.c, "a"
				if q == "e > 5" {
					v, inst = st.e, tt.instance
				}
				if v <= 5 {
					return nil, nil
				}
				return promql.Vector{{Metric: labels.FromStrings("instance", inst), F: v, T: ts.UnixMilli()}}, nil
			}}
			rec := &recorder{}
			m, _ := newTestManager(t, src, rec, "", rules)
			for ; i < len(tt.steps); i++ {
				st := tt.steps[i]
				require.NoError(t, m.EvalGroups(context.Background(), t0.Add(time.Duration(i)*10*time.Second)))
				var sent []string
				for _, a := range rec.take() {
					sent = append(sent, fmt.Sprintf("%s %s", a.Name(), a.State))
				}
				require.ElementsMatch(t, st.sent, sent, "step %d", i)
				effect, suppressed := model.StateInactive, ""
				m.mu.Lock()
				groups := m.groups
				m.mu.Unlock()
				for _, g := range groups {
					for _, rs := range g.rules {
						if rs.rule.Name != "Effect" {
							continue
						}
						rs.mu.Lock()
						for _, a := range rs.alerts {
							effect, suppressed = a.State, a.SuppressedBy
						}
						rs.mu.Unlock()
					}
				}
				require.Equal(t, st.effect, effect, "step %d", i)
				require.Equal(t, st.suppressed, suppressed, "step %d", i)
				if st.suppressed != "" {
					// The API shows the alert and its cause, as Alertmanager
					// shows an inhibited alert.
					w := httptest.NewRecorder()
					m.AlertsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/alerts", nil))
					require.Contains(t, w.Body.String(), `"suppressedBy":"Cause"`, "step %d", i)
					w = httptest.NewRecorder()
					m.RulesHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/rules", nil))
					require.Contains(t, w.Body.String(), `"suppressedBy":["Cause"]`, "step %d", i)
				}
			}
			for _, tr := range rec.transitions {
				if tr.Rule == "Effect" && tr.To == model.StateFiring {
					require.Equal(t, tt.steps[0].c > 5 && tt.instance == "a", tr.SuppressedBy == "Cause",
						"transition at %v carries the suppression", tr.Time)
					break
				}
			}
		})
	}
}
