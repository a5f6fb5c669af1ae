// Package configutil holds the helpers every config section shares: secrets
// that never print, and validation errors that carry their field path.
package configutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Secret is a string that prints, marshals and logs as "<secret>".
// Use string(s) only where the value is sent to its destination.
type Secret string

const redacted = "<secret>"

func (s Secret) String() string { return redacted }

// GoString keeps %#v from revealing the value.
func (s Secret) GoString() string { return redacted }

// MarshalText implements encoding.TextMarshaler (used by JSON and YAML).
func (s Secret) MarshalText() ([]byte, error) {
	if s == "" {
		return []byte{}, nil
	}
	return []byte(redacted), nil
}

// ResolveSecret returns value, or the trimmed content of file when value is
// empty and file is set. A relative file is resolved against baseDir. The
// error names the file, never its content.
func ResolveSecret(value Secret, file, baseDir string) (Secret, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", errors.New("both the value and its _file twin are set")
	}
	b, err := os.ReadFile(ResolvePath(baseDir, file))
	if err != nil {
		return "", fmt.Errorf("read secret file: %w", err)
	}
	return Secret(strings.TrimSpace(string(b))), nil
}

// ResolvePath makes p absolute relative to baseDir, unless it already is
// absolute or empty.
func ResolvePath(baseDir, p string) string {
	if p == "" || filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	return filepath.Join(baseDir, p)
}

// FieldError is a validation problem at a config field path such as
// "notify.slack[0].url".
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors collects every validation problem of a config. The zero value is
// ready to use.
type Errors struct {
	list []error
}

// Addf records a problem at path.
func (e *Errors) Addf(path, format string, args ...any) {
	e.list = append(e.list, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Merge records the problems in err (as returned by another Validate) with
// their paths prefixed by prefix. A nil err adds nothing.
func (e *Errors) Merge(prefix string, err error) {
	if err == nil {
		return
	}
	var errs interface{ Unwrap() []error }
	if errors.As(err, &errs) {
		for _, x := range errs.Unwrap() {
			e.Merge(prefix, x)
		}
		return
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		e.list = append(e.list, &FieldError{Path: Join(prefix, fe.Path), Msg: fe.Msg})
		return
	}
	e.list = append(e.list, &FieldError{Path: prefix, Msg: err.Error()})
}

// Err returns nil when nothing was recorded, else all problems joined, one
// per line.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return errors.Join(e.list...)
}

// Join joins two field path parts: Join("a", "b") is "a.b", Join("a", "[0].b")
// is "a[0].b".
func Join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// A config or rule file that reads blank where the running one held
// settings is most likely being written: an editor or a config manager
// that writes in place truncates the file first, and a reload in that
// moment would swap what runs for nothing (rules and their alerts' state
// lost, so that alerts firing then never resolve). A reload reads such a
// file again BlankRereads times, BlankRereadDelay apart, and refuses it if
// it stays blank.
const (
	BlankRereads     = 5
	BlankRereadDelay = 20 * time.Millisecond
)

// Blank reports whether a YAML file's content b sets nothing: only
// whitespace, comments and document markers.
func Blank(b []byte) bool {
	for line := range bytes.Lines(b) {
		l := bytes.TrimSpace(line)
		if len(l) > 0 && l[0] != '#' && string(l) != "---" && string(l) != "..." {
			return false
		}
	}
	return true
}
