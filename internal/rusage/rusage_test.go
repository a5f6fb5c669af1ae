package rusage

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSelfGrows(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("not measured on " + runtime.GOOS)
	}
	cpu0, rss0 := Self()
	// Peak RSS may start high: Linux starts a forked child's peak at its
	// parent's resident size (here the go command's), kept across exec, so
	// the buffer is made larger than that start and the peak must reach it.
	n := max(64<<20, int(rss0)+32<<20)
	buf := make([]byte, n)
	for i := range buf { // touch every page, and burn some CPU
		buf[i] = byte(i)
	}
	x := 0
	for i := range 50_000_000 {
		x += i & 3
	}
	cpu1, rss1 := Self()
	require.Greater(t, cpu1, cpu0, "CPU time grows (%d)", x+int(buf[len(buf)-1]))
	require.GreaterOrEqual(t, rss1, float64(n), "peak RSS counts the touched buffer (%.0f at the start)", rss0)
}
