package detect

import (
	"math"
	"math/rand/v2"
	"testing"
)

// benchValues is a noisy daily cycle with occasional spikes, precomputed so
// the benchmarks time the detectors, not the random number generator.
var benchValues = func() []float64 {
	rng := rand.New(rand.NewPCG(5, 5))
	vs := make([]float64, 4096)
	for i := range vs {
		vs[i] = 100 + 20*math.Sin(2*math.Pi*float64(i)/288) + 3*rng.NormFloat64()
		if i%700 == 0 {
			vs[i] += 60
		}
	}
	return vs
}()

const benchMask = 4095

func BenchmarkEWMA(b *testing.B) {
	e := NewEWMA(AlphaForHalfLife(50))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e.Update(benchValues[i&benchMask])
	}
}

func BenchmarkRobust(b *testing.B) {
	r := NewRobust(AlphaForHalfLife(100), 3)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Update(benchValues[i&benchMask])
	}
}

func BenchmarkCUSUM(b *testing.B) {
	c := NewCUSUM(0.5, 5)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Update((benchValues[i&benchMask] - 100) / 20)
	}
}

func BenchmarkSeasonal(b *testing.B) {
	s := NewSeasonal(7*dayMs, 168, AlphaForHalfLife(20))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Update(int64(i)*60_000, benchValues[i&benchMask])
	}
}

func BenchmarkLikelihood(b *testing.B) {
	l := NewLikelihood(2, 5000, 0.05)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Update(math.Abs(benchValues[i&benchMask]-100) / 20)
	}
}

// BenchmarkDetector times Observe in steady state (after warm-up) for every
// univariate kind.
func BenchmarkDetector(b *testing.B) {
	for _, kind := range []string{"auto", "ewma", "mad", "cusum", "seasonal", "zscore"} {
		b.Run(kind, func(b *testing.B) {
			d := newDetector(b, kind)
			for i := range 5000 {
				d.Observe(int64(i)*60_000, benchValues[i&benchMask])
			}
			b.ReportAllocs()
			for i := 5000; b.Loop(); i++ {
				d.Observe(int64(i)*60_000, benchValues[i&benchMask])
			}
		})
	}
}

func BenchmarkAutoSnapshot(b *testing.B) {
	d := newDetector(b, "auto")
	for i := range 5000 {
		d.Observe(int64(i)*60_000, benchValues[i&benchMask])
	}
	b.ReportAllocs()
	for b.Loop() {
		snap, _ := d.MarshalBinary()
		if err := d.UnmarshalBinary(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewAutoZoned is what a rule pays per new series for an auto
// detector with a time_zone: the config's validation and the detector,
// with the zone loaded once per process, not per series.
func BenchmarkNewAutoZoned(b *testing.B) {
	cfg := DefaultAutoConfig()
	cfg.TimeZone = "America/New_York"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfg.New(); err != nil {
			b.Fatal(err)
		}
	}
}
