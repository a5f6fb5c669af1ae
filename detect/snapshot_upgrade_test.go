package detect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// upgradeSeries is the series of TestAutoSnapshotUpgrade: a daily cycle
// every 5 minutes, quiet for four days (upgradeCut samples), then a day
// with a spike and a two-hour rise.
const (
	upgradeStep = 300_000
	upgradeCut  = 4 * 288
)

func upgradeSeries() []float64 {
	rng := rand.New(rand.NewPCG(34, 33))
	xs := make([]float64, 5*288)
	for i := range xs {
		xs[i] = 100 + 20*math.Sin(2*math.Pi*float64(i)/288) + 2*rng.NormFloat64()
		switch k := i - upgradeCut; {
		case k == 60:
			xs[i] += 40
		case k >= 120 && k < 144:
			xs[i] *= 1.5
		}
	}
	return xs
}

// TestAutoSnapshotUpgrade: snapshots written by the releases before the
// current format (testdata/upgrade/auto-v33.snap, format 33, made at
// 8378d31, and auto-v34.snap, format 34, made at c16c192, each by auto
// over upgradeSeries' first four days) restore, and the detector judges
// the fifth day, its spike and its rise, exactly as one that ran through
// all five days with this release. An upgrade keeps what was learnt.
func TestAutoSnapshotUpgrade(t *testing.T) {
	for _, format := range []byte{33, 34} {
		old, err := os.ReadFile(fmt.Sprintf("testdata/upgrade/auto-v%d.snap", format))
		require.NoError(t, err)
		require.Equal(t, format, old[0], "the fixture's format")
		require.GreaterOrEqual(t, format, byte(snapshotOldest), "a format this release reads")
		xs := upgradeSeries()
		cfg := DefaultAutoConfig()
		ran := NewAuto(cfg)
		for i := range upgradeCut {
			ran.Observe(int64(i)*upgradeStep, xs[i])
		}
		require.False(t, ran.mem.on, "no alert within the day before the cut: nothing that format 33 could not keep")
		up := NewAuto(cfg)
		require.NoError(t, up.UnmarshalBinary(old), "format %d", format)
		require.Equal(t, ran.last, up.last, "format %d", format)
		alerts := 0
		for i := upgradeCut; i < len(xs); i++ {
			v := ran.Observe(int64(i)*upgradeStep, xs[i])
			require.Equal(t, v, up.Observe(int64(i)*upgradeStep, xs[i]), "format %d: row %d", format, i)
			if v.Score >= cfg.Threshold {
				alerts++
			}
		}
		require.Positive(t, alerts, "the fifth day alerts: the comparison judged an incident")
		snap, err := up.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, byte(snapshotVersion), snap[0], "written in the current format")
		// Made before frozen_runs, the snapshot was made with its
		// default: a detector with another one does not take it.
		other := cfg
		other.FrozenRuns = 0
		require.ErrorContains(t, NewAuto(other).UnmarshalBinary(old), "made before frozen_runs, with its default 4; this detector has 0", "format %d", format)
	}
}
