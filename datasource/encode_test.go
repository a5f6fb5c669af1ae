package datasource

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

// reference is the answer as encoding/json writes it.
func reference(t testing.TB, v parser.Value, warnings, infos []string) string {
	t.Helper()
	resp := apiResponse{Status: "success", Data: queryData{ResultType: v.Type(), Result: v}, Warnings: warnings, Infos: infos}
	if vec, ok := v.(promql.Vector); ok && vec == nil {
		resp.Data = queryData{ResultType: parser.ValueTypeVector, Result: promql.Vector{}}
	}
	if m, ok := v.(promql.Matrix); ok && m == nil {
		resp.Data = queryData{ResultType: parser.ValueTypeMatrix, Result: promql.Matrix{}}
	}
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	return string(b)
}

// TestAppendResultMatchesEncodingJSON shows that the direct encoder writes
// byte for byte what encoding/json writes, for awkward label values,
// special floats and timestamps, warnings, and empty results, and that it
// declines histograms and other result types.
func TestAppendResultMatchesEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"é ü 日本", "bad \xff utf8 \xc3", "line\u2028para\u2029", "emoji 🙂"}
	floats := []float64{0, 1, -1, 0.1, 1e-7, 1e21, 123456789.123456789, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, -0.0}
	times := []int64{0, 1, 999, 1000, 1733202000123, -1500, 5, 99_999_999_999_999}
	rng := rand.New(rand.NewPCG(1, 2))
	randomString := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	var vec promql.Vector
	var mat promql.Matrix
	for i := range 200 {
		ls := labels.FromStrings("__name__", "m", "a", odd[i%len(odd)], "z"+strconv.Itoa(i), randomString())
		vec = append(vec, promql.Sample{Metric: ls, T: times[i%len(times)], F: floats[i%len(floats)]})
		s := promql.Series{Metric: ls}
		for j := range i % 4 {
			s.Floats = append(s.Floats, promql.FPoint{T: times[(i+j)%len(times)], F: floats[(i+j)%len(floats)]})
		}
		mat = append(mat, s)
	}
	tests := []struct {
		name            string
		v               parser.Value
		warnings, infos []string
		declined        bool
	}{
		{name: "vector", v: vec},
		{name: "matrix", v: mat},
		{name: "nil vector", v: promql.Vector(nil)},
		{name: "empty matrix", v: promql.Matrix{}},
		{name: "warnings and infos", v: vec[:3], warnings: []string{"PromQL warning: <odd> \"one\""}, infos: []string{"info"}},
		{name: "histogram", v: promql.Vector{{Metric: labels.FromStrings("a", "b"), H: &histogram.FloatHistogram{Count: 1}}}, declined: true},
		{name: "scalar", v: promql.Scalar{T: 1000, V: 1}, declined: true},
		{name: "string", v: promql.String{T: 1000, V: "x"}, declined: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendResult(nil, tt.v, tt.warnings, tt.infos)
			if tt.declined {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			require.Equal(t, reference(t, tt.v, tt.warnings, tt.infos), string(got))
		})
	}
}

// BenchmarkWriteResult encodes a 5,000-series vector, the answer of the
// load test's query, with encoding/json and with the direct encoder.
func BenchmarkWriteResult(b *testing.B) {
	var vec promql.Vector
	for i := range 5000 {
		vec = append(vec, promql.Sample{Metric: labels.FromStrings("shard", strconv.Itoa(i)), T: 1733202000123, F: float64(i) * 1.5})
	}
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(apiResponse{Status: "success", Data: queryData{ResultType: vec.Type(), Result: vec}})
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendResult(buf[:0], vec, nil, nil)
		}
	})
}
