package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetAgentGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	setAgentGC([]string{"GOGC=100", "HOME=/root"})
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is left alone")
	setAgentGC([]string{"HOME=/root"})
	require.Equal(t, agentGCPercent, debug.SetGCPercent(100), "no GOGC: the agent's default")
}
