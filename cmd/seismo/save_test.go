package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
)

// TestSaveOnTransition checks that the rule state is saved before a state
// change is handed on, and not for periodic re-sends.
func TestSaveOnTransition(t *testing.T) {
	var events []string
	save := func() error { events = append(events, "save"); return nil }
	next := func(_ context.Context, alerts ...*model.Alert) {
		for _, a := range alerts {
			events = append(events, "notify "+a.State.String())
		}
	}
	f := saveOnTransition(slog.New(slog.DiscardHandler), save, next)
	a := &model.Alert{Labels: labels.FromStrings("alertname", "A"), State: model.StateFiring}
	f(context.Background(), a)
	f(context.Background(), a) // re-send
	r := *a
	r.State = model.StateResolved
	f(context.Background(), &r)
	f(context.Background(), &r) // re-send
	require.Equal(t, []string{"save", "notify firing", "notify firing", "save", "notify resolved", "notify resolved"}, events)
}
