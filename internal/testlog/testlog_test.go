package testlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrent: writes from several goroutines while the test
// reads all arrive whole (run with -race, which CI does).
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "g%d line %d\n", g, i)
			}
		}()
	}
	for range 50 {
		_ = b.String()
	}
	wg.Wait()
	out := b.String()
	if n := strings.Count(out, "\n"); n != 400 {
		t.Fatalf("%d lines, want 400", n)
	}
	for g := range 4 {
		if !strings.Contains(out, fmt.Sprintf("g%d line 99\n", g)) {
			t.Fatalf("goroutine %d's last line is missing", g)
		}
	}
}
