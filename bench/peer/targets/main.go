// Command targets serves synthetic Prometheus targets on loopback for the
// side-by-side benchmark in bench/peer: N series in total, spread over
// several targets (one HTTP listener each), with the metric and label names
// seismo's built-in rule pack reads (http_requests_total by route, method,
// code and client; a request-duration histogram by route; process and node
// CPU; queue length, in-flight requests, probe_success) plus the usual
// runtime filler a Go service exposes.
//
// Counters advance once per tick (1s) with seeded noise, so every scraper
// sees the same monotonic series; the body of a target is rendered at most
// once per tick and served to every scraper from that cache.
//
// It also answers POST /api/v2/alerts on the -sink address, so a peer's
// alert notifier has somewhere to deliver.
//
// Usage:
//
//	targets -series 10000 -targets 4 -listen 127.0.0.1:19100 -write-targets targets.txt
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "targets:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	series := fs.Int("series", 1000, "series in total over all targets")
	ntargets := fs.Int("targets", 0, "number of targets (0: one per 5000 series, at least 2)")
	listen := fs.String("listen", "127.0.0.1:19100", "address of the first target; the others take the following ports")
	sink := fs.String("sink", "", "address of an alert sink answering POST /api/v2/alerts (empty: none)")
	writeTargets := fs.String("write-targets", "", "write the host:port of every target to this file, one a line")
	tick := fs.Duration("tick", time.Second, "how often counters advance")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *series < 100 {
		return fmt.Errorf("-series: at least 100, got %d", *series)
	}
	n := *ntargets
	if n <= 0 {
		n = max(2, (*series+4999)/5000)
	}
	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", *listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("-listen %q: bad port", *listen)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	var servers []*http.Server
	var addrs []string
	total := 0
	for i := range n {
		per := *series / n
		if i < *series%n {
			per++
		}
		t := newTarget(i, per, start, *tick)
		total += t.numSeries()
		addr := net.JoinHostPort(host, strconv.Itoa(port+i))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", t)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		addrs = append(addrs, addr)
		go func() { _ = srv.Serve(ln) }()
	}
	if *sink != "" {
		ln, err := net.Listen("tcp", *sink)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	if *writeTargets != "" {
		if err := os.WriteFile(*writeTargets, []byte(strings.Join(addrs, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "targets: %d series on %d targets, %s .. %s\n", total, n, addrs[0], addrs[len(addrs)-1])
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

// Shape of one target. Every route has a histogram (buckets + sum + count)
// and a request counter per method, code and client.
var (
	methods = []string{"GET", "POST"}
	codes   = []string{"200", "429", "500", "503"}
	// codeShare is the fraction of a route's requests per code.
	codeShare = []float64{0.95, 0.02, 0.02, 0.01}
	buckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	cpuModes  = []string{"user", "system", "idle", "iowait", "irq", "softirq", "steal", "nice"}
)

const (
	nodeCPUs = 2
	// goFiller is the count of runtime series every target exposes.
	goFiller = 24
)

type counter struct {
	prefix []byte // `name{labels} `
	rate   float64
	v      float64
	gauge  bool // v wanders, not accumulated
	fixed  bool // v never changes
}

type target struct {
	id    int
	start time.Time
	tick  time.Duration
	rng   *rand.Rand

	mu      sync.Mutex
	ticks   int64 // ticks applied
	body    []byte
	bodyAt  int64 // tick of body
	series  []counter
	routes  []route
	nodeCPU []int // index of node_cpu series
}

type route struct {
	bucketIdx int // first bucket series; then +Inf, sum, count
	reqIdx    []int
	rps       float64
	// latency is the median request duration of the route, seconds.
	latency float64
}

func newTarget(id, budget int, start time.Time, tick time.Duration) *target {
	t := &target{id: id, start: start, tick: tick, rng: rand.New(rand.NewPCG(uint64(id), 42)), bodyAt: -1}
	inst := fmt.Sprintf("svc-%d", id)
	add := func(name, labels string, rate float64, gauge bool, v float64) int {
		var p string
		if labels == "" {
			p = name + " "
		} else {
			p = name + "{" + labels + "} "
		}
		t.series = append(t.series, counter{prefix: []byte(p), rate: rate, gauge: gauge, v: v})
		return len(t.series) - 1
	}
	// Fixed part: 24 runtime filler series, process CPU, queue, in-flight,
	// probe, node CPU.
	for i := range goFiller {
		add(fmt.Sprintf("go_runtime_metric_%d", i), "", 0.5, i%2 == 0, float64(i))
	}
	add("process_cpu_seconds_total", "", 0.2, false, 0)
	add("http_server_queue_length", "", 0, true, 2)
	add("http_server_requests_in_flight", "", 0, true, 5)
	t.series[add("probe_success", fmt.Sprintf(`target="http://%s/healthz"`, inst), 0, true, 1)].fixed = true
	for c := range nodeCPUs {
		for _, m := range cpuModes {
			r := 0.05
			if m == "idle" {
				r = 0.8
			}
			t.nodeCPU = append(t.nodeCPU, add("node_cpu_seconds_total", fmt.Sprintf(`cpu="%d",mode="%s"`, c, m), r, false, 0))
		}
	}
	// Routes: histogram (len(buckets)+1 buckets, sum, count) and one
	// request counter per method x code x client. The client count grows
	// with the budget so large targets have wide label sets, as a
	// multi-tenant API does.
	left := budget - len(t.series)
	clients := 4
	for clients < 64 && (len(buckets)+3+len(methods)*len(codes)*clients*2)*4 <= left {
		clients *= 2
	}
	perRoute := len(buckets) + 3 + len(methods)*len(codes)*clients
	for r := 0; left >= perRoute; r++ {
		name := fmt.Sprintf("/api/v1/resource%d", r)
		rt := route{rps: 5 + float64(r%7)*3, latency: 0.02 + float64(r%5)*0.01}
		rt.bucketIdx = len(t.series)
		for _, le := range buckets {
			add("http_request_duration_seconds_bucket", fmt.Sprintf(`route="%s",le="%g"`, name, le), 0, false, 0)
		}
		add("http_request_duration_seconds_bucket", fmt.Sprintf(`route="%s",le="+Inf"`, name), 0, false, 0)
		add("http_request_duration_seconds_sum", fmt.Sprintf(`route="%s"`, name), 0, false, 0)
		add("http_request_duration_seconds_count", fmt.Sprintf(`route="%s"`, name), 0, false, 0)
		for _, m := range methods {
			for ci, c := range codes {
				for cl := range clients {
					share := codeShare[ci] / float64(len(methods)*clients)
					rt.reqIdx = append(rt.reqIdx, add("http_requests_total",
						fmt.Sprintf(`route="%s",method="%s",code="%s",client="tenant-%d"`, name, m, c, cl), rt.rps*share, false, 0))
				}
			}
		}
		t.routes = append(t.routes, rt)
		left -= perRoute
	}
	// Fill the rest of the budget with a cache gauge per shard.
	for i := 0; left > 0; i++ {
		add("app_cache_entries", fmt.Sprintf(`shard="%d"`, i), 0, true, float64(1000+i))
		left--
	}
	return t
}

func (t *target) numSeries() int { return len(t.series) }

// advance applies the ticks up to now.
func (t *target) advance(now time.Time) int64 {
	want := int64(now.Sub(t.start) / t.tick)
	for ; t.ticks < want; t.ticks++ {
		dt := t.tick.Seconds()
		for i := range t.series {
			s := &t.series[i]
			switch {
			case s.fixed:
			case s.gauge:
				s.v = math.Max(0, s.v+t.rng.NormFloat64()*0.1*math.Max(1, math.Abs(s.v))*0.1)
			case s.rate > 0:
				s.v += s.rate * dt * (0.5 + t.rng.Float64())
			}
		}
		for _, r := range t.routes {
			n := math.Round(r.rps * dt * (0.5 + t.rng.Float64()))
			var sum float64
			for k := 0; k < int(n); k++ {
				d := r.latency * math.Exp(t.rng.NormFloat64()*0.5)
				sum += d
				for b, le := range buckets {
					if d <= le {
						t.series[r.bucketIdx+b].v++
					}
				}
			}
			t.series[r.bucketIdx+len(buckets)].v += n // +Inf
			t.series[r.bucketIdx+len(buckets)+1].v += sum
			t.series[r.bucketIdx+len(buckets)+2].v += n
		}
	}
	return t.ticks
}

func (t *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.mu.Lock()
	tk := t.advance(time.Now())
	if tk != t.bodyAt {
		var b bytes.Buffer
		b.Grow(len(t.series) * 96)
		var num []byte
		for i := range t.series {
			s := &t.series[i]
			b.Write(s.prefix)
			num = strconv.AppendFloat(num[:0], math.Round(s.v*1000)/1000, 'g', -1, 64)
			b.Write(num)
			b.WriteByte('\n')
		}
		t.body, t.bodyAt = b.Bytes(), tk
	}
	body := t.body
	t.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}
