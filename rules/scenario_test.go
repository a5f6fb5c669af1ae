package rules

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/store"
)

var recordingsDir = flag.String("recordings", "", "also write the synthetic OpenMetrics recordings to this directory")

// Synthetic recordings: two hours of normal traffic, then one outage shape
// from onset to the end (20 minutes). Every scrape is 15s apart.
const (
	recStep    = 15 * time.Second
	recNormal  = 2 * time.Hour
	recOutage  = 20 * time.Minute
	recClients = 6
)

var recRoutes = []string{"/", "/checkout"}
var recBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

type recState struct {
	// per outage progress in [0,1] since onset (0 = normal)
	trafficK    float64 // request-rate multiple
	latMedian   float64 // seconds
	limitShare  float64 // share of requests answered 429
	limitOnly   string  // when set, only this client is limited
	errShare    float64 // share answered 5xx
	cpuPerReq   float64 // CPU seconds per request
	cpuCap      float64 // cores available
	queue       float64
	probeOK     bool
	capacityRPS float64
	hotK        float64 // traffic multiple of the limitOnly client
	heavyShare  float64 // share of client c0's requests limited (its quota)
	workers     float64 // the worker pool's size
}

func normalState() recState {
	return recState{trafficK: 1, latMedian: 0.04, limitShare: 0.002, errShare: 0.001, cpuPerReq: 0.01, cpuCap: 4, queue: 0.5, probeOK: true,
		capacityRPS: 1e9, workers: recWorkers(2, 0.04)}
}

// recWorkers sizes the worker pool for capK times the normal traffic at a
// median latency of lat: the in-flight requests (served rate × mean
// latency, plus the normal queue, as genStatesTo writes them) at that
// traffic fill it.
func recWorkers(capK, lat float64) float64 {
	const normalRPS = 29.2 // six clients of 2..4.5 req/s on "/", half that on "/checkout"
	return capK*normalRPS*lat*math.Exp(0.18) + 0.5
}

// Half intensity: the storm limits about half as many requests as the
// full-strength scenario, so each wave's edges spend longer between "a
// few clients limited" and "most clients limited".
const halfStormShare = 0.425

// recSpan is how long a shape's outage lasts and how much normal traffic
// follows it (to see the alert resolve).
func recSpan(shape string) (outage, tail time.Duration) {
	switch shape {
	case "sawtooth", "surge-step", "surge-ramp":
		return recOutage, 15 * time.Minute
	}
	return recOutage, 0
}

// overload fills s for traffic k× normal against a capacity of capK×
// normal that has been exceeded for sat (negative: not exceeded). Work
// queues at once, so queue length and in-flight requests rise first; the
// p99 follows as the queue wait grows; after a minute queued requests
// time out as 5xx, and after 90 s the health checks, served by the same
// saturated workers, fail.
func overload(s *recState, k, capK float64, sat time.Duration) {
	s.trafficK = k
	if sat < 0 || k <= capK {
		return
	}
	over := (k - capK) / k
	grow := math.Min(sat.Seconds()/60, 1)
	s.queue = 0.5 + 200*over*grow
	s.latMedian = 0.04 + 3*over*grow
	if sat >= time.Minute {
		s.errShare = 0.6 * over
	}
	if sat >= 90*time.Second {
		s.probeOK = false
	}
}

// outageState returns the shape's state d after onset.
func outageState(shape string, d time.Duration) recState {
	s := normalState()
	if shape == "proportional" {
		s.workers = recWorkers(5, 0.04*1.4) // room for 5x, at the p99 that 5x would have
	}
	if d < 0 {
		return s
	}
	if out, _ := recSpan(shape); d > out {
		return s
	}
	switch shape {
	case "saturation":
		// Threads cannot start: requests queue, CPU stays flat (even drops).
		s.latMedian = 1.5
		s.queue = 60
		s.cpuPerReq = 0.008
		s.errShare = 0.01
	case "storm":
		// The limiter limits everybody; its LRU is reset every 5 minutes,
		// letting bursts through for a minute (sawtooth).
		s.limitShare = 0.85
		if m := int(d.Minutes()); m > 0 && m%5 == 0 {
			s.limitShare = 0.3
		}
	case "sawtooth":
		// Half intensity, in waves: the limiter's state is cleared every
		// 200 s, and for 80 s after each clearing nearly everything gets
		// through before the shared bucket runs dry again.
		if d%(200*time.Second) < 120*time.Second {
			s.limitShare = halfStormShare
		}
	case "lookalike":
		// One abusive client is limited alone: legitimate limiting.
		s.limitShare = 0.9
		s.limitOnly = "c5"
	case "abusive":
		// One client sends 25× its usual traffic (total about 6×) and is
		// limited alone: a surge of cheap 429s, not of work.
		s.limitShare = 0.96
		s.limitOnly = "c5"
		s.hotK = 25
	case "surge":
		// 5x traffic within two minutes; capacity runs out at 2x.
		ramp := math.Min(d.Seconds()/120, 1)
		s.trafficK = 1 + 4*ramp
		if s.trafficK > 2 {
			over := (s.trafficK - 2) / s.trafficK
			s.latMedian = 0.04 + 3*over
			s.queue = 200 * over
			s.errShare = 0.6 * over
			s.probeOK = false
		}
		s.cpuCap = 0.6 // the normal load uses 0.3 cores: CPU saturates at 2x
	case "surge-step":
		// A flash crowd: 5x within one scrape; capacity runs out at 2x.
		overload(&s, 5, 2, d)
		s.cpuCap = 0.6
	case "surge-ramp":
		// The exchange's surge: 5x in four minutes; capacity runs out at
		// 2x, a minute in.
		k := 1 + 4*math.Min(d.Seconds()/240, 1)
		overload(&s, k, 2, d-time.Minute)
		s.cpuCap = 0.6
	case "proportional":
		// Traffic 3.5x within a minute on a service with room for 5x:
		// CPU, in-flight requests and latency rise in proportion, nothing
		// queues, nothing fails.
		s.trafficK = 1 + 2.5*math.Min(d.Seconds()/60, 1)
		s.latMedian = 0.04 * (1 + 0.1*(s.trafficK-1))
	case "deploy":
		// A deploy's blip: one scrape with p99 up 2.5x, the probe failing
		// once and 3 % 5xx, every 5 minutes.
		if d%(5*time.Minute) < recStep {
			s.latMedian *= 2.5
			s.probeOK = false
			s.errShare = 0.03
		}
	}
	return s
}

// genRecording writes an OpenMetrics recording of shape ("normal",
// "saturation", "storm", "surge") and returns it with the onset time.
//
// A shape named with the suffix "-nopool" is the same recording (same
// noise) of a service that exports no gauge of its worker pool's size.
func genRecording(shape string, start time.Time) ([]byte, time.Time) {
	shape, noPool := strings.CutSuffix(shape, "-nopool")
	onset := start.Add(recNormal)
	out, tail := recSpan(shape)
	end := onset.Add(out + tail)
	if shape == "normal" {
		onset = time.Time{}
	}
	return genStates(uint64(len(shape)), start, end, func(ts time.Time) recState {
		s := normalState()
		if !onset.IsZero() {
			s = outageState(shape, ts.Sub(onset))
		}
		if noPool {
			s.workers = 0
		}
		return s
	}), onset
}

// genStates writes an OpenMetrics recording from start to end, one scrape
// every recStep, of the service in the state stateAt returns.
func genStates(seed uint64, start, end time.Time, stateAt func(time.Time) recState) []byte {
	var out []byte
	genStatesTo(seed, start, end, stateAt, 0, func(b []byte) { out = append(out, b...) })
	return out
}

// genStatesTo is genStates handing the text to flush in pieces of about
// chunk bytes (0: one piece), each a whole number of scrapes ending with
// "# EOF", so each loads on its own.
func genStatesTo(seed uint64, start, end time.Time, stateAt func(time.Time) recState, chunk int, flush func([]byte)) {
	rng := rand.New(rand.NewPCG(1, seed))
	type key struct{ route, code, client string }
	reqs := map[key]float64{}
	buckets := map[string][]float64{}
	var cpu, nodeBusy, nodeIdle float64
	var b bytes.Buffer
	type line struct {
		name string
		val  float64
	}
	var series []line
	for ts := start; !ts.After(end); ts = ts.Add(recStep) {
		s := stateAt(ts)
		dt := recStep.Seconds()
		total, limited := 0.0, 0.0
		for c := range recClients {
			client := fmt.Sprintf("c%d", c)
			base := 2 + float64(c)/2 // 2..4.5 req/s
			for ri, route := range recRoutes {
				k := s.trafficK
				if client == s.limitOnly && s.hotK > 0 {
					k = s.hotK
				}
				rps := base * k * (1 + 0.1*rng.NormFloat64()) / float64(ri+1)
				if rps < 0 {
					rps = 0
				}
				n := rps * dt
				total += n
				lim := n * s.limitShare
				if s.limitOnly != "" && client != s.limitOnly {
					lim = n * normalState().limitShare
				}
				if s.limitOnly == "" && s.heavyShare > 0 && client == "c0" {
					lim = n * s.heavyShare
				}
				errs := (n - lim) * s.errShare
				limited += lim
				reqs[key{route, "429", client}] += lim
				reqs[key{route, "500", client}] += errs
				reqs[key{route, "200", client}] += n - lim - errs
			}
		}
		for ri, route := range recRoutes {
			bs := buckets[route]
			if bs == nil {
				bs = make([]float64, len(recBuckets)+1)
				buckets[route] = bs
			}
			n := total / float64(len(recRoutes)) * (1 + 0.05*float64(ri))
			med := s.latMedian * (1 + 0.05*rng.NormFloat64())
			for i, le := range recBuckets {
				// log-normal latency, sigma 0.6
				z := (math.Log(le) - math.Log(med)) / 0.6
				bs[i] += n * 0.5 * math.Erfc(-z/math.Sqrt2)
			}
			bs[len(recBuckets)] += n
		}
		// A 429 costs a tenth of a served request.
		served := total - limited
		busy := math.Min((served+limited/10)*s.cpuPerReq/dt, s.cpuCap) * (1 + 0.03*rng.NormFloat64())
		cpu += busy * dt
		nodeBusy += (busy + 0.2) * dt
		nodeIdle += (4 - busy - 0.2) * dt
		queue := math.Max(0, s.queue*(1+0.2*rng.NormFloat64()))
		probe := 1.0
		if !s.probeOK {
			probe = 0
		}
		series = series[:0]
		for k, v := range reqs {
			series = append(series, line{fmt.Sprintf(`http_requests_total{route=%q,code=%q,client=%q}`, k.route, k.code, k.client), v})
		}
		for route, bs := range buckets {
			for i, le := range recBuckets {
				series = append(series, line{fmt.Sprintf(`http_request_duration_seconds_bucket{route=%q,le=%q}`, route, fmt.Sprint(le)), bs[i]})
			}
			series = append(series, line{fmt.Sprintf(`http_request_duration_seconds_bucket{route=%q,le="+Inf"}`, route), bs[len(recBuckets)]})
		}
		series = append(series,
			line{`process_cpu_seconds_total`, cpu},
			line{`node_cpu_seconds_total{cpu="0",mode="user"}`, nodeBusy},
			line{`node_cpu_seconds_total{cpu="0",mode="idle"}`, nodeIdle},
			line{`http_server_queue_length`, queue},
			// Little's law: served rate × mean latency (log-normal, sigma
			// 0.6), plus the queue.
			line{`http_server_requests_in_flight`, served/dt*s.latMedian*math.Exp(0.18) + queue},
			line{`probe_success{instance="shop:8080"}`, probe},
			line{`up{instance="shop:8080",job="shop"}`, 1},
		)
		if s.workers > 0 { // 0: the service exports no pool size
			series = append(series, line{`http_server_workers`, s.workers})
		}
		for _, l := range series {
			fmt.Fprintf(&b, "%s %g %d.%03d\n", l.name, l.val, ts.Unix(), ts.Nanosecond()/1e6)
		}
		if chunk > 0 && b.Len() >= chunk {
			b.WriteString("# EOF\n")
			flush(b.Bytes())
			b.Reset()
		}
	}
	b.WriteString("# EOF\n")
	flush(b.Bytes())
}

// TestBuiltinPackScenarios replays the built-in pack over each outage shape:
// the right alert fires within two evaluation intervals of onset, and a
// normal recording stays quiet.
func TestBuiltinPackScenarios(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		shape string
		want  string // alert that must fire; "" for none
		// allowed lists other alerts that may fire in this shape.
		allowed []string
		// from, when set, is when the outage becomes detectable after its
		// onset: a surge saturates the service only once traffic passes
		// capacity (2x, 30 s into the ramp). With the worker pool known it
		// may page sooner, as the climb fills the workers.
		from time.Duration
	}{
		{"normal", "", nil, 0},
		{"saturation", "SaturationWithoutCPU", nil, 0},
		{"storm", "RateLimitStorm", nil, 0},
		{"lookalike", "", nil, 0}, // one heavy client limited: told, never paged
		// The 5xx and probe alerts are suppressed by the surge: not pages.
		{"surge", "TrafficSurgeSaturation", nil, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.shape, func(t *testing.T) {
			rec, onset := genRecording(tt.shape, start)
			if *recordingsDir != "" {
				require.NoError(t, os.WriteFile(filepath.Join(*recordingsDir, tt.shape+".om"), rec, 0o644))
			}
			st, err := store.New(store.Options{Config: store.Config{Retention: 24 * time.Hour, MaxSeries: 10000}})
			require.NoError(t, err)
			stats, err := LoadOpenMetrics(st, rec)
			require.NoError(t, err)
			cfg := DefaultConfig()
			res, err := Replay(context.Background(), ReplayOptions{
				Config: cfg, Source: newEngineSource(st), Start: stats.Start, End: stats.End,
			})
			require.NoError(t, err)
			interval := cfg.Builtin.Interval
			var fired []string
			var first *Transition
			for i, tr := range res.Transitions {
				if tr.To != model.StateFiring || tr.SuppressedBy != "" || tr.Labels.Get("severity") == "info" {
					continue // not a page
				}
				fired = append(fired, fmt.Sprintf("%s at %s", tr.Rule, tr.Time.Sub(start)))
				if tr.Rule == tt.want && first == nil {
					first = &res.Transitions[i]
				}
				if tr.Rule != tt.want {
					require.Contains(t, tt.allowed, tr.Rule, "unexpected alert; fired: %s", strings.Join(fired, ", "))
				}
			}
			if tt.want == "" {
				require.Empty(t, fired)
				if tt.shape == "lookalike" {
					// The quiet is earned: 429s are well above normal.
					v, err := newEngineSource(st).Instant(context.Background(),
						`sum(rate(http_requests_total{code="429"}[1m])) / sum(rate(http_requests_total[1m])) > 0.1`, onset.Add(5*time.Minute))
					require.NoError(t, err)
					require.Len(t, v, 1)
				}
				return
			}
			require.NotNil(t, first, "%s did not fire; fired: %s", tt.want, strings.Join(fired, ", "))
			seen := onset.Add(tt.from)
			delay := first.Time.Sub(seen)
			t.Logf("%s fired %s after onset, %s after the outage began (explanation: %s)",
				tt.want, delay, first.Time.Sub(onset), first.Explanation.Summary)
			require.GreaterOrEqual(t, first.Time.Sub(onset), time.Duration(0), "fired before onset")
			require.LessOrEqual(t, delay, 2*interval, "fired later than two evaluation intervals after onset")
		})
	}
}
