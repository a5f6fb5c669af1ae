package rules

import (
	"strings"
	"unicode/utf8"
)

// yamlErrorPos returns the 1-based line and column of a yaml.v3 error that
// came without one: the first byte YAML does not accept for an encoding or
// control-character error, otherwise the end of the content (where "found
// unexpected end of stream" and the like happen).
func yamlErrorPos(content []byte, msg string) (line, col int) {
	line, col = 1, 1
	bad := strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16") || strings.Contains(msg, "control characters")
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRune(content[i:])
		if bad && !yamlPrintable(r, size) {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return line, col
}

// yamlPrintable reports whether YAML 1.2 allows the character in a stream
// (c-printable), as yaml.v3's reader checks it.
func yamlPrintable(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return false
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r == 0x85:
		return true
	case r >= 0x80 && r <= 0x9f:
		return false
	case r >= 0xd800 && r <= 0xdfff, r == 0xfffe, r == 0xffff:
		return false
	}
	return true
}
