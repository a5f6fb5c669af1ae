package datasource

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// appendResult appends the JSON of a successful query answer, byte for
// byte what encoding/json makes of the apiResponse, for float vectors and
// matrices, written directly: encoding/json goes through each sample's
// MarshalJSON and a map per label set, and re-scans what they return,
// which made it cost more CPU and garbage than evaluating the query
// itself. Anything else (histograms, scalars, strings) returns ok false
// and takes the encoding/json path.
func appendResult(b []byte, v parser.Value, warnings, infos []string) (_ []byte, ok bool) {
	b = append(b, `{"status":"success","data":{"resultType":"`...)
	switch v := v.(type) {
	case promql.Vector:
		for _, s := range v {
			if s.H != nil {
				return b, false
			}
		}
		b = append(b, `vector","result":[`...)
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"metric":`...)
			b = appendLabels(b, s.Metric)
			b = append(b, `,"value":`...)
			b = appendPoint(b, s.T, s.F)
			b = append(b, '}')
		}
	case promql.Matrix:
		for _, s := range v {
			if len(s.Histograms) > 0 {
				return b, false
			}
		}
		b = append(b, `matrix","result":[`...)
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"metric":`...)
			b = appendLabels(b, s.Metric)
			if len(s.Floats) > 0 {
				b = append(b, `,"values":[`...)
				for j, p := range s.Floats {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendPoint(b, p.T, p.F)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
	default:
		return b, false
	}
	b = append(b, "]}"...)
	for _, f := range []struct {
		name string
		list []string
	}{{"warnings", warnings}, {"infos", infos}} {
		if len(f.list) == 0 {
			continue
		}
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":[`...)
		for i, s := range f.list {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendLabels writes a label set as a JSON object, as labels.Labels'
// MarshalJSON does (its map's keys come out sorted, as labels are).
func appendLabels(b []byte, ls labels.Labels) []byte {
	b = append(b, '{')
	first := true
	ls.Range(func(l labels.Label) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, l.Name)
		b = append(b, ':')
		b = appendString(b, l.Value)
	})
	return append(b, '}')
}

// appendPoint writes [<seconds>,"<value>"] as promql.FPoint's MarshalJSON
// does: the timestamp as the float64 seconds encoding/json writes, the
// value formatted by strconv 'f'.
func appendPoint(b []byte, t int64, f float64) []byte {
	b = append(b, '[')
	b = appendFloat(b, float64(t)/1000)
	b = append(b, `,"`...)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	return append(b, `"]`...)
}

// appendFloat writes a finite float64 as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...) // unreachable for timestamps
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		c, _ := json.Marshal(f) // encoding/json's exponent form; rare
		return append(b, c...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string as encoding/json does with its
// default HTML escaping: <, > and & as \u003c and so on, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// maxPooledBuffer bounds the answer buffers kept for reuse, so that one
// huge answer does not stay resident.
const maxPooledBuffer = 4 << 20

var bufferPool = sync.Pool{New: func() any { return new([]byte) }}
