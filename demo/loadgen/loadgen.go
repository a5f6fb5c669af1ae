// Package loadgen drives HTTP load at the demo service: many clients, each
// identified by a header, an open-loop request rate that follows a
// compressed day, and a surge mode that ramps the rate up by a factor within
// a given time. A run is always bounded by a duration or a request count and
// stops by itself.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Doer sends one HTTP request; *http.Client implements it. Do may be called
// from many goroutines at once.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Route is one kind of request in the mix.
type Route struct {
	Method string
	// Path is appended to the target URL; it may carry a query.
	Path string
	// Weight is the route's share of requests, relative to the others.
	Weight float64

	url string // resolved against the target by New
}

// DefaultRoutes is the request mix used when Options.Routes is empty: 40 %
// cacheable catalog pages, 40 % searches, 20 % checkouts.
var DefaultRoutes = []Route{
	{Method: http.MethodGet, Path: "/catalog", Weight: 4},
	{Method: http.MethodGet, Path: "/search", Weight: 4},
	{Method: http.MethodPost, Path: "/checkout", Weight: 2},
}

// ClientHeader is the header carrying the client ID, as the demo service
// expects it.
const ClientHeader = "X-Client-ID"

// Options configure a Generator.
type Options struct {
	// Target is the base URL of the service, e.g. http://127.0.0.1:8080.
	Target string
	// Clients is how many distinct client IDs send requests (default 50);
	// each request picks one at random.
	Clients int
	// Curve is the request rate over time; Curve.Base defaults to 50 req/s.
	Curve Curve
	// Routes is the request mix (default DefaultRoutes).
	Routes []Route
	// Duration and MaxRequests bound the run; at least one must be set.
	Duration    time.Duration
	MaxRequests int64
	// MaxInFlight bounds concurrent requests (default 256). A request due
	// while the bound is reached is not sent and counts as skipped: the
	// generator is open-loop and never slows down to wait for the service.
	MaxInFlight int
	// Timeout bounds each request (default 5s).
	Timeout time.Duration
	// HotShare is the share of requests sent by client 0 rather than a
	// random client: one abusive client, the look-alike of a rate-limit
	// storm (0: none).
	HotShare float64
	// Seed makes the choice of clients and routes reproducible.
	Seed uint64
	// Client sends the requests (default: an http.Client with keep-alive
	// connections sized to MaxInFlight).
	Client Doer
}

// Report counts what a run did.
type Report struct {
	// Sent requests, and how they ended: OK (2xx), Limited (429),
	// ServerErrors (5xx), OtherStatus (any other status), Failed (no
	// response: connection error or timeout).
	Sent, OK, Limited, ServerErrors, OtherStatus, Failed int64
	// Skipped requests were due but not sent, because MaxInFlight requests
	// were outstanding or the generator fell more than a second behind.
	Skipped int64
}

func (r Report) String() string {
	return fmt.Sprintf("sent=%d ok=%d 429=%d 5xx=%d other=%d failed=%d skipped=%d",
		r.Sent, r.OK, r.Limited, r.ServerErrors, r.OtherStatus, r.Failed, r.Skipped)
}

// Generator sends load. Surge and EndSurge may be called from any goroutine
// while Run is in progress.
type Generator struct {
	opts      Options
	transport *http.Transport // set when the generator owns the client
	cum       []float64       // cumulative route weights

	mu       sync.Mutex
	started  time.Time
	surge    Surge
	hotShare float64
	running  bool

	sent, ok, limited, server, other, failed, skipped atomic.Int64
}

// New validates opts and returns a generator.
func New(opts Options) (*Generator, error) {
	if opts.Clients == 0 {
		opts.Clients = 50
	}
	if opts.Curve.Base == 0 {
		opts.Curve.Base = 50
	}
	if len(opts.Routes) == 0 {
		opts.Routes = DefaultRoutes
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = 256
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	var errs []error
	u, err := url.Parse(opts.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("target: want an http(s) URL, got %q", opts.Target))
	}
	if opts.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients: must be at least 1, got %d", opts.Clients))
	}
	if opts.Curve.Base < 0 || opts.Curve.Amplitude < 0 || opts.Curve.Amplitude >= 1 {
		errs = append(errs, fmt.Errorf("curve: base must be positive and amplitude in [0, 1), got %g and %g", opts.Curve.Base, opts.Curve.Amplitude))
	}
	if opts.Duration <= 0 && opts.MaxRequests <= 0 {
		errs = append(errs, errors.New("duration, max_requests: at least one bound must be set"))
	}
	if opts.HotShare < 0 || opts.HotShare > 1 {
		errs = append(errs, fmt.Errorf("hot_share: must be in [0, 1], got %g", opts.HotShare))
	}
	if opts.MaxInFlight < 1 {
		errs = append(errs, fmt.Errorf("max_in_flight: must be at least 1, got %d", opts.MaxInFlight))
	}
	g := &Generator{opts: opts, surge: opts.Curve.Surge, hotShare: opts.HotShare}
	total := 0.0
	g.opts.Routes = slices.Clone(opts.Routes)
	for i, r := range g.opts.Routes {
		ref, err := url.Parse(r.Path)
		if err != nil || r.Weight < 0 || !strings.HasPrefix(r.Path, "/") {
			errs = append(errs, fmt.Errorf("routes[%d]: want a path starting with / and a weight >= 0", i))
		} else if u != nil {
			g.opts.Routes[i].url = u.ResolveReference(ref).String()
		}
		if r.Method == "" {
			g.opts.Routes[i].Method = http.MethodGet
		}
		total += r.Weight
		g.cum = append(g.cum, total)
	}
	if total <= 0 {
		errs = append(errs, errors.New("routes: total weight must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("load generator options: %w", err)
	}
	if g.opts.Client == nil {
		g.transport = &http.Transport{
			MaxIdleConns:        opts.MaxInFlight,
			MaxIdleConnsPerHost: opts.MaxInFlight,
			IdleConnTimeout:     30 * time.Second,
		}
		g.opts.Client = &http.Client{Transport: g.transport}
	}
	return g, nil
}

// Surge starts a surge now: the rate ramps to factor times normal within
// ramp and stays there until EndSurge or the end of the run.
func (g *Generator) Surge(factor float64, ramp time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	start := time.Duration(0)
	if g.running {
		start = time.Since(g.started)
	}
	g.surge = Surge{Start: start, Ramp: ramp, Factor: factor}
}

// SurgeFactor returns the factor of the surge in progress, 1 when none.
func (g *Generator) SurgeFactor() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.surge.Factor <= 0 {
		return 1
	}
	return g.surge.Factor
}

// EndSurge returns the rate to normal at once.
func (g *Generator) EndSurge() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.surge = Surge{}
}

// SetHotShare makes client 0 send share of all requests from now on
// (clamped to [0, 1]; 0 ends it).
func (g *Generator) SetHotShare(share float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hotShare = max(0, min(1, share))
}

// Rate returns the rate the generator is aiming for now.
func (g *Generator) Rate() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rateLocked(g.elapsedLocked())
}

func (g *Generator) elapsedLocked() time.Duration {
	if !g.running {
		return 0
	}
	return time.Since(g.started)
}

func (g *Generator) rateLocked(t time.Duration) float64 {
	c := g.opts.Curve
	c.Surge = g.surge
	return c.Rate(t)
}

// Report returns the counts so far; it may be called during Run.
func (g *Generator) Report() Report {
	return Report{
		Sent: g.sent.Load(), OK: g.ok.Load(), Limited: g.limited.Load(),
		ServerErrors: g.server.Load(), OtherStatus: g.other.Load(),
		Failed: g.failed.Load(), Skipped: g.skipped.Load(),
	}
}

// maxLag is how far the generator may fall behind its schedule before it
// gives up on the missed requests (counted as skipped) rather than sending
// them in one burst.
const maxLag = time.Second

// Run sends load until the duration or request bound is reached or ctx is
// done, waits for the requests in flight, and returns the counts. Stopping
// through ctx is a normal end, not an error. Run may be called once.
func (g *Generator) Run(ctx context.Context) (Report, error) {
	g.mu.Lock()
	if g.running || !g.started.IsZero() {
		g.mu.Unlock()
		return Report{}, errors.New("load generator: Run called twice")
	}
	g.started = time.Now()
	g.running = true
	start := g.started
	g.mu.Unlock()

	rng := rand.New(rand.NewPCG(g.opts.Seed, g.opts.Seed^0x9e3779b97f4a7c15))
	sem := make(chan struct{}, g.opts.MaxInFlight)
	var wg sync.WaitGroup

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	next := time.Duration(0) // when the next request is due, since start
	for {
		if g.opts.MaxRequests > 0 && g.sent.Load()+g.skipped.Load() >= g.opts.MaxRequests {
			break
		}
		g.mu.Lock()
		rate, hot := g.rateLocked(next), g.hotShare
		g.mu.Unlock()
		if rate <= 0 {
			rate = 0.1 // re-check the curve at least every 10 s
		}
		next += time.Duration(float64(time.Second) / rate)
		if g.opts.Duration > 0 && next >= g.opts.Duration {
			// Wait out the rest of the run so that it lasts Duration.
			if d := g.opts.Duration - time.Since(start); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
				}
			}
			break
		}
		if wait := next - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		} else if -wait > maxLag {
			g.skipped.Add(1)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		client := rng.IntN(g.opts.Clients)
		if hot > 0 && rng.Float64() < hot {
			client = 0
		}
		route := g.pickRoute(rng.Float64() * g.cum[len(g.cum)-1])
		select {
		case sem <- struct{}{}:
		default:
			g.skipped.Add(1)
			continue
		}
		g.sent.Add(1)
		wg.Go(func() {
			defer func() { <-sem }()
			g.send(ctx, client, route)
		})
	}
	wg.Wait()
	if g.transport != nil {
		g.transport.CloseIdleConnections()
	}
	return g.Report(), nil
}

func (g *Generator) pickRoute(x float64) Route {
	for i, c := range g.cum {
		if x < c {
			return g.opts.Routes[i]
		}
	}
	return g.opts.Routes[len(g.opts.Routes)-1]
}

// ClientID returns the ID of client i, as sent in ClientHeader.
func ClientID(i int) string { return fmt.Sprintf("client-%02d", i) }

func (g *Generator) send(ctx context.Context, client int, r Route) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, r.url, nil)
	if err != nil {
		g.failed.Add(1)
		return
	}
	req.Header.Set(ClientHeader, ClientID(client))
	resp, err := g.opts.Client.Do(req)
	if err != nil {
		g.failed.Add(1)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		g.ok.Add(1)
	case c == http.StatusTooManyRequests:
		g.limited.Add(1)
	case c >= 500:
		g.server.Add(1)
	default:
		g.other.Add(1)
	}
}
