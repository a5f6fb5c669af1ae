package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetAgentGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	prevRate := runtime.MemProfileRate
	defer func() { runtime.MemProfileRate = prevRate }()

	runtime.MemProfileRate = 4096
	setAgentGC([]string{"GOGC=100", "HOME=/root", "GODEBUG=madvdontneed=1,memprofilerate=4096"})
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is left alone")
	require.Equal(t, 4096, runtime.MemProfileRate, "memprofilerate in GODEBUG is left alone")
	setAgentGC([]string{"HOME=/root", "GODEBUG=madvdontneed=1"})
	require.Equal(t, agentGCPercent, debug.SetGCPercent(100), "no GOGC: the agent's default")
	require.Equal(t, 0, runtime.MemProfileRate, "no memprofilerate: no heap profile sampling")
}
