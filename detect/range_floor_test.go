package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlainKindsOffsetGauge: a constant added to a gauge changes nothing
// for the plain kinds either. Each runs over ten days of 1-minute noise
// around 50 (spread 1) with an incident of +8 for 30 samples, as it is
// and with 10³, 10⁵ and 10⁷ added. With scaleFloor's thousandth of the
// level, the floor at 10⁵ was 100, a hundred spreads of the noise, and no
// kind paged for the incident; with valueRange's floor, at most a
// hundredth of the range, each pages for it at every offset, and about
// as often elsewhere as on the gauge as it is.
func TestPlainKindsOffsetGauge(t *testing.T) {
	const perDay, minuteMs = 1440, 60_000
	series := func(seed uint64, offset float64) (xs []float64, at int) {
		rng := rand.New(rand.NewPCG(seed, 78))
		at = 5*perDay + rng.IntN(perDay)
		xs = make([]float64, 10*perDay)
		for i := range xs {
			x := 50 + rng.NormFloat64()
			if i >= at && i < at+30 {
				x += 8
			}
			xs[i] = x + offset
		}
		return xs, at
	}
	for _, kind := range []string{"zscore", "ewma", "mad", "cusum", "seasonal"} {
		k, ok := Lookup(kind)
		require.True(t, ok, kind)
		cfg := k.NewConfig().(interface {
			UnivariateConfig
			AlertThreshold() float64
		})
		threshold := cfg.AlertThreshold()
		run := func(offset float64) (pages, caught int) {
			for seed := range uint64(5) {
				xs, at := series(seed, offset)
				d, err := cfg.New()
				require.NoError(t, err)
				paged := false
				for i, x := range xs {
					v := d.Observe(int64(i)*minuteMs, x)
					if v.Score < threshold {
						continue
					}
					if i >= at && i < at+30 {
						paged = true
					} else {
						pages++
					}
				}
				if paged {
					caught++
				}
			}
			return pages, caught
		}
		plain, caught := run(0)
		t.Logf("%s, offset 0: %d pages outside the incidents, %d of 5 incidents paged", kind, plain, caught)
		require.Equal(t, 5, caught, "%s: incidents paged on the gauge as it is", kind)
		for _, offset := range []float64{1e3, 1e5, 1e7} {
			pages, caught := run(offset)
			t.Logf("%s, offset %g: %d pages outside the incidents, %d of 5 incidents paged", kind, offset, pages, caught)
			require.Equal(t, 5, caught, "%s: incidents paged at offset %g", kind, offset)
			require.InDelta(t, plain, pages, math.Max(2, 0.1*float64(plain)), "%s: pages outside the incidents at offset %g", kind, offset)
		}
	}
}
