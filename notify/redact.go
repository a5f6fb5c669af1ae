package notify

import (
	"errors"
	"net/url"
	"strings"
)

// RedactURL returns u with everything that may be secret removed: user
// information, path and query are replaced by "<redacted>", leaving scheme
// and host so that a log line still says where a request went.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "<redacted>"
	}
	s := p.Scheme + "://" + p.Host
	if p.Path != "" && p.Path != "/" || p.RawQuery != "" {
		s += "/<redacted>"
	}
	return s
}

// Redact returns err with every occurrence of the given secrets (and of the
// URL-escaped and path forms of secret URLs) replaced. The result keeps
// errors.Is for context cancellation and Retry-After hints but does not
// unwrap to the original error, whose text may hold the secret.
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := RedactString(err.Error(), secrets...)
	return &redactedError{msg: msg, cause: err}
}

// RedactString replaces every occurrence of the secrets in s.
func RedactString(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		repl := "<secret>"
		if strings.Contains(sec, "://") {
			repl = RedactURL(sec)
			// Some clients print the URL escaped.
			s = strings.ReplaceAll(s, url.QueryEscape(sec), repl)
		}
		s = strings.ReplaceAll(s, sec, repl)
	}
	return s
}

type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }

// Is lets errors.Is see through for sentinel errors without exposing the
// original message.
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }

// As lets errors.As find a Retry-After hint.
func (e *redactedError) As(target any) bool {
	if p, ok := target.(**RetryAfterError); ok {
		return errors.As(e.cause, p)
	}
	return false
}
