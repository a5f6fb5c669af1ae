package rules

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
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
func replayShape(t *testing.T, shape string, start time.Time, cfg Config) (*ReplayResult, time.Time) {
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
		Config: cfg, Source: newEngineSource(st), Start: onset.Add(-time.Hour), End: stats.End,
	})
	require.NoError(t, err)
	return res, onset
}

// pages are the firing transitions that page: alerts of severity page not
// suppressed by a firing cause (informational alerts, such as
// HostCPUAnomaly rising with a surge's load, tell but do not page).
func pages(res *ReplayResult) []Transition {
	var out []Transition
	for _, tr := range res.Transitions {
		if tr.To == model.StateFiring && tr.SuppressedBy == "" && tr.Labels.Get("severity") == "page" {
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
//     within 60 s of the traffic step, or of the start of a ramp to 5x over
//     four minutes (before traffic passes capacity: the in-flight requests
//     are filling the workers); HighErrorRate and ProbeFailing are
//     suppressed by it, and the surge's explanation gains the 5xx and the
//     failing probe as they follow;
//   - look-alikes never page: proportional overload, one abusive client
//     sending 25× its traffic, a deploy's blips.
func TestIncidentScenarios(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string // the shape when empty
		shape string
		want  string // the one alert that pages; "" for none
		// poolSize, when set, is the built-in pack's worker_pool_size.
		poolSize float64
		// within bounds the delay from onset + from to the page.
		from, within time.Duration
		// evidence, when set, must be named by the paging alert's
		// explanation three minutes after onset.
		evidence []string
	}{
		{shape: "sawtooth", want: "RateLimitStorm", within: 30 * time.Second},
		{shape: "surge-step", want: "TrafficSurgeSaturation", within: 60 * time.Second,
			evidence: []string{"5xx", "health checks"}},
		{shape: "surge-ramp", want: "TrafficSurgeSaturation", within: 60 * time.Second,
			evidence: []string{"5xx", "health checks"}},
		// A service that exports no pool size: the ramp pages once
		// saturation shows, 30 s after traffic passes capacity...
		{shape: "surge-ramp-nopool", want: "TrafficSurgeSaturation", within: 120 * time.Second,
			evidence: []string{"5xx", "health checks"}},
		// ...unless the pool's size is given in the config.
		{name: "surge-ramp-pool-size", shape: "surge-ramp-nopool", want: "TrafficSurgeSaturation", within: 60 * time.Second,
			poolSize: recWorkers(2, 0.04), evidence: []string{"5xx", "health checks"}},
		{shape: "proportional"},
		{shape: "abusive"},
		{shape: "deploy"},
	}
	for _, tt := range tests {
		t.Run(cmp.Or(tt.name, tt.shape), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Builtin.Metrics.WorkerPoolSize = tt.poolSize
			res, onset := replayShape(t, tt.shape, start, cfg)
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
			if strings.HasPrefix(tt.shape, "surge-ramp") {
				// The ramp pages early by the pool's size, from the gauge
				// or the config, and only then.
				if strings.HasSuffix(tt.shape, "-nopool") && tt.poolSize == 0 {
					require.NotContains(t, p.Explanation.Summary, "in flight for") // "N in flight for <pool size>"
				} else {
					require.Contains(t, p.Explanation.Summary, "in flight for")
				}
			}
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
			if len(tt.evidence) == 0 {
				return
			}
			// The 5xx and probe alerts are the surge's evidence: they fire
			// suppressed by it, and its explanation names them.
			for _, rule := range []string{"HighErrorRate", "ProbeFailing"} {
				var by []string
				for _, tr := range all {
					if tr.Rule == rule && tr.To == model.StateFiring {
						by = append(by, tr.SuppressedBy)
					}
				}
				require.Equal(t, []string{tt.want}, by, "%s firings and what suppressed them", rule)
			}
			x := explanationAt(t, tt.shape, start, onset.Add(3*time.Minute), tt.want)
			t.Logf("%s at +3m: %s", tt.want, x.Summary)
			for _, e := range tt.evidence {
				require.Contains(t, x.Summary, e)
			}
		})
	}
}

// explanationAt replays the built-in pack over shape's recording until at
// and returns the explanation of the firing alert rule.
func explanationAt(t *testing.T, shape string, start, at time.Time, rule string) *model.Explanation {
	t.Helper()
	rec, onset := genRecording(shape, start)
	st, err := store.New(store.Options{Config: store.Config{Retention: 24 * time.Hour, MaxSeries: 10000}})
	require.NoError(t, err)
	_, err = LoadOpenMetrics(st, rec)
	require.NoError(t, err)
	m, err := NewManager(Options{Source: newEngineSource(st)})
	require.NoError(t, err)
	defer m.Close()
	m.anySource = true
	cfg := DefaultConfig()
	cfg.WatchFiles = false
	require.NoError(t, m.ApplyConfig(cfg))
	for _, g := range m.Groups() {
		require.Equal(t, cfg.Builtin.Interval, g.Interval, "one evaluation interval")
	}
	for ts := onset.Add(-time.Hour); !ts.After(at); ts = ts.Add(cfg.Builtin.Interval) {
		require.NoError(t, m.EvalGroups(context.Background(), ts))
	}
	for _, a := range m.Alerts() {
		if a.Labels.Get("alertname") == rule && a.State == model.StateFiring {
			require.NotNil(t, a.Explanation)
			return a.Explanation
		}
	}
	require.FailNow(t, "not firing", "%s at %v", rule, at)
	return nil
}

var diurnalDays = flag.Float64("days", 0, "TestBuiltinPackDiurnal: replay this many simulated days from Monday 00:00 (default: one weekday, 07:00 to 16:00)")

// diurnalState is the service at ts on an ordinary day: diurnal load (5 %
// at 03:00, 100 % at 15:00, weekends at 70 %), a heavy client that hits
// its quota whenever load is above 80 %, and the look-alikes of real
// outages: at 09:00 ten minutes of proportional overload (traffic 2.5×
// within a minute, absorbed: p99 up 15 %); at 11:00 a deploy's blip (one
// scrape with p99 × 2.5, the probe failing once, 3 % 5xx); at 14:00 ten
// minutes of the heavy client sending 25× its traffic (3.5× the total),
// all but a trickle of it rejected with 429.
func diurnalState(ts time.Time) recState {
	s := normalState()
	y, m, d := ts.Date()
	day := ts.Sub(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
	x := (1 - math.Cos(2*math.Pi*(day.Hours()/24-0.125))) / 2
	load := 0.05 + 0.95*math.Pow(x, 1.5)
	if wd := ts.Weekday(); wd == time.Saturday || wd == time.Sunday {
		load *= 0.7
	}
	s.trafficK = load
	if load > 0.8 {
		s.heavyShare = 0.6
	}
	switch at := func(h int) time.Duration { return day - time.Duration(h)*time.Hour }; {
	case at(9) >= 0 && at(9) < 10*time.Minute:
		k := 1 + 1.5*math.Min(at(9).Seconds()/60, 1)
		s.trafficK *= k
		s.latMedian *= 1 + 0.1*(k-1)
	case at(11) >= 0 && at(11) < recStep:
		s.latMedian *= 2.5
		s.probeOK = false
		s.errShare = 0.03
	case at(14) >= 0 && at(14) < 10*time.Minute:
		s.limitOnly, s.limitShare, s.hotK = "c0", 0.96, 25*load
	}
	return s
}

// TestBuiltinPackDiurnal replays the built-in pack over ordinary days with
// their look-alikes of outages and fails on any page (severity page, not
// suppressed). By default it covers one weekday from 07:00 to 16:00 (the
// morning ramp, the three look-alikes, the peak); -days 7 replays a week.
func TestBuiltinPackDiurnal(t *testing.T) {
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC) // a Monday
	end := start.Add(9 * time.Hour)
	if *diurnalDays > 0 {
		start = start.Truncate(24 * time.Hour)
		end = start.Add(time.Duration(*diurnalDays * float64(24*time.Hour)))
	}
	st, err := store.New(store.Options{Config: store.Config{Retention: end.Sub(start) + 24*time.Hour, MaxSeries: 10000}})
	require.NoError(t, err)
	samples := 0
	genStatesTo(7, start, end, diurnalState, 32<<20, func(b []byte) {
		stats, err := LoadOpenMetrics(st, b)
		require.NoError(t, err)
		samples += stats.Samples
	})
	res, err := Replay(context.Background(), ReplayOptions{
		Config: DefaultConfig(), Source: newEngineSource(st), Start: start, End: end,
	})
	require.NoError(t, err)
	fired := map[string]int{}
	var ps []Transition
	for _, tr := range res.Transitions {
		if tr.To != model.StateFiring {
			continue
		}
		fired[tr.Rule]++
		if tr.SuppressedBy == "" && tr.Labels.Get("severity") == "page" {
			ps = append(ps, tr)
		}
	}
	t.Logf("%v to %v: %d samples, %d evaluations; firing transitions by rule (info included): %v; pages: %d",
		start.Format("Mon 2 Jan 15:04"), end.Format("Mon 2 Jan 15:04"), samples, res.Evaluations, fired, len(ps))
	require.Empty(t, ps, "pages on an ordinary day: %s", describe(ps, start))

	// The quiet is earned: the look-alikes are in the data.
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	src := newEngineSource(st)
	for _, c := range []struct {
		at   time.Duration
		expr string
	}{
		{9*time.Hour + 5*time.Minute, `sum(rate(http_requests_total[1m])) > 2 * sum(rate(http_requests_total[1m] offset 10m))`},
		{11*time.Hour + 30*time.Second, `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m]))) > 1.5 * histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[1m] offset 10m)))`},
		{14*time.Hour + 5*time.Minute, `sum(rate(http_requests_total[1m])) > 3 * sum(rate(http_requests_total[1m] offset 10m))`},
		{14*time.Hour + 5*time.Minute, `sum(rate(http_requests_total{code="429"}[1m])) / sum(rate(http_requests_total[1m])) > 0.5`},
	} {
		v, err := src.Instant(context.Background(), c.expr, day.Add(c.at))
		require.NoError(t, err)
		require.Len(t, v, 1, "at %v: %s", c.at, c.expr)
	}
}
