//go:build amd64 && !amd64.v3

// The checksums are of exact float bits: architectures and GOAMD64 levels
// that fuse multiply-adds (FMA) round differently, so they hold on plain
// amd64 (the default GOAMD64=v1 and v2) only.

package detect

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The checksums below pin the exact output of the detectors and of their
// building blocks (EWMA, Robust, Seasonal, Likelihood, NormalTail,
// LogTailScore) on fixed inputs: every float of every verdict, bit for bit,
// and, apart, the final snapshot. Speed-ups of the building blocks must not change
// a single bit; a change of behaviour must update these on purpose (print
// them with `go test ./detect -run TestGoldenChecksums -v`).
var goldenChecksums = map[string]uint64{
	"auto/no_day":                   0x55e62d3b3d052e8c,
	"auto/no_day/snapshot":          0x3e447c9dbcef4e34,
	"auto/odd":                      0x808952b776aa9282,
	"auto/odd/snapshot":             0xcffdff3e448b6bf4,
	"blocks/ewma_robust_likelihood": 0x7611ffb929651c7a,
	"blocks/seasonal":               0xc1bb10dddc69ae6f,
	"blocks/tails":                  0xa5aeaa562c0ab43b,
	"kind/auto":                     0xf8247cae922c6a2e,
	"kind/auto/snapshot":            0xc6fa1af882588536,
	"kind/cusum":                    0x4881f77effed4c25,
	"kind/cusum/snapshot":           0xbb676a9a8c5abd91,
	"kind/ewma":                     0x93e283cef68c5409,
	"kind/ewma/snapshot":            0x65420735fc3cec1c,
	"kind/mad":                      0x30c38f840a7d4426,
	"kind/mad/snapshot":             0xdcc0503116d8a7a6,
	"kind/seasonal":                 0x46abdbed64569d23,
	"kind/seasonal/snapshot":        0x537abb7f5240a5c6,
	"kind/zscore":                   0xf830dcbea5fe2c92,
	"kind/zscore/snapshot":          0x782d303c09f10244,
	"seasonal/odd":                  0xca1f29297af738c9,
	"seasonal/odd/snapshot":         0x0965f1e97dd01af0,
}

// goldenSeries is a long, varied series: a daily cycle with noise, spikes,
// level shifts, a flat stretch, a heavy-tailed stretch, negative values,
// gaps, out-of-step timestamps (including before 1970) and non-finite
// values.
func goldenSeries() (ts []int64, vs []float64) {
	rng := rand.New(rand.NewPCG(11, 13))
	t := int64(-3 * 24 * 3600 * 1000) // starts before the epoch
	for i := range 20000 {
		step := int64(60_000)
		switch {
		case i%500 == 0:
			step = 3_600_000 + 7 // a gap, off the minute grid
		case i%37 == 0:
			step = 1_234
		case i%53 == 0:
			step = 0 // repeated timestamp
		}
		t += step
		v := 100 + 30*math.Sin(2*math.Pi*float64(t)/float64(dayMs)) + 4*rng.NormFloat64()
		switch {
		case i >= 3000 && i < 3400:
			v = 42 // flat
		case i >= 6000 && i < 7000:
			v = -250 + rng.NormFloat64()*0.01 // negative, tight
		case i >= 9000 && i < 10000:
			v += 50 / (rng.Float64() + 1e-3) // heavy tail
		case i >= 14000:
			v += 400 // lasting shift
		}
		switch {
		case i%1777 == 0:
			v += 500
		case i%997 == 0:
			v = math.NaN()
		case i%2203 == 0:
			v = math.Inf(-1)
		case i == 12345:
			v = 1e300
		}
		ts = append(ts, t)
		vs = append(vs, v)
	}
	return ts, vs
}

type goldenHash struct {
	h interface{ Write([]byte) (int, error) }
}

func (g goldenHash) f(vs ...float64) {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		_, _ = g.h.Write(b[:])
	}
}

func (g goldenHash) u(vs ...uint64) {
	var b [8]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], v)
		_, _ = g.h.Write(b[:])
	}
}

// goldenDetector records under name the checksum of every verdict and,
// under name+"/snapshot", of the final snapshot: apart, so that a change
// to state no verdict reads shows as what it is.
func goldenDetector(t *testing.T, sums map[string]uint64, name string, cfg UnivariateConfig, ts []int64, vs []float64) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	d, err := cfg.New()
	require.NoError(t, err)
	h := fnv.New64a()
	g := goldenHash{h}
	for i := range ts {
		v := d.Observe(ts[i], vs[i])
		g.f(v.Score, v.Expected, v.Lower, v.Upper)
		g.u(uint64(v.Direction), uint64(v.State))
	}
	sums[name] = h.Sum64()
	snap, err := d.MarshalBinary()
	require.NoError(t, err)
	h = fnv.New64a()
	_, _ = h.Write(snap)
	sums[name+"/snapshot"] = h.Sum64()
}

func goldenSums(t *testing.T) map[string]uint64 {
	ts, vs := goldenSeries()
	sums := map[string]uint64{}

	// Every univariate kind with its defaults.
	for _, kind := range univariateKinds(t) {
		k, _ := Lookup(kind)
		goldenDetector(t, sums, "kind/"+kind, k.NewConfig().(UnivariateConfig), ts, vs)
	}
	// Variants that take other paths.
	noDay := DefaultAutoConfig()
	noDay.DayBuckets = 0
	goldenDetector(t, sums, "auto/no_day", &noDay, ts, vs)
	odd := DefaultAutoConfig()
	odd.DayBuckets, odd.ExtremeTolerance, odd.Calm = 7, -1, 0
	goldenDetector(t, sums, "auto/odd", &odd, ts, vs)
	seas := DefaultSeasonalConfig()
	seas.Period, seas.Buckets, seas.MinVisits = 25*time.Hour+7*time.Millisecond, 13, 2
	goldenDetector(t, sums, "seasonal/odd", &seas, ts, vs)

	// The building blocks on their own.
	h := fnv.New64a()
	g := goldenHash{h}
	for _, hl := range []float64{0.5, 1, 2, 50, 8000} {
		e := NewEWMA(AlphaForHalfLife(hl))
		r := NewRobust(AlphaForHalfLife(hl), 3)
		l := NewLikelihood(2, hl, 0.05)
		for i, v := range vs {
			if !finite(v) {
				continue
			}
			e.Update(v)
			r.Update(v)
			g.f(e.Mean(), e.Var(), e.Std(), e.Z(v, 1e-3), r.Loc(), r.Scale(), r.Z(v, 1e-3))
			g.f(l.Update(math.Abs(v-100) / 40))
			g.u(e.Count(), r.Count(), l.Count(), uint64(i))
		}
	}
	sums["blocks/ewma_robust_likelihood"] = h.Sum64()

	h = fnv.New64a()
	g = goldenHash{h}
	for _, sc := range []struct {
		period  int64
		buckets int
	}{{dayMs, 24}, {7 * dayMs, 168}, {dayMs + 7, 13}, {1000, 1000}, {60_000, 7}} {
		s := NewSeasonal(sc.period, sc.buckets, AlphaForHalfLife(20))
		for i := range ts {
			// Forward, and every so often out of order, to exercise the
			// bucket cache both ways.
			at := ts[i]
			if i%11 == 0 {
				at = ts[len(ts)-1-i]
			}
			g.u(uint64(s.Bucket(at)))
			if finite(vs[i]) {
				s.Update(at, vs[i])
			}
			b := s.At(at)
			g.f(b.Mean(), b.Var())
			g.u(b.Count())
		}
	}
	sums["blocks/seasonal"] = h.Sum64()

	h = fnv.New64a()
	g = goldenHash{h}
	for z := -10.0; z <= 40; z += 0.0137 {
		p := NormalTail(z)
		g.f(p, LogTailScore(p), zScore(z), LogTailScore(z/40))
	}
	g.f(LogTailScore(math.NaN()), LogTailScore(0), LogTailScore(1), LogTailScore(-1), NormalTail(math.Inf(1)), NormalTail(math.Inf(-1)))
	sums["blocks/tails"] = h.Sum64()
	return sums
}

func TestGoldenChecksums(t *testing.T) {
	got := goldenSums(t)
	for name, sum := range got {
		t.Logf("%q: %#x,", name, sum)
	}
	require.Equal(t, goldenChecksums, got)
}
