package main

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProcsPolicy(t *testing.T) {
	feed := func(p *procsPolicy, used ...float64) (out []bool) {
		for _, u := range used {
			out = append(out, p.observe(u))
		}
		return out
	}
	t.Run("narrows after a whole quiet window", func(t *testing.T) {
		p := newProcsPolicy(time.Second, 4*time.Second, 0.5, 0.25)
		require.Equal(t, []bool{false, false, false, true, true}, feed(p, 0.1, 0.2, 0.1, 0.1, 0.4))
	})
	t.Run("a busy tick widens at once", func(t *testing.T) {
		p := newProcsPolicy(time.Second, 2*time.Second, 0.5, 0.25)
		require.Equal(t, []bool{false, true, false, false, true}, feed(p, 0.1, 0.1, 0.6, 0.1, 0.1))
	})
	t.Run("a mean above narrow stays wide", func(t *testing.T) {
		p := newProcsPolicy(time.Second, 3*time.Second, 0.5, 0.25)
		require.Equal(t, []bool{false, false, false, false}, feed(p, 0.3, 0.3, 0.3, 0.3))
	})
	t.Run("short bursts above widen keep it wide", func(t *testing.T) {
		// A large agent: 1.5 s of evaluation every 10 s, 15 % on average.
		p := newProcsPolicy(time.Second, 10*time.Second, 0.5, 0.25)
		for i := range 60 {
			used := 0.0
			if i%10 == 0 {
				used = 1
			}
			require.False(t, p.observe(used), "tick %d", i)
		}
	})
	t.Run("the window starts over after widening", func(t *testing.T) {
		p := newProcsPolicy(time.Second, 2*time.Second, 0.5, 0.25)
		require.Equal(t, []bool{false, true, false, false, true}, feed(p, 0, 0, 0.9, 0, 0))
	})
}

func TestEnvSet(t *testing.T) {
	require.True(t, envSet([]string{"HOME=/root", "GOMAXPROCS=4"}, "GOMAXPROCS"))
	require.False(t, envSet([]string{"HOME=/root", "GOGC=50", "XGOMAXPROCS=1"}, "GOMAXPROCS"))
}

// TestFollowLoad runs the controller on the process's real CPU time: idle,
// it goes down to one P; busy (goroutines spinning), it gets the default
// back; stopped, it leaves the default.
func TestFollowLoad(t *testing.T) {
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	if def < 2 {
		t.Skipf("one CPU here (GOMAXPROCS %d): nothing to narrow", def)
	}
	defer runtime.SetDefaultGOMAXPROCS()
	const tick = 50 * time.Millisecond
	p := newProcsPolicy(tick, 5*tick, procsWiden, procsNarrow)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f := newProcsFollower(p, processCPU, slog.New(slog.DiscardHandler))
	go func() { done <- tuneRuntime(tick, f.stop, f.step)(ctx) }()

	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == 1 }, 30*time.Second, tick, "idle: one P")

	var stop atomic.Bool
	for range 2 {
		go func() {
			for !stop.Load() {
				_ = processCPU() // busy, with a syscall now and then
			}
		}()
	}
	require.Eventually(t, func() bool { return runtime.GOMAXPROCS(0) == def }, 30*time.Second, tick, "busy: default Ps")
	stop.Store(true)

	cancel()
	require.NoError(t, <-done)
	require.Equal(t, def, runtime.GOMAXPROCS(0), "stopped: default Ps")
	require.Positive(t, processCPU())
}
