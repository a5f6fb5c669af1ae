package main

import (
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

// setAgentGC applies agentGCPercent unless environ sets GOGC.
func setAgentGC(environ []string) {
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") {
			return
		}
	}
	debug.SetGCPercent(agentGCPercent)
}
