package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// agentGCPercent is the garbage collector's target of "seismo run" unless
// GOGC is set. The agent's heap is mostly long-lived (the series store and
// scrape caches) plus the short-lived garbage of every rule evaluation;
// Go's default of 100 lets the heap reach twice the live data before a
// collection. At 40 the heap peaks at 1.4x, about a quarter less resident
// memory for some 10-20 % more CPU at 10k series (docs/performance.md).
const agentGCPercent = 40

// setAgentGC applies agentGCPercent unless environ sets GOGC, and turns off
// heap profile sampling unless GODEBUG sets memprofilerate: the agent
// serves no profiles, and sampling costs a stack walk every 512 KiB
// allocated and up to 1.4 MiB for the table of sampled stacks.
func setAgentGC(environ []string) {
	gogc, rate := false, false
	for _, kv := range environ {
		gogc = gogc || strings.HasPrefix(kv, "GOGC=")
		rate = rate || strings.HasPrefix(kv, "GODEBUG=") && strings.Contains(kv, "memprofilerate=")
	}
	if !gogc {
		debug.SetGCPercent(agentGCPercent)
	}
	if !rate {
		runtime.MemProfileRate = 0
	}
}
