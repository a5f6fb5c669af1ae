//go:build !unix

package main

// monotonicUsec is 0 where there is no CLOCK_MONOTONIC to read; systemd,
// the only reader, runs on Linux.
func monotonicUsec() int64 { return 0 }
