// Package notify turns alert transitions into notifications. It owns the
// dispatcher (routing, grouping, de-duplication, group_wait/group_interval/
// repeat_interval with Alertmanager's semantics, silences), the persistent
// outbox with retries and back-off written once for every integration, and the
// status-update drafts that go with each incident. Integrations live in their
// own packages (notify/slack, notify/webhook, notify/alertmanager,
// notify/file) and implement Notifier.
package notify

import (
	"context"
	"maps"
	"slices"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/draft"
)

// Notifier delivers one notification: the alerts of one group.
//
// Notify must return promptly when ctx is cancelled. It reports whether a
// failed delivery is worth retrying (network errors, 5xx, 429); the caller
// owns retries, back-off and logging, so an implementation makes exactly one
// attempt and returns. An error that carries a server's Retry-After hint
// should be wrapped with RetryAfter. Errors must not contain secrets (see
// Redact). Notify is called from one goroutine per integration at a time.
type Notifier interface {
	Notify(ctx context.Context, alerts ...*model.Alert) (retry bool, err error)
}

// DraftNotifier is implemented by integrations that can deliver a
// status-update draft for review. The same contract as Notifier applies.
type DraftNotifier interface {
	NotifyDraft(ctx context.Context, d *draft.Draft) (retry bool, err error)
}

// Group describes the alert group a notification belongs to.
type Group struct {
	// Key identifies the group across notifications (route path and the values
	// of the group_by labels); integrations use it to update earlier messages.
	Key string `json:"key"`
	// Receiver is the name of the receiver the notification is for.
	Receiver string `json:"receiver"`
	// Labels are the group_by label values.
	Labels map[string]string `json:"labels,omitempty"`
}

type groupKey struct{}

// WithGroup returns a context carrying g for Notify. The Notifier interface
// is fixed (as Alertmanager's is), so the group travels in the context; every
// integration works without it and falls back to values derived from the
// alerts.
func WithGroup(ctx context.Context, g Group) context.Context {
	return context.WithValue(ctx, groupKey{}, g)
}

// GroupFrom returns the group carried by ctx, or a group derived from the
// alerts' common labels when there is none.
func GroupFrom(ctx context.Context, alerts ...*model.Alert) Group {
	if g, ok := ctx.Value(groupKey{}).(Group); ok {
		return g
	}
	common := CommonLabels(alerts)
	return Group{Key: "{}", Labels: common}
}

// CommonLabels returns the labels whose name and value all alerts share.
func CommonLabels(alerts []*model.Alert) map[string]string {
	if len(alerts) == 0 {
		return map[string]string{}
	}
	out := alerts[0].Labels.Map()
	for _, a := range alerts[1:] {
		for k, v := range out {
			if a.Labels.Get(k) != v {
				delete(out, k)
			}
		}
	}
	return out
}

// CommonAnnotations returns the annotations all alerts share.
func CommonAnnotations(alerts []*model.Alert) map[string]string {
	if len(alerts) == 0 {
		return map[string]string{}
	}
	out := maps.Clone(alerts[0].Annotations)
	if out == nil {
		out = map[string]string{}
	}
	for _, a := range alerts[1:] {
		for k, v := range out {
			if a.Annotations[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// Status returns "firing" when any alert is firing, else "resolved".
func Status(alerts []*model.Alert) string {
	if slices.ContainsFunc(alerts, func(a *model.Alert) bool { return !a.Resolved() }) {
		return "firing"
	}
	return "resolved"
}
