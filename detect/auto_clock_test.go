package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoRowNumbers: a series whose timestamps are its row numbers,
// 1, 2, 3, ... read as Unix seconds, as data sets without times are
// published, has no clock (see fitClock). auto judges it without the
// time of day and without fitting its windows to a one-second interval;
// a new high pages once the warm-up is over, not a day of timestamps
// later: the rise below pages 29 samples in, at the first peak of the
// cycle it lifts above the old ones, where a day's wait (86,400 samples
// of a second) would never end. The same values a second apart in 2020
// keep the clock (and never page). The cycle, of 200 samples, is no
// day at any common interval, so no clock is found for it either (see
// cycle.go).
func TestAutoRowNumbers(t *testing.T) {
	const n, incident = 3000, 2000
	rng := rand.New(rand.NewPCG(7, 7))
	values := make([]float64, n)
	for i := range values {
		values[i] = 100 + 10*math.Sin(2*math.Pi*float64(i)/200) + rng.NormFloat64()
		if i >= incident { // a rise of 12 over 100 samples that stays
			values[i] += 12 * min(float64(i-incident+1)/100, 1)
		}
	}
	cfg := DefaultAutoConfig()

	rows := NewAuto(cfg)
	var restored *Auto
	paged := -1
	for i, x := range values {
		ts := int64(i+1) * 1000
		v := rows.Observe(ts, x)
		require.NotEqual(t, EvidenceTimeOfDay, v.Evidence, "row %d", i)
		if paged < 0 && v.Score >= cfg.Threshold && i >= incident {
			paged = i
		}
		if restored != nil {
			require.Equal(t, v, restored.Observe(ts, x), "row %d after the restore", i)
		}
		if i == 1000 {
			b, err := rows.MarshalBinary()
			require.NoError(t, err)
			restored = NewAuto(cfg)
			require.NoError(t, restored.UnmarshalBinary(b))
		}
	}
	require.GreaterOrEqual(t, paged, incident)
	require.Less(t, paged, incident+100, "the first peak of the cycle above the old ones pages")

	clock := NewAuto(cfg)
	start := int64(1_600_000_000_000) // 2020-09-13
	for i, x := range values[:100] {
		clock.Observe(start+int64(i)*1000, x)
	}
	require.False(t, clock.noClock)
	require.Equal(t, int64(maxSliceScale), clock.sliceScale(), "a real one-second interval is fitted")
}
