package rules

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/internal/apiv1"
	"github.com/seismo-agent/seismo/internal/model"
)

// Lifecycle holds the timing knobs of the alert state machine.
type Lifecycle struct {
	// ResendDelay is how often a firing alert is sent again so that
	// downstream can push its endsAt forward.
	ResendDelay time.Duration
	// ResolvedRetention is how long a resolved alert is kept and re-sent.
	ResolvedRetention time.Duration
	// FlapWindow and FlapThreshold: FlapThreshold or more firing/resolved
	// changes within FlapWindow make the alert flapping.
	FlapWindow    time.Duration
	FlapThreshold int
}

// alertState is one alert instance's lifecycle.
type alertState struct {
	Labels      labels.Labels    `json:"labels"`
	Annotations labels.Labels    `json:"annotations"`
	State       model.AlertState `json:"state"`
	ActiveAt    time.Time        `json:"activeAt"`
	FiredAt     time.Time        `json:"firedAt"`
	ResolvedAt  time.Time        `json:"resolvedAt"`
	LastSentAt  time.Time        `json:"lastSentAt"`
	// KeepFiringSince is when the condition went false while firing.
	KeepFiringSince time.Time `json:"keepFiringSince"`
	// HeldBy says what holds a firing alert whose condition is false
	// (one of the hold* reasons); empty otherwise.
	HeldBy    string  `json:"heldBy,omitempty"`
	Value     float64 `json:"value"`
	PeakValue float64 `json:"peakValue"`
	// Transitions are the times of firing/resolved changes in the flap window.
	Transitions []time.Time `json:"transitions,omitempty"`
	Flapping    bool        `json:"flapping,omitempty"`
	// FlapSent is set once the single flapping notice went out.
	FlapSent bool `json:"flapSent,omitempty"`
	// SuppressedBy names the rule whose alert suppresses this one in its
	// current episode; a suppressed alert is never sent.
	SuppressedBy string `json:"suppressedBy,omitempty"`
	// SuppressedHang is set when SuppressedBy's alert is on a series that
	// stopped moving with this one's, one hang (see "One hang, one
	// page"): a firing alert stays suppressed until it resolves. It is
	// set and cleared with SuppressedBy.
	SuppressedHang bool `json:"suppressedHang,omitempty"`

	Verdict     detect.Verdict     `json:"verdict"`
	Explanation *model.Explanation `json:"explanation,omitempty"`
	// Fired is the normal band of the verdict the alert fired for (anomaly
	// rules); nil for other rules and before it fires.
	Fired *firedBand `json:"fired,omitempty"`
	// Unrecovered is set when the alert resolved with its value still
	// beyond Fired on the side it fired for (see noteUnrecovered).
	Unrecovered bool `json:"unrecovered,omitempty"`
	// Series is the hash of the source series (univariate rules), for
	// Recent values; 0 otherwise.
	Series uint64 `json:"series,omitempty"`
}

// firedBand is the normal band an anomaly alert fired against, and the
// side it fired on.
type firedBand struct {
	Lower     float64          `json:"lower"`
	Upper     float64          `json:"upper"`
	Direction detect.Direction `json:"direction"`
}

// condition is one evaluation's input to the state machine.
type condition struct {
	active  bool
	warming bool
	// known is false when the series is gone (no current value).
	known bool
	// held is set while the detector's alert episode is open
	// (detect.Verdict.Episode, holdEpisode), or while the series stays
	// beyond every estimate of normal it had before the move began
	// (detect.Verdict.Shifted, holdMove), or lingers away from the
	// normal it had at the alert (detect.Verdict.Lingering,
	// holdLingering): the incident it alerted on goes on, whether or not
	// this sample is anomalous. Empty otherwise.
	held  string
	value float64
}

// What holds a firing alert whose condition is false (alertState.HeldBy):
// the API's words, which the console reads.
const (
	holdEpisode       = apiv1.HeldByEpisode
	holdMove          = apiv1.HeldByMove
	holdLingering     = apiv1.HeldByLingering
	holdKeepFiringFor = apiv1.HeldByKeepFiringFor
)

// holdOf is the reason a verdict holds an alert, or "" when it does not.
func holdOf(v detect.Verdict) string {
	switch {
	case v.Episode:
		return holdEpisode
	case v.Shifted:
		return holdMove
	case v.Lingering:
		return holdLingering
	}
	return ""
}

// step advances the state machine at ts. It returns true when the alert is
// finished and can be dropped.
func (a *alertState) step(ts time.Time, c condition, r *Rule, lc Lifecycle) (drop bool) {
	if c.known {
		a.Value = c.value
	}
	switch {
	case c.active:
		a.KeepFiringSince, a.HeldBy = time.Time{}, ""
		switch a.State {
		case model.StateInactive, model.StateWarmingUp, model.StateResolved:
			a.State = model.StatePending
			a.ActiveAt = ts
			a.PeakValue = c.value
			a.ResolvedAt = time.Time{}
			a.Unrecovered = false
		}
		if c.value > a.PeakValue {
			a.PeakValue = c.value
		}
		if a.State == model.StatePending && ts.Sub(a.ActiveAt) >= r.For {
			a.State = model.StateFiring
			a.FiredAt = ts
			a.Fired = nil
			if v := a.Verdict; v.Upper > v.Lower {
				a.Fired = &firedBand{Lower: v.Lower, Upper: v.Upper, Direction: v.Direction}
			}
			if !a.Flapping {
				a.LastSentAt = time.Time{} // a new firing episode is sent at once
			}
			a.transition(ts, lc)
		}
	case a.State == model.StateFiring && c.warming && c.known:
		// A detector that cannot judge yet (rebuilt after a config change,
		// or cold after a lost snapshot) is no evidence of recovery: hold.
	case a.State == model.StateFiring:
		// The condition is false. KeepFiringSince says since when, and
		// the alert holds while keep_firing_for has not passed since
		// then, or while the detector's episode is open (c.held): a lull
		// within an incident that comes in waves, which the detector has
		// not seen calm for long enough to end. Resolving there and
		// firing again at the next wave would page once per wave.
		episode := c.held != "" && c.known
		if episode || r.KeepFiringFor > 0 {
			if a.KeepFiringSince.IsZero() {
				a.KeepFiringSince = ts
			}
			if episode {
				a.HeldBy = c.held
				break
			}
			if ts.Sub(a.KeepFiringSince) < r.KeepFiringFor {
				a.HeldBy = holdKeepFiringFor
				break
			}
		}
		lingered := a.HeldBy == holdLingering && ts.Sub(a.ActiveAt) >= detect.LingerFor
		a.State = model.StateResolved
		a.ResolvedAt = ts
		a.KeepFiringSince, a.HeldBy = time.Time{}, ""
		a.noteUnrecovered(c, lingered)
		a.transition(ts, lc)
	case a.State == model.StatePending, a.State == model.StateInactive, a.State == model.StateWarmingUp:
		if c.warming && c.known {
			a.State = model.StateWarmingUp
			return false
		}
		return true
	case a.State == model.StateResolved:
		a.expireTransitions(ts, lc)
		if ts.Sub(a.ResolvedAt) > lc.ResolvedRetention && !a.Flapping {
			return true
		}
	}
	a.updateFlapping(ts, lc)
	return false
}

// noteUnrecovered marks an anomaly alert that resolves with its value
// (c, known) still beyond the normal band it fired against, on the side
// it fired for, or that was held until then by its series lingering
// away from the normal it had at the alert, for as long as the detector
// remembers that normal (lingered; detect.LingerFor), and says so in its
// explanation's summary. An adaptive detector ends an incident once it
// has learnt the new level: a latency doubled for good by a deploy is
// the series' new normal a day later (detect, "A lasting change: a new
// regime"), and before this the resolve read as a recovery. So did a
// noise that stayed three times what it was: its value at the resolve
// may lie within the band.
func (a *alertState) noteUnrecovered(c condition, lingered bool) {
	f := a.Fired
	if f == nil || !c.known || a.Explanation == nil {
		return
	}
	v, side := c.value, ""
	switch {
	case v > f.Upper && f.Direction != detect.DirDown:
		side = "above"
	case v < f.Lower && f.Direction != detect.DirUp:
		side = "below"
	case !lingered:
		return
	}
	a.Unrecovered = true
	e := *a.Explanation
	n := fmtNums(v, f.Lower, f.Upper)
	if side != "" {
		e.Summary += fmt.Sprintf("; resolved without recovering: %s is still %s the normal range of %s to %s it had when the alert fired, and the detector now takes it for normal", n[0], side, n[1], n[2])
	} else {
		e.Summary += fmt.Sprintf("; resolved without recovering: for %s the series stayed away from the normal it had when the alert fired (%s to %s), and the detector now takes it for normal", humanHours(detect.LingerFor), n[1], n[2])
	}
	a.Explanation = &e
}

// humanHours writes d in hours ("a day" for 24).
func humanHours(d time.Duration) string {
	if d == 24*time.Hour {
		return "a day"
	}
	return strconv.FormatFloat(d.Hours(), 'f', -1, 64) + " hours"
}

func (a *alertState) transition(ts time.Time, lc Lifecycle) {
	a.Transitions = append(a.Transitions, ts)
	a.expireTransitions(ts, lc)
}

func (a *alertState) expireTransitions(ts time.Time, lc Lifecycle) {
	i := 0
	for i < len(a.Transitions) && ts.Sub(a.Transitions[i]) > lc.FlapWindow {
		i++
	}
	a.Transitions = a.Transitions[i:]
}

func (a *alertState) updateFlapping(ts time.Time, lc Lifecycle) {
	if lc.FlapThreshold <= 0 {
		return
	}
	a.expireTransitions(ts, lc)
	n := len(a.Transitions)
	switch {
	case !a.Flapping && n >= lc.FlapThreshold:
		a.Flapping = true
		a.FlapSent = false
	case a.Flapping && n == 0:
		// Quiet for a whole window: tell the current state once.
		a.Flapping = false
		a.FlapSent = false
		a.LastSentAt = time.Time{}
	}
}

// needsSending reports whether the alert goes to the notifier at ts.
func (a *alertState) needsSending(ts time.Time, lc Lifecycle) bool {
	if a.SuppressedBy != "" {
		return false
	}
	if a.Flapping {
		return !a.FlapSent || !a.LastSentAt.Add(lc.ResendDelay).After(ts)
	}
	switch a.State {
	case model.StateFiring:
		return !a.LastSentAt.Add(lc.ResendDelay).After(ts)
	case model.StateResolved:
		return a.ResolvedAt.After(a.LastSentAt) || !a.LastSentAt.Add(lc.ResendDelay).After(ts)
	}
	return false
}
