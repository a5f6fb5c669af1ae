// Package testlog holds what tests need to read a log that another
// goroutine writes: an agent's, a lint's, a child process's output.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that one goroutine may write while another
// reads it. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what has been written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
