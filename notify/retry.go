package notify

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfterError is a retryable error with the delay the server asked for.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err with the server's requested delay.
func RetryAfter(err error, after time.Duration) error {
	return &RetryAfterError{After: after, Err: err}
}

// RetryAfterOf returns the delay requested by a RetryAfterError in err's
// chain.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After, true
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// StatusError is a non-2xx HTTP answer.
type StatusError struct {
	Code int
	// Body is the start of the response body, for the log.
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("unexpected status %d", e.Code)
	}
	return fmt.Sprintf("unexpected status %d: %s", e.Code, e.Body)
}

// CheckResponse classifies an HTTP answer the way every integration should:
// 2xx is success; 429 is retryable and honours Retry-After; 408 and 5xx are
// retryable; any other status is a permanent failure. It reads at most 1 KiB
// of the body for the error text and drains and closes it.
func CheckResponse(resp *http.Response, now time.Time) (retry bool, err error) {
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	se := &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return true, RetryAfter(se, d)
		}
		return true, se
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode/100 == 5:
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return true, RetryAfter(se, d)
		}
		return true, se
	}
	return false, se
}

// Backoff computes exponential delays with full jitter in [d/2, d].
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	// Rand returns a float in [0, 1); nil uses math/rand/v2.
	Rand func() float64
}

// Delay returns the wait before attempt n (1 is the first retry).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	half := d / 2
	return half + time.Duration(r()*float64(d-half))
}

// errorLog remembers the last error text so that a loop logs an error only
// when it changes, and once when it clears.
type errorLog struct{ last string }

// changed reports whether err differs from the previous one and records it.
func (l *errorLog) changed(err error) bool {
	s := ""
	if err != nil {
		s = err.Error()
	}
	if s == l.last {
		return false
	}
	l.last = s
	return true
}
