package detect

import (
	"math"
	"math/rand/v2"
	"runtime"
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
		b.Run(kind, func(b *testing.B) { benchObserve(b, newDetector(b, kind), benchValues) })
	}
}

// benchObserve times d's Observe over vs (benchMask+1 values, repeated
// at one-minute steps) after a warm-up of 5,000 samples.
func benchObserve(b *testing.B, d Detector, vs []float64) {
	for i := range 5000 {
		d.Observe(int64(i)*60_000, vs[i&benchMask])
	}
	b.ReportAllocs()
	for i := 5000; b.Loop(); i++ {
		d.Observe(int64(i)*60_000, vs[i&benchMask])
	}
}

// BenchmarkAutoFifteenSeconds is BenchmarkDetector/auto at the agent's
// default interval, where the slices' fits are learnt as well (see
// sliceFit).
func BenchmarkAutoFifteenSeconds(b *testing.B) {
	d := newDetector(b, autoKind)
	for i := range 5000 {
		d.Observe(int64(i)*15_000, benchValues[i&benchMask])
	}
	b.ReportAllocs()
	for i := 5000; b.Loop(); i++ {
		d.Observe(int64(i)*15_000, benchValues[i&benchMask])
	}
}

// BenchmarkAutoHeld times auto's Observe on a measurement off any
// lattice that holds each value for three samples (a gauge updated
// less often than it is read): every third update is a change away from
// a repeated value, which stepLattice looks at.
func BenchmarkAutoHeld(b *testing.B) {
	vs := make([]float64, len(benchValues))
	for i := range vs {
		vs[i] = benchValues[i/3]
	}
	benchObserve(b, newDetector(b, "auto"), vs)
}

// BenchmarkAutoCounts times auto's Observe on counts: the benchmark's
// series rounded to whole numbers, and the same per second over a minute
// (on the lattice of 1/60; see lattice.go). Counts take the count model's
// path (Poisson floors), and the likelihoods reach their tails, where
// scores are worked out, more often than on the measurement above.
func BenchmarkAutoCounts(b *testing.B) {
	for _, unit := range []struct {
		name string
		div  float64
	}{{"whole", 1}, {"per_second", 60}} {
		b.Run(unit.name, func(b *testing.B) {
			vs := make([]float64, len(benchValues))
			for i, v := range benchValues {
				vs[i] = math.Round(v) / unit.div
			}
			benchObserve(b, newDetector(b, "auto"), vs)
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

// BenchmarkAutoFootprint reports what an auto detector holds per series
// once its day and week are learnt (8 days of 5-minute samples): its
// heap (heap-B/series, from the live heap over 1,000 detectors) and its
// snapshot (snapshot-B/series). Its ns/op is the whole run's per
// detector and means little. The same number of samples 15 s apart (the
// agent's default interval) adds what a series finer than a minute
// keeps: the slices' fits (sliceFit).
func BenchmarkAutoFootprint(b *testing.B) {
	for _, c := range []struct {
		name string
		step int64
	}{{"5m", 300_000}, {"15s", 15_000}} {
		b.Run(c.name, func(b *testing.B) { autoFootprint(b, c.step) })
	}
}

func autoFootprint(b *testing.B, step int64) {
	const n, samples = 1000, 8 * 288
	var heap, snap float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ds := make([]*Auto, n)
		for i := range ds {
			ds[i] = NewAuto(DefaultAutoConfig())
			for j := range samples {
				ds[i].Observe(int64(j)*step, benchValues[(i+j)&benchMask])
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / n
		s, err := ds[0].MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		snap = float64(len(s))
		runtime.KeepAlive(ds)
	}
	b.ReportMetric(heap, "heap-B/series")
	b.ReportMetric(snap, "snapshot-B/series")
}
