package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSetAgentGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	prevRate := runtime.MemProfileRate
	defer func() { runtime.MemProfileRate = prevRate }()

	runtime.MemProfileRate = 4096
	require.False(t, setAgentGC([]string{"GOGC=100", "HOME=/root", "GODEBUG=madvdontneed=1,memprofilerate=4096"}))
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is left alone")
	require.Equal(t, 4096, runtime.MemProfileRate, "memprofilerate in GODEBUG is left alone")
	require.True(t, setAgentGC([]string{"HOME=/root", "GODEBUG=madvdontneed=1"}))
	require.Equal(t, agentGCPercent, debug.SetGCPercent(100), "no GOGC: the agent's default")
	require.Equal(t, 0, runtime.MemProfileRate, "no memprofilerate: no heap profile sampling")
}

func TestGCPercentFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, agentGCPercent},
		{1 << 20, 100}, // 1 MiB: capped
		{3 << 20, 50},  // a 1k-series agent
		{minGCHeadroom * 100 / agentGCPercent, agentGCPercent},         // where agentGCPercent is the headroom
		{minGCHeadroom*100/agentGCPercent - 1<<16, agentGCPercent + 1}, // just under
		{16 << 20, agentGCPercent},                                     // a 10k-series agent
		{1 << 40, agentGCPercent},                                      // large heaps
		{minGCHeadroom * 2, 50},                                        // exactly twice the headroom
		{minGCHeadroom*2 + 1, 50},                                      // rounds up
		{minGCHeadroom, 100},                                           // capped
	} {
		require.Equal(t, tt.want, gcPercentFor(tt.live), "live %d", tt.live)
	}
}

func TestGCHeadroomSetsPercent(t *testing.T) {
	prev := debug.SetGCPercent(agentGCPercent)
	defer debug.SetGCPercent(prev)
	// Read through runtime/metrics, not SetGCPercent(-1) and back: the
	// tuner sets a percent once, and a read that writes the old value back
	// just after would undo it for good.
	gcPercent := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return -1 // no such metric: never the percent waited for
		}
		return int(s[0].Value.Uint64())
	}
	var live atomic.Uint64
	live.Store(3 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tuneRuntime(time.Millisecond, nil, (&headroom{cur: agentGCPercent, live: live.Load}).step)(ctx)
	}()
	require.Eventually(t, func() bool { return gcPercent() == 50 }, 10*time.Second, time.Millisecond, "a small heap")
	live.Store(1 << 30)
	require.Eventually(t, func() bool { return gcPercent() == agentGCPercent }, 10*time.Second, time.Millisecond, "a large heap")
	cancel()
	require.NoError(t, <-done)
	require.Positive(t, liveHeap()+1) // reads the runtime's metric without failing
}
