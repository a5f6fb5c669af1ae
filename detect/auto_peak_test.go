package detect

import (
	"math/rand/v2"
	"testing"
)

// TestAutoPeakBounds checks the z bounds that let Observe skip the tail
// probability (setRunPeak) against the functions they stand in for: below
// peakZ a sample scores below the peak, below halfLo below half of it,
// above halfHi at least half of it, and each bound lies within 1/512 of
// score of where it crosses, so that the bounds skip work and nothing else.
// Peaks above 0.9 have no bounds (see setRunPeak).
func TestAutoPeakBounds(t *testing.T) {
	score := func(z float64) float64 { return scoreZ(z, 0, 0) }
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultAutoConfig()
	cfg.Threshold = 0.95 // bounds for every peak up to 0.9
	a := NewAuto(cfg)
	const band = 1.0 / 512
	tight := func(what string, s, z, target float64) {
		t.Helper()
		if got := score(z); got < target-band {
			t.Errorf("runPeak %v: %s %v scores %v, more than 1/512 below %v", s, what, z, got, target)
		}
	}
	checked := 0
	for i := range 20000 {
		s := float64(i+1) / 20001
		if i%2 == 1 {
			s = rng.Float64()
		}
		a.setRunPeak(s)
		if a.runPeak != s {
			t.Fatalf("runPeak %v, want %v", a.runPeak, s)
		}
		if a.peakZ > 0 {
			checked++
			for _, z := range []float64{a.peakZ, a.peakZ * rng.Float64()} {
				if got := score(z); got >= s {
					t.Fatalf("runPeak %v: z %v < peakZ %v scores %v, not below the peak", s, z, a.peakZ, got)
				}
			}
			tight("peakZ", s, a.peakZ, s)
		}
		if a.halfLo > 0 {
			if got := score(a.halfLo); got >= s/2 {
				t.Fatalf("runPeak %v: halfLo %v scores %v, not below half the peak", s, a.halfLo, got)
			}
			tight("halfLo", s, a.halfLo, s/2)
		}
		if a.halfHi > 0 {
			for _, z := range []float64{a.halfHi, a.halfHi + rng.ExpFloat64()} {
				if got := score(z); got < s/2 {
					t.Fatalf("runPeak %v: z %v > halfHi %v scores %v, below half the peak", s, z, a.halfHi, got)
				}
			}
			if got := score(a.halfHi); got > s/2+band {
				t.Errorf("runPeak %v: halfHi %v scores %v, more than 1/512 above half the peak", s, a.halfHi, got)
			}
		}
		if a.halfLo > a.halfHi || (a.peakZ > 0 && a.halfHi > a.peakZ) {
			t.Fatalf("runPeak %v: bounds out of order: halfLo %v, halfHi %v, peakZ %v", s, a.halfLo, a.halfHi, a.peakZ)
		}
	}
	if checked < 13000 {
		t.Fatalf("only %d of 20000 peaks had a positive peakZ", checked)
	}
	for _, s := range []float64{0, 0.95, 1} {
		a.setRunPeak(s)
		if a.peakZ != 0 {
			t.Fatalf("runPeak %v: peakZ %v, want 0 (no sample below it)", s, a.peakZ)
		}
	}
	// A peak at or above the threshold gets none either: a score below it
	// could still alert.
	b := NewAuto(DefaultAutoConfig())
	for _, s := range []float64{0.6, 0.7} {
		b.setRunPeak(s)
		if b.peakZ != 0 {
			t.Fatalf("runPeak %v at threshold 0.6: peakZ %v, want 0", s, b.peakZ)
		}
	}
}
