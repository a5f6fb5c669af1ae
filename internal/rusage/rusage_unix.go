//go:build unix

// Package rusage reads this process's own resource usage (getrusage), for
// the agent's runtime tuning and the demo's reports.
package rusage

import (
	"runtime"
	"syscall"
	"time"
)

// Self returns the CPU time (user plus system) this process has used and
// its peak resident set size in bytes; zeros if the system call fails.
func Self() (cpu time.Duration, peakRSSBytes float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	rss := float64(ru.Maxrss) * 1024 // KiB on Linux
	if runtime.GOOS == "darwin" {
		rss = float64(ru.Maxrss) // bytes on macOS
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rss
}
