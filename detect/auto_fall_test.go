package detect

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// fallingShare draws days of 5-minute samples of a small CPU share: 10 %
// with log-normal noise (a third of it either way), and jobs at 03:00 and
// 15:00 that each run it to about 140 for one sample. From fallDay on,
// everything is at half its value, as after a move to a faster machine.
// The fall lies within the noise, so it makes no new regime.
func fallingShare(seed uint64, days, fallDay int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 17))
	const perDay = 288
	xs := make([]float64, days*perDay)
	for i := range xs {
		level := 10.0
		if i >= fallDay*perDay {
			level = 5
		}
		xs[i] = level * math.Exp(0.3*rng.NormFloat64())
		if i%perDay == 36 || i%perDay == 180 {
			xs[i] = level * (14 + 0.5*rng.NormFloat64())
		}
	}
	return xs
}

// TestAutoRecordsAfterAFall: on a positive series whose scale halves
// for good, a record is measured against the highest value scaled down
// with the level, once the level's two-day mean has fallen by a third
// (see fall.go). A spike to 115 after the fall lies beyond the daily
// jobs' 70 but short of their 140 before. The jobs come twice a day, so
// the spike path mutes and only a record can page the spike. With the
// bar left where it was before the fall, it paged on 1 of ten seeds; now
// it pages on all ten. Over days 9 to 13 the series paged once across
// the ten seeds, with the bar lowered or not.
func TestAutoRecordsAfterAFall(t *testing.T) {
	const perDay = 288
	cfg := DefaultAutoConfig()
	caught, quiet := 0, 0
	for seed := range uint64(10) {
		xs := fallingShare(seed, 14, 6)
		at := 12*perDay + 264 // 22:00 on the thirteenth day
		xs[at] = 115
		if alertsAt(cfg, xs, 300_000, at, at) > 0 {
			caught++
		}
		quiet += alertsAt(cfg, xs, 300_000, 8*perDay, at-1)
	}
	t.Logf("spikes caught after the fall: %d of 10; pages on days 9 to 13 before them: %d", caught, quiet)
	require.Equal(t, 10, caught)
	require.LessOrEqual(t, quiet, 2)
}

// TestAutoFallSnapshot: the slow level and its value at the highest
// record survive a snapshot. A snapshot from before format 41 starts
// the slow level at the level, or at 0 where the level it holds is no
// number (a damaged file the fuzzer wrote): its own snapshot then
// restores, where a NaN written out was refused.
func TestAutoFallSnapshot(t *testing.T) {
	xs := fallingShare(3, 14, 6)
	d := NewAuto(DefaultAutoConfig())
	for i, x := range xs {
		d.Observe(int64(i)*300_000, x)
	}
	require.Less(t, d.slowHi, 8.0, "the bar has followed the fall: at the highest value the slow level was about 10")
	snap, err := d.MarshalBinary()
	require.NoError(t, err)
	back := NewAuto(DefaultAutoConfig())
	require.NoError(t, back.UnmarshalBinary(snap))
	require.Equal(t, d.slow, back.slow)
	require.Equal(t, d.slowHi, back.slowHi)

	old, err := os.ReadFile("testdata/upgrade/auto-v33.snap")
	require.NoError(t, err)
	up := NewAuto(DefaultAutoConfig())
	require.NoError(t, up.UnmarshalBinary(old))
	require.Equal(t, up.level.Loc(), up.slow, "format 33: the slow level starts at the level")
	require.Equal(t, up.level.Loc(), up.slowHi)
	loc := binary.LittleEndian.AppendUint64(nil, math.Float64bits(up.level.Loc()))
	require.Equal(t, 1, bytes.Count(old, loc), "the level's bytes, once")
	bad := bytes.Replace(old, loc, binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())), 1)
	up = NewAuto(DefaultAutoConfig())
	require.NoError(t, up.UnmarshalBinary(bad))
	require.Zero(t, up.slow)
	again, err := up.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, NewAuto(DefaultAutoConfig()).UnmarshalBinary(again), "its own snapshot")
}
