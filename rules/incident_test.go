package rules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/store"
)

// replayShape replays the built-in pack over a synthetic recording of shape
// and returns its transitions and the outage's onset.
func replayShape(t *testing.T, shape string, start time.Time) (*ReplayResult, time.Time) {
	t.Helper()
	rec, onset := genRecording(shape, start)
	if *recordingsDir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(*recordingsDir, shape+".om"), rec, 0o644))
	}
	st, err := store.New(store.Options{Config: store.Config{Retention: 24 * time.Hour, MaxSeries: 10000}})
	require.NoError(t, err)
	stats, err := LoadOpenMetrics(st, rec)
	require.NoError(t, err)
	// An hour of normal traffic is two baseline time constants and eight
	// warm-ups: enough, and it keeps the replay short under -race.
	res, err := Replay(context.Background(), ReplayOptions{
		Config: DefaultConfig(), Source: newEngineSource(st), Start: onset.Add(-time.Hour), End: stats.End,
	})
	require.NoError(t, err)
	return res, onset
}

// pages are the firing transitions a receiver is sent: those of alerts not
// suppressed by a firing cause.
func pages(res *ReplayResult) []Transition {
	var out []Transition
	for _, tr := range res.Transitions {
		if tr.To == model.StateFiring && tr.SuppressedBy == "" {
			out = append(out, tr)
		}
	}
	return out
}

func describe(trs []Transition, onset time.Time) string {
	var b []string
	for _, tr := range trs {
		s := fmt.Sprintf("%s %s at %+v", tr.Rule, tr.To, tr.Time.Sub(onset))
		if tr.SuppressedBy != "" {
			s += " (suppressed by " + tr.SuppressedBy + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, ", ")
}

// TestIncidentScenarios replays the built-in pack over outages that used
// to page as alert storms or late, and over their look-alikes:
//
//   - a half-intensity rate-limit storm in waves (the limiter's state
//     cleared every 200 s) is one incident: exactly one firing and one
//     resolve of RateLimitStorm;
//   - a surge that saturates the service is one page, naming the surge,
//     within 60 s of the traffic step (or of the traffic passing capacity
//     when it ramps up over four minutes); HighErrorRate and ProbeFailing
//     are suppressed by it;
//   - look-alikes never page: proportional overload, one abusive client
//     sending 25× its traffic, a deploy's blips.
func TestIncidentScenarios(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		shape string
		want  string // the one alert that pages; "" for none
		// within bounds the delay from onset + from to the page.
		from, within time.Duration
	}{
		{shape: "sawtooth", want: "RateLimitStorm", within: 30 * time.Second},
		{shape: "surge-step", want: "TrafficSurgeSaturation", within: 60 * time.Second},
		{shape: "surge-ramp", want: "TrafficSurgeSaturation", from: time.Minute, within: 60 * time.Second},
		{shape: "proportional"},
		{shape: "abusive"},
		{shape: "deploy"},
	}
	for _, tt := range tests {
		t.Run(tt.shape, func(t *testing.T) {
			res, onset := replayShape(t, tt.shape, start)
			ps := pages(res)
			var all []Transition
			for _, tr := range res.Transitions {
				if tr.To == model.StateFiring || tr.To == model.StateResolved {
					all = append(all, tr)
				}
			}
			t.Logf("%s: %d page(s); transitions: %s", tt.shape, len(ps), describe(all, onset))
			if tt.want == "" {
				require.Empty(t, ps, "look-alike paged: %s", describe(ps, onset))
				return
			}
			require.Len(t, ps, 1, "want one page: %s", describe(ps, onset))
			p := ps[0]
			require.Equal(t, tt.want, p.Rule)
			delay := p.Time.Sub(onset.Add(tt.from))
			t.Logf("%s paged %v after onset (%v after onset+%v): %s", p.Rule, p.Time.Sub(onset), delay, tt.from, p.Explanation.Summary)
			require.GreaterOrEqual(t, delay, -tt.from, "paged before the onset")
			require.LessOrEqual(t, delay, tt.within, "paged too late")
			var fired, resolved int
			for _, tr := range all {
				if tr.Rule != tt.want {
					continue
				}
				switch tr.To {
				case model.StateFiring:
					fired++
				case model.StateResolved:
					resolved++
				}
			}
			require.Equal(t, 1, fired, "firing transitions of %s", tt.want)
			require.Equal(t, 1, resolved, "resolve transitions of %s", tt.want)
		})
	}
}
