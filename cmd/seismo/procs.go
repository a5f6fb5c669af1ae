package main

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/seismo-agent/seismo/internal/rusage"
)

// An agent that scrapes and evaluates every few seconds is idle most of the
// time, and with more than one P (GOMAXPROCS) Go pays for parallelism it
// does not use: every goroutine woken wakes a second thread that spins
// looking for work and sleeps again, the collector runs mark workers on the
// idle P. Measured side by side (bench/peer/ab.sh, docs/performance.md),
// one P cost 21-26 % less CPU at 1k series and 4-10 % less at 10k, and
// less memory. procsFollower therefore runs the agent on one P while it
// needs a small part of a core, and gives back the runtime's default (the
// CPUs of the machine or its cgroup's limit, tracked by the runtime) when
// one P was busy half of the last tick: a burst of API queries, a large
// rule pack, a warm start.
const (
	// tuneTick is how often tuneRuntime looks. Every wake-up of an idle
	// agent costs more than its own work (the runtime's monitor thread
	// polls for a while after it), so the tuners share one ticker at about
	// the agent's own cadence.
	tuneTick = 10 * time.Second
	// procsWiden is the share of one core, used during the last tick,
	// above which the agent gets its default Ps back.
	procsWiden = 0.5
	// procsNarrow is the mean share of a core, over procsQuiet, below which
	// (and no tick above procsWiden) the agent goes down to one P.
	procsNarrow = 0.25
	procsQuiet  = time.Minute
)

// procsPolicy decides, tick after tick, whether the agent runs on one P.
type procsPolicy struct {
	widen, narrow float64 // see procsWiden, procsNarrow
	used          []float64
	next          int  // where the next tick's share goes in used
	full          bool // used holds a whole quiet window
	one           bool // on one P
}

func newProcsPolicy(tick, quiet time.Duration, widen, narrow float64) *procsPolicy {
	return &procsPolicy{widen: widen, narrow: narrow, used: make([]float64, max(1, int(quiet/tick)))}
}

// observe takes the share of a core used during the last tick and returns
// whether the agent should now run on one P.
func (p *procsPolicy) observe(used float64) bool {
	if p.one {
		if used > p.widen {
			p.one = false
			p.next, p.full = 0, false
		}
		return p.one
	}
	p.used[p.next] = used
	p.next = (p.next + 1) % len(p.used)
	p.full = p.full || p.next == 0
	if !p.full {
		return false
	}
	sum, peak := 0.0, 0.0
	for _, u := range p.used {
		sum += u
		peak = max(peak, u)
	}
	p.one = sum/float64(len(p.used)) < p.narrow && peak <= p.widen
	return p.one
}

// processCPU returns the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	cpu, _ := rusage.Self()
	return cpu
}

// procsFollower applies a procsPolicy from the process's CPU time (cpu),
// a step of tuneRuntime.
type procsFollower struct {
	p      *procsPolicy
	cpu    func() time.Duration
	logger *slog.Logger
	last   time.Duration
	lastAt time.Time
}

func newProcsFollower(p *procsPolicy, cpu func() time.Duration, logger *slog.Logger) *procsFollower {
	return &procsFollower{p: p, cpu: cpu, logger: logger}
}

func (f *procsFollower) step() {
	c, now := f.cpu(), time.Now()
	if f.lastAt.IsZero() {
		f.last, f.lastAt = c, now
		return
	}
	used := float64(c-f.last) / float64(now.Sub(f.lastAt))
	f.last, f.lastAt = c, now
	was := f.p.one
	switch one := f.p.observe(used); {
	case one && !was:
		runtime.GOMAXPROCS(1)
		f.logger.Debug("running on one P: the agent is mostly idle", "cores_used", used)
	case !one && was:
		runtime.SetDefaultGOMAXPROCS()
		f.logger.Debug("running on the default Ps", "gomaxprocs", runtime.GOMAXPROCS(0), "cores_used", used)
	}
}

// stop gives back the default Ps.
func (f *procsFollower) stop() {
	if f.p.one {
		runtime.SetDefaultGOMAXPROCS()
		f.p.one = false
	}
}

// tuneRuntime runs every step now and then every tick until ctx ends, on
// one ticker, then runs done.
func tuneRuntime(tick time.Duration, done func(), steps ...func()) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if done != nil {
			defer done()
		}
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			for _, step := range steps {
				step()
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}
