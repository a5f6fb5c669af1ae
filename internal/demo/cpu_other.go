//go:build !unix

package demo

// processCPUSeconds is not measured on this platform; the demo service then
// reports zero.
func processCPUSeconds() float64 { return 0 }
