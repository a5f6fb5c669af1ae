package demo

import (
	"crypto/sha256"
	"sync"
	"time"
)

// workUnit is one step of real CPU work: a SHA-256 over a small block.
func workUnit(b *[64]byte) {
	s := sha256.Sum256(b[:])
	copy(b[:32], s[:])
}

var (
	calibrateOnce sync.Once
	unitsPerMs    int
)

// cpuUnits returns how many work units take about d of CPU time on this
// machine. It measures once per process, keeping the fastest of a few short
// runs so that a busy machine does not inflate the per-request cost.
func cpuUnits(d time.Duration) int {
	calibrateOnce.Do(func() {
		const probe = 2000
		best := time.Duration(1 << 62)
		var b [64]byte
		for range 5 {
			start := time.Now()
			for range probe {
				workUnit(&b)
			}
			best = min(best, time.Since(start))
		}
		unitsPerMs = max(1, int(float64(probe)*float64(time.Millisecond)/float64(max(best, time.Microsecond))))
	})
	return max(0, int(float64(unitsPerMs)*float64(d)/float64(time.Millisecond)))
}

// burn does n work units and returns a byte derived from them, so that the
// compiler cannot drop the work.
func burn(n int) byte {
	var b [64]byte
	for range n {
		workUnit(&b)
	}
	return b[0]
}
