//go:build !unix

package demo

// processCPUSeconds is not measured on this platform; the demo service then
// reports zero.
func processCPUSeconds() float64 { return 0 }

// ProcessUsage is not measured on this platform: it returns zeros.
func ProcessUsage() (cpuSeconds, peakRSSBytes float64) { return 0, 0 }
