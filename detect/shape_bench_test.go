package detect

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkShapeStorm measures one storm update with 1, 100 and 10,000
// clients, for the three ways limited is joined to requests: same keys in
// the same order, both sorted with limited a subset (merge), and unordered
// (map).
func BenchmarkShapeStorm(b *testing.B) {
	for _, clients := range []int{1, 100, 10_000} {
		for _, join := range []string{"aligned", "sorted-subset", "unordered"} {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, join), func(b *testing.B) {
				k, _ := Lookup("storm")
				d, err := k.NewConfig().(CompositeConfig).New()
				require.NoError(b, err)
				reqs := make([]Sample, clients)
				var lim []Sample
				for i := range reqs {
					key := fmt.Sprintf("client-%05d", i)
					reqs[i] = Sample{Key: key, Value: 10 + float64(i%7)}
					if join != "sorted-subset" || i%10 == 0 {
						lim = append(lim, Sample{Key: key, Value: 0.01 * float64(i%3)})
					}
				}
				if join == "unordered" {
					slices.Reverse(lim)
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
		"queue": {{Value: 1}}, "in_flight": {{Value: 50}}, "workers": {{Value: 100}},
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
