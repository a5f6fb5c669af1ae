package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// noisier is a daily cycle sampled every minute whose noise triples at
// the start of its fourth day, for hours hours (for good when 0).
func noisier(seed uint64, hours int) (xs []float64, change, until int) {
	const perDay = 1440
	rng := rand.New(rand.NewPCG(seed, 7))
	change, until = 3*perDay, 6*perDay
	if hours > 0 {
		until = change + hours*60
	}
	xs = make([]float64, 5*perDay+perDay/2)
	for i := range xs {
		sd := 0.03
		if i >= change && i < until {
			sd = 0.09
		}
		xs[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/perDay)) * (1 + sd*rng.NormFloat64())
	}
	return xs, change, until
}

// TestAutoLingering: Verdict.Lingering holds while the series stays away
// from the normal it had at its episode's alert. Noise tripled for good
// alerts, and from that alert on the episode or the lingering holds at
// every sample for a day, when the memory ends; the rule holds its alert
// on them (rules, TestAutoLastingShiftIsOneIncident). Tripled for an
// hour, the lingering ends within its window of the hour's end. Nothing
// lingers before an alert.
func TestAutoLingering(t *testing.T) {
	const step, perDay = 60_000, 1440
	cfg := DefaultAutoConfig()
	run := func(hours int) (alert, lastLinger int, held, samples int) {
		xs, change, _ := noisier(1, hours)
		d := NewAuto(cfg)
		alert, lastLinger = -1, -1
		for i, x := range xs {
			v := d.Observe(int64(i)*step, x)
			if v.Lingering {
				require.GreaterOrEqual(t, alert, 0, "row %d lingers before any alert", i)
				lastLinger = i
			}
			if alert < 0 && i >= change && v.Score >= cfg.Threshold {
				alert = i
			}
			if alert >= 0 && i < alert+perDay {
				samples++
				if v.Episode || v.Lingering {
					held++
				}
			}
		}
		return alert, lastLinger, held, samples
	}
	_, change, _ := noisier(1, 0)
	alert, last, held, samples := run(0)
	require.GreaterOrEqual(t, alert, change, "no alert on the tripled noise")
	require.Less(t, alert, change+60, "alerted late")
	require.Equal(t, samples, held, "for good: held at %d of the day's %d samples from the alert", held, samples)
	require.Less(t, last, alert+perDay, "for good: the memory ends a day after the alert")

	_, _, until := noisier(1, 1)
	alert, last, _, _ = run(1)
	require.GreaterOrEqual(t, alert, change, "an hour: no alert")
	require.Greater(t, last, until-30, "an hour: it lingered while the noise lasted")
	require.Less(t, last, until+max(cfg.Calm, 1), "an hour: lingering %d samples after the noise ended", last-until)
}

// TestAutoLingerSnapshot: the normal remembered at an alert is kept in
// snapshots; a detector restored while the series lingers judges the
// rest as the one that ran on.
func TestAutoLingerSnapshot(t *testing.T) {
	const step = 60_000
	cfg := DefaultAutoConfig()
	xs, change, _ := noisier(2, 0)
	d := NewAuto(cfg)
	cut := -1
	for i, x := range xs {
		if d.Observe(int64(i)*step, x).Lingering && i > change+120 && !d.Observe(int64(i+1)*step, xs[i+1]).Episode {
			cut = i + 2
			break
		}
	}
	require.Positive(t, cut, "never lingering outside an episode")
	require.True(t, d.mem.on)
	r := restoredAuto(t, d, cfg)
	require.Equal(t, d.last, r.last)
	ended := false
	for i := cut; i < len(xs); i++ {
		require.Equal(t, d.Observe(int64(i)*step, xs[i]), r.Observe(int64(i)*step, xs[i]), "row %d", i)
		ended = ended || !d.mem.on
	}
	require.True(t, ended, "the memory ended")
}
