//go:build !unix

// Package rusage reads this process's own resource usage (getrusage), for
// the agent's runtime tuning and the demo's reports.
package rusage

import "time"

// Self is not measured on this platform: it returns zeros.
func Self() (cpu time.Duration, peakRSSBytes float64) { return 0, 0 }
