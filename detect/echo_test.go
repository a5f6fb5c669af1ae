package detect

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoNoEchoNextDay: at 15 s, a daily cycle at × 1.5 from 10:00 to
// 11:00 on its fourth day pages (a rule holds it as one page: rules,
// BenchmarkPagesAfterChange), and not again the next day in those hours, where the slices it rewrote took the normal value for a
// dip (see echo in linger.go); before, three seeds of three paged there.
// A different incident the next day in the same hour, × 0.5, still
// pages. A detector restored while the slices are kept judges the rest
// as the one that ran on.
func TestAutoNoEchoNextDay(t *testing.T) {
	const step, perDay = 15_000, 5760
	cfg := DefaultAutoConfig()
	at := func(day, hour int) int { return day*perDay + hour*perDay/24 }
	for seed := uint64(1); seed <= 3; seed++ {
		for _, next := range []float64{1, 0.5} {
			xs := cycle(seed, step, 6)
			for i := at(3, 10); i < at(3, 11); i++ {
				xs[i] *= 1.5
			}
			for i := at(4, 10); i < at(4, 11); i++ {
				xs[i] *= next
			}
			rows, _, _ := alertsOf(t, step, xs)
			var incident, nextDay []int
			for _, r := range rows {
				switch {
				case r >= at(3, 10) && r < at(3, 12):
					incident = append(incident, r)
				case r >= at(4, 9) && r < at(4, 12):
					nextDay = append(nextDay, r)
				}
			}
			require.NotEmpty(t, incident, "seed %d: no page for the incident", seed)
			if next == 1 {
				require.Empty(t, nextDay, "seed %d: the incident's echo the next day", seed)
			} else {
				require.NotEmpty(t, nextDay, "seed %d: no page for × 0.5 the next day", seed)
			}
		}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		// Restored on the next day at 08:00, with the slices kept.
		xs := cycle(seed, step, 6)
		for i := at(3, 10); i < at(3, 11); i++ {
			xs[i] *= 1.5
		}
		d := NewAuto(cfg)
		cut := at(4, 8)
		for i := range cut {
			d.Observe(int64(i)*step, xs[i])
		}
		require.NotNil(t, d.mem.prior, "seed %d: slices kept a day after the incident", seed)
		r := restoredAuto(t, d, cfg)
		for i := cut; i < len(xs); i++ {
			require.Equal(t, d.Observe(int64(i)*step, xs[i]), r.Observe(int64(i)*step, xs[i]), "seed %d: row %d", seed, i)
		}
		require.Nil(t, d.mem.prior, "seed %d: the kept slices freed a day on", seed)
	}
}
