package demo

import (
	"sync"
	"time"
)

// globalKey is the one bucket every request shares under the limiter-global
// fault.
const globalKey = "\x00global"

// bucket is a token bucket: it holds up to burst tokens and refills at rate
// tokens per second.
type bucket struct {
	tokens float64
	last   time.Time
}

// limiter is a per-client token-bucket rate limiter with a bounded key table,
// as found in front of many login services. When the table is full it is
// cleared, which is the LRU-like behaviour that let bursts through in the
// rate-limit storm.
type limiter struct {
	rate    float64
	burst   float64
	maxKeys int
	// clearEvery is how often the table is wiped while the limiter runs
	// global (the sawtooth of outage 2).
	clearEvery time.Duration

	mu        sync.Mutex
	buckets   map[string]*bucket
	global    bool
	lastClear time.Time
}

func newLimiter(rate float64, burst, maxKeys int, clearEvery time.Duration) *limiter {
	return &limiter{
		rate:       rate,
		burst:      float64(burst),
		maxKeys:    maxKeys,
		clearEvery: clearEvery,
		buckets:    make(map[string]*bucket),
	}
}

// setGlobal switches between per-client keys and the one shared bucket.
// Switching clears the table, as the redeploy in the outage did.
func (l *limiter) setGlobal(on bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global = on
	l.buckets = make(map[string]*bucket)
	l.lastClear = now
}

// allow takes one token from the bucket of key at now and reports whether
// there was one.
func (l *limiter) allow(key string, now time.Time) bool {
	if l.rate <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.global {
		key = globalKey
		if l.clearEvery > 0 && now.Sub(l.lastClear) >= l.clearEvery {
			clear(l.buckets)
			l.lastClear = now
		}
	}
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.maxKeys {
			clear(l.buckets)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
