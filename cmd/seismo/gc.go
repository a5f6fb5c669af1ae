package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
)

// agentGCPercent is the garbage collector's target of "seismo run" unless
// GOGC is set. The agent's heap is mostly long-lived (the series store and
// scrape caches) plus the short-lived garbage of every rule evaluation;
// Go's default of 100 lets the heap reach twice the live data before a
// collection. At 30 the heap peaks at 1.3x: at 10k series, measured side
// by side, 6 % less resident memory than at 40 for 10 % more CPU, of which
// the agent uses little (docs/performance.md).
const agentGCPercent = 30

// minGCHeadroom is the least heap growth between collections that
// headroom keeps. agentGCPercent of a small heap is less than one rule
// evaluation allocates (about 1.2 MiB at 1k series), so a small agent
// would collect on every evaluation; a 1k-series agent (about 3 MiB live)
// collects at about 50 % instead. From 5 MiB live up (10k series and
// more), agentGCPercent is more than this and applies unchanged.
const minGCHeadroom = 3 << 19 // 1.5 MiB

// setAgentGC applies agentGCPercent unless environ sets GOGC, and turns off
// heap profile sampling unless GODEBUG sets memprofilerate: the agent
// serves no profiles, and sampling costs a stack walk every 512 KiB
// allocated and up to 1.4 MiB for the table of sampled stacks. It reports
// whether it set the GC percent (and headroom should adjust it).
func setAgentGC(environ []string) bool {
	gogc, rate := envSet(environ, "GOGC"), false
	for _, kv := range environ {
		rate = rate || strings.HasPrefix(kv, "GODEBUG=") && strings.Contains(kv, "memprofilerate=")
	}
	if !gogc {
		debug.SetGCPercent(agentGCPercent)
	}
	if !rate {
		runtime.MemProfileRate = 0
	}
	return !gogc
}

// envSet reports whether environ sets the variable name (then the agent
// leaves the runtime setting it names alone).
func envSet(environ []string, name string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// gcPercentFor returns the GC percent that grows a heap of live bytes by
// agentGCPercent, or by at least minGCHeadroom, and by at most 100 %.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return agentGCPercent
	}
	p := int((100*uint64(minGCHeadroom) + live - 1) / live)
	return min(max(p, agentGCPercent), 100)
}

// headroom keeps the GC percent at gcPercentFor the live heap (as live
// reads it), a step of tuneRuntime: at 10k series and above it stays at
// agentGCPercent.
type headroom struct {
	cur  int // the GC percent set
	live func() uint64
}

func (h *headroom) step() {
	if p := gcPercentFor(h.live()); p != h.cur {
		debug.SetGCPercent(p)
		h.cur = p
	}
}

// liveHeap returns the heap marked live by the last collection (0 before
// the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
