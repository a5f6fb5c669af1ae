//go:build unix

package demo

import (
	"runtime"
	"syscall"
)

// processCPUSeconds returns the user plus system CPU time this process has
// used, in seconds.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// ProcessUsage returns the CPU seconds (user plus system) this process has
// used and its peak resident set size in bytes.
func ProcessUsage() (cpuSeconds, peakRSSBytes float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	rss := float64(ru.Maxrss) * 1024 // KiB on Linux
	if runtime.GOOS == "darwin" {
		rss = float64(ru.Maxrss) // bytes on macOS
	}
	return processCPUSeconds(), rss
}
