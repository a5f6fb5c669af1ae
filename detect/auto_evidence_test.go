package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// evidenceAt feeds xs at step and returns the evidence of the first
// verdict at or after from that scores the threshold or more.
func evidenceAt(t *testing.T, xs []float64, step int64, from int) Evidence {
	t.Helper()
	cfg := DefaultAutoConfig()
	d := NewAuto(cfg)
	for i, x := range xs {
		v := d.Observe(int64(i)*step, x)
		if v.Score > 0 && v.Score >= cfg.Threshold/2 {
			require.NotEqual(t, EvidenceNone, v.Evidence, "sample %d scores %.3f without evidence", i, v.Score)
		}
		if v.Score == 0 {
			require.Equal(t, EvidenceNone, v.Evidence, "sample %d scores 0", i)
		}
		if i >= from && v.Score >= cfg.Threshold {
			return v.Evidence
		}
	}
	t.Fatalf("no alert from sample %d", from)
	return EvidenceNone
}

// TestAutoEvidence: each of auto's judgements names itself in the
// verdict, so that an alert's explanation can say why a value inside the
// normal band is unusual.
func TestAutoEvidence(t *testing.T) {
	const minute = 60_000
	noise := func(n int, seed uint64) []float64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 100 + rng.NormFloat64()
		}
		return xs
	}

	// Beyond the highest value seen.
	xs := noise(3000, 1)
	xs[2500] = 130
	require.Equal(t, EvidenceRecord, evidenceAt(t, xs, minute, 2500), "a record")

	// A spike below a record set early on.
	xs = spikeSeries(3000, 2500)
	require.Equal(t, EvidenceSpike, evidenceAt(t, xs, minute, 2500), "a spike that sets no record")

	// A random walk whose steps turn four times larger: the level
	// wanders far, so the samples lie no further from it than usual, but
	// each change is several of the usual changes' spreads.
	rng := rand.New(rand.NewPCG(3, 1))
	xs = make([]float64, 3000)
	x := 1000.0
	for i := range xs {
		sd := 1.0
		if i >= 2500 {
			sd = 4
		}
		x += sd * rng.NormFloat64()
		xs[i] = x
	}
	require.Equal(t, EvidenceChanges, evidenceAt(t, xs, minute, 2500), "larger steps")

	// A lasting shift of 3 σ within the range: the level's likelihood.
	xs = noise(3000, 4)
	xs[100], xs[101] = 120, 80
	for i := 2500; i < len(xs); i++ {
		xs[i] += 3
	}
	require.Equal(t, EvidenceLevel, evidenceAt(t, xs, minute, 2500), "a lasting shift")

	// Hourly counts with a strong daily cycle, at 60 % for three hours of
	// a night (as in TestAutoCountsNightOutage): unusual for the hour.
	xs = nightCycle()
	at := 9*24 + 2
	for i := at; i < at+3; i++ {
		xs[i] *= 0.6
	}
	require.Equal(t, EvidenceTimeOfDay, evidenceAt(t, xs, 3600_000, at), "a night outage")
}
