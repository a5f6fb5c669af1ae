package rules

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/model"
)

// TestStoppedWith: an alert that begins on a series that has stopped
// moving names the other rules' series of its target that stopped
// within frozenTogether of it, five in its summary and all in
// StoppedWith; not those of another target, nor one that stopped an
// hour apart, nor anything when its own series still moves.
func TestStoppedWith(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	own := &seriesState{labels: labels.FromStrings("__name__", "queue", "instance", "a")}
	for i := range 8 {
		own.push(t0.Add(time.Duration(i)*time.Minute), 42)
	}
	moving := &seriesState{labels: labels.FromStrings("__name__", "queue", "instance", "c")}
	for i := range 8 {
		moving.push(t0.Add(time.Duration(i)*time.Minute), float64(i))
	}
	rs := &ruleState{series: map[uint64]*seriesState{1: own, 2: moving}}
	var stopped []cause
	for i := range 7 {
		stopped = append(stopped, cause{rule: fmt.Sprintf("R%d", i), labels: labels.FromStrings("instance", "a"), since: t0.Add(time.Duration(i) * time.Minute)})
	}
	stopped = append(stopped,
		cause{rule: "Other", labels: labels.FromStrings("instance", "b"), since: t0},
		cause{rule: "Later", labels: labels.FromStrings("instance", "a"), since: t0.Add(time.Hour)},
	)
	obsv := []obs{
		{series: 1, cond: condition{active: true}, verdict: detect.Verdict{Score: 0.9}, expl: &model.Explanation{Summary: "Queue: frozen"}},
		{series: 2, cond: condition{active: true}, verdict: detect.Verdict{Score: 0.9}, expl: &model.Explanation{Summary: "Queue: spike"}},
	}
	rs.stoppedWith(obsv, stopped)
	want := []string{}
	for i := range 7 {
		want = append(want, fmt.Sprintf(`R%d{instance="a"}`, i))
	}
	require.Equal(t, want, obsv[0].expl.StoppedWith)
	require.Equal(t, `Queue: frozen; stopped with it: R0{instance="a"}, R1{instance="a"}, R2{instance="a"}, R3{instance="a"}, R4{instance="a"} and 2 more`, obsv[0].expl.Summary)
	require.Empty(t, obsv[1].expl.StoppedWith, "a series that moves")
	require.Equal(t, "Queue: spike", obsv[1].expl.Summary)
}
