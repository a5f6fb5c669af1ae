package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlphaForHalfLife(t *testing.T) {
	tests := []struct {
		halfLife float64
		want     float64
	}{
		{1, 0.5},
		{0, 1},
		{-3, 1},
		{10, 1 - math.Pow(0.5, 0.1)},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, AlphaForHalfLife(tt.halfLife), 1e-12, "half life %v", tt.halfLife)
	}
	// After halfLife updates, the weight left on the old value is one half.
	a := AlphaForHalfLife(20)
	require.InDelta(t, 0.5, math.Pow(1-a, 20), 1e-12)
}

// TestEqualWeightsUntil checks the precomputed bound against the test it
// replaces, float64(m)*alpha < 1, on both sides of the boundary.
func TestEqualWeightsUntil(t *testing.T) {
	alphas := []float64{1, 0.5, 0.3, 0.1, 1.0 / 3, 1.0 / 7, 1e-3, AlphaForHalfLife(150), AlphaForHalfLife(8000), 1e-19, 5e-324}
	for _, hl := range []float64{0.7, 2, 5, 20, 50, 100, 200, 1234.5} {
		alphas = append(alphas, AlphaForHalfLife(hl))
	}
	for _, a := range alphas {
		m := equalWeightsUntil(a)
		if m == math.MaxUint64 {
			require.Less(t, float64(uint64(1)<<63)*a, 1.0, "alpha %v", a)
			continue
		}
		require.False(t, float64(m)*a < 1, "alpha %v, m %d", a, m)
		require.True(t, m == 0 || float64(m-1)*a < 1, "alpha %v, m %d", a, m)
	}
	require.Equal(t, uint64(0), equalWeightsUntil(math.NaN()))
	require.Equal(t, uint64(0), equalWeightsUntil(math.Inf(1)))
	require.Equal(t, uint64(math.MaxUint64), equalWeightsUntil(0))
	require.Equal(t, uint64(math.MaxUint64), equalWeightsUntil(-0.5))
	// A restored snapshot derives the bound again.
	e := NewEWMA(0.1)
	e.Update(1)
	w := newEncoder("x", 64)
	e.encode(w)
	var back EWMA
	r, err := newDecoder("x", w.b)
	require.NoError(t, err)
	back.decode(r)
	require.NoError(t, r.finish())
	require.Equal(t, e, back)
}

func TestEWMA(t *testing.T) {
	tests := []struct {
		name     string
		xs       []float64
		alpha    float64
		wantMean float64
		wantVar  float64
	}{
		{"constant series has zero variance", []float64{3, 3, 3, 3}, 0.3, 3, 0},
		{"single sample", []float64{7}, 0.3, 7, 0},
		{"alpha one tracks the last value", []float64{1, 5, 9}, 1, 9, 0},
		// Fewer than 1/alpha samples: plain mean and population variance.
		{"short history is equally weighted", []float64{1, 2, 3, 4}, 0.1, 2.5, 1.25},
		// alpha 0.5 from the second sample: mean 1.5, var 0.25; third
		// sample 5: d=3.5, mean 3.25, var 0.5*(0.25+3.5*1.75) = 3.1875.
		{"exponential weighting afterwards", []float64{1, 2, 5}, 0.5, 3.25, 3.1875},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEWMA(tt.alpha)
			for _, x := range tt.xs {
				e.Update(x)
			}
			require.InDelta(t, tt.wantMean, e.Mean(), 1e-12)
			require.InDelta(t, tt.wantVar, e.Var(), 1e-12)
			require.Equal(t, uint64(len(tt.xs)), e.Count())
		})
	}
}

func TestEWMAConvergesToDistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	e := NewEWMA(AlphaForHalfLife(500))
	for range 20000 {
		e.Update(10 + 2*rng.NormFloat64())
	}
	require.InDelta(t, 10, e.Mean(), 0.3)
	require.InDelta(t, 2, e.Std(), 0.25)
	require.InDelta(t, 2.5, e.Z(15, 0), 0.4)
}

func TestRobustResistsOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	r := NewRobust(AlphaForHalfLife(50), 3)
	e := NewEWMA(AlphaForHalfLife(50))
	for range 2000 {
		x := 100 + rng.NormFloat64()
		r.Update(x)
		e.Update(x)
	}
	require.InDelta(t, 100, r.Loc(), 0.3)
	require.InDelta(t, 1, r.Scale(), 0.25, "scale is in standard-deviation units")

	r.Update(10000)
	e.Update(10000)
	require.InDelta(t, 100, r.Loc(), 0.5, "one outlier barely moves the robust level")
	require.Greater(t, e.Mean(), 200.0, "while it drags a plain EWMA")

	// A lasting shift is still followed.
	for range 1000 {
		r.Update(150 + rng.NormFloat64())
	}
	require.InDelta(t, 150, r.Loc(), 1)
}

func TestCUSUM(t *testing.T) {
	tests := []struct {
		name    string
		zs      []float64
		wantHit bool
		wantDir Direction
	}{
		{"noise-free in control", repeat(0, 100), false, DirUp},
		{"small lasting upward shift", repeat(1, 20), true, DirUp},
		{"small lasting downward shift", repeat(-1, 20), true, DirDown},
		{"shift below the slack never accumulates", repeat(0.4, 1000), false, DirUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCUSUM(0.5, 5)
			var stat float64
			var dir Direction
			for _, z := range tt.zs {
				stat, dir = c.Update(z)
			}
			require.Equal(t, tt.wantHit, stat >= 1, "stat %v", stat)
			require.Equal(t, tt.wantDir, dir)
			c.Reset()
			stat, _ = c.Update(0)
			require.Zero(t, stat)
		})
	}
}

func repeat(v float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestSeasonal(t *testing.T) {
	const hour = int64(3600 * 1000)
	s := NewSeasonal(24*hour, 24, 0.5)
	tests := []struct {
		ts   int64
		want int
	}{
		{0, 0}, {hour - 1, 0}, {hour, 1}, {23*hour + 5, 23}, {24 * hour, 0}, {-1, 23},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, s.Bucket(tt.ts), "ts %d", tt.ts)
	}
	// Learn two days of "busy at 10:00, idle otherwise".
	for day := range int64(2) {
		for h := range int64(24) {
			v := 1.0
			if h == 10 {
				v = 100
			}
			s.Update(day*24*hour+h*hour, v)
		}
	}
	require.InDelta(t, 100, s.At(10*hour+15*60*1000).Mean(), 1e-9)
	require.InDelta(t, 1, s.At(3*hour).Mean(), 1e-9)
	require.Equal(t, uint64(2), s.At(3*hour).Count())
}

func TestSeasonalBucketCache(t *testing.T) {
	// 7 buckets over 100 ms: 14 ms each, the last one takes 16 ms.
	s := NewSeasonal(100, 7, 0.5)
	rng := rand.New(rand.NewPCG(4, 4))
	ts := int64(-1000)
	for range 20000 {
		switch rng.IntN(4) {
		case 0:
			ts = rng.Int64N(2000) - 1000 // jump anywhere, even backwards
		case 1:
			ts += 14 + rng.Int64N(3) - 1 // about a bucket on: the next one, or just short of it
		default:
			ts += rng.Int64N(5)
		}
		off := ((ts % 100) + 100) % 100
		want := int(min(off/14, 6))
		require.Equal(t, want, s.Bucket(ts), "ts %d", ts)
		// The cached span is the bucket's, which the day's profile
		// reads for a sample's place within it.
		from := ts - off + int64(want)*14
		till := from + 14
		if want == 6 {
			till = ts - off + 100
		}
		require.Equal(t, [2]int64{from, till}, [2]int64{s.lastFrom, s.lastTill}, "ts %d", ts)
	}
}

func TestNormalTailAndLogScore(t *testing.T) {
	require.InDelta(t, 0.5, NormalTail(0), 1e-15)
	require.InDelta(t, 0.158655, NormalTail(1), 1e-6)
	require.InDelta(t, 2.866516e-7, NormalTail(5), 1e-12)
	require.Greater(t, NormalTail(30), 0.0, "no underflow to zero in the far tail")

	tests := []struct {
		p, want float64
	}{
		{1, 0}, {2, 0}, {math.NaN(), 0}, {1e-5, 0.5}, {0, 1}, {1e-20, 1},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, LogTailScore(tt.p), 1e-4, "p=%v", tt.p)
	}
}

func TestLikelihood(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	l := NewLikelihood(2, 1000, 0.05)
	var p float64
	for range 3000 {
		p = l.Update(math.Abs(rng.NormFloat64()))
	}
	require.Greater(t, p, 1e-3, "ordinary surprise is not unlikely")
	// A burst of large surprise is.
	for range 3 {
		p = l.Update(5)
	}
	require.Less(t, p, 1e-5)

	// A series that is always this surprising gets used to it.
	for range 5000 {
		p = l.Update(5)
	}
	require.Greater(t, p, 0.1)
}
