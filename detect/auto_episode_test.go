package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAutoEpisode: an outage that comes in waves is one episode. The
// first wave alerts and opens it; in the lulls between waves State turns
// normal, but Episode stays true and the next wave raises no new alert
// (its first anomalous sample scores 0); the episode ends only once the
// series has been calm for Calm samples after the last wave, and the
// next outage opens a new one.
func TestAutoEpisode(t *testing.T) {
	cfg := DefaultAutoConfig()
	a := NewAuto(cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	const (
		start = 600 // the first wave
		waves = 3
		wave  = 3  // samples at the outage's level
		lull  = 10 // samples back to normal between waves, fewer than Calm
		later = 1000
	)
	inWave := func(i int) bool {
		k := i - start
		return k >= 0 && k < waves*(wave+lull) && k%(wave+lull) < wave
	}
	var (
		alerts, lullsNormal, reentries int
		lastAnomalous, firstEnd        = -1, -1
	)
	prev := StateNormal
	prevEp, laterAlert := false, false
	for i := range later + 100 {
		x := 100 + 5*rng.NormFloat64()
		if inWave(i) {
			x = 400
		}
		if i >= later && i < later+60 { // a later outage: a lasting shift
			x = 250
		}
		v := a.Observe(int64(i)*60_000, x)
		switch {
		case i < start:
			require.False(t, v.Episode, "row %d: no alert yet, no episode", i)
		case i < later:
			if v.Score >= cfg.Threshold && prev != StateAnomalous { // an alert; within a run the score is the sample's own
				alerts++
				require.Equal(t, start, i, "row %d: a new alert within the episode", i)
			}
			if v.State == StateAnomalous {
				lastAnomalous = i
				if prev != StateAnomalous && i > start {
					reentries++
					require.Zero(t, v.Score, "row %d: a wave within the episode is no new alert", i)
					require.True(t, v.Episode, "row %d", i)
				}
			}
			if v.State == StateNormal && lastAnomalous >= 0 && i < start+(waves-1)*(wave+lull) {
				lullsNormal++
				require.True(t, v.Episode, "row %d: a lull between waves ended the episode", i)
			}
			if !v.Episode && firstEnd < 0 && lastAnomalous >= 0 {
				firstEnd = i
			}
			if firstEnd >= 0 {
				require.False(t, v.Episode, "row %d: the episode ended at row %d and opened again without an alert", i, firstEnd)
			}
		default:
			if v.Score >= cfg.Threshold && !laterAlert {
				laterAlert = true
				require.False(t, prevEp, "row %d: the later outage alerts outside the first episode", i)
				require.True(t, v.Episode, "row %d: and opens a new episode", i)
			}
		}
		prevEp = v.Episode
		prev = v.State
	}
	require.Equal(t, 1, alerts)
	require.Positive(t, lullsNormal, "State never turned normal in a lull: the test shows nothing")
	require.Positive(t, reentries, "no wave turned the state anomalous again")
	require.Positive(t, firstEnd, "the episode never ended")
	require.Equal(t, lastAnomalous+cfg.Calm, firstEnd, "the episode ends after Calm calm samples")
	require.True(t, laterAlert, "the later outage raised no alert")
}
