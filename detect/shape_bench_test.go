package detect

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkShapeStorm measures one storm update with 1, 100 and 10,000
// clients, with both signals in the same key order (the usual case for two
// PromQL vectors sorted by label) and in different orders (map join).
func BenchmarkShapeStorm(b *testing.B) {
	for _, clients := range []int{1, 100, 10_000} {
		for _, aligned := range []bool{true, false} {
			name := "clients=" + strconv.Itoa(clients)
			if !aligned {
				name += "/unaligned"
			}
			b.Run(name, func(b *testing.B) {
				k, _ := Lookup("storm")
				d, err := k.NewConfig().(CompositeConfig).New()
				require.NoError(b, err)
				reqs := make([]Sample, clients)
				lim := make([]Sample, clients)
				for i := range reqs {
					key := "client-" + strconv.Itoa(i)
					reqs[i] = Sample{Key: key, Value: 10 + float64(i%7)}
					lim[i] = Sample{Key: key, Value: 0.01 * float64(i%3)}
				}
				if !aligned {
					for i, j := 0, len(lim)-1; i < j; i, j = i+1, j-1 {
						lim[i], lim[j] = lim[j], lim[i]
					}
				}
				in := Inputs{"requests": reqs, "limited": lim}
				ts := int64(0)
				for range 100 { // warm the baseline and the scratch map
					ts += 10_000
					d.Observe(ts, in)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					ts += 10_000
					d.Observe(ts, in)
				}
			})
		}
	}
}

// BenchmarkShapeScalar measures one update of the scalar shape detectors.
func BenchmarkShapeScalar(b *testing.B) {
	in := Inputs{
		"symptom": {{Value: 0.2}}, "resource": {{Value: 0.3}}, "traffic": {{Value: 200}},
		"requests": {{Value: 1000}}, "latency": {{Value: 0.2}}, "errors": {{Value: 2}},
		"health": {{Key: "a", Value: 1}, {Key: "b", Value: 1}},
	}
	for _, kind := range []string{"decoupling", "surge", "error_rate"} {
		b.Run(kind, func(b *testing.B) {
			k, _ := Lookup(kind)
			d, err := k.NewConfig().(CompositeConfig).New()
			require.NoError(b, err)
			ts := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				ts += 10_000
				d.Observe(ts, in)
			}
		})
	}
}
