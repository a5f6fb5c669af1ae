package detect

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// spikyMove is a 5-minute gauge at 6 (noise 0.3) that moves for good to
// 14.5 (noise 0.72) on day 10, as NAB's rds_cpu_utilization_cc0c53
// does, with one-sample spikes of 8 to 9 of the noise's spreads: every
// `every` samples from day 2 on, or, where every is 0, six before the
// move (a day and a half apart) and none after it. It returns the
// series, the sample of the move and the sample of one more spike
// (the incident) on day 13, two days after the move became a regime.
func spikyMove(seed uint64, every int) (xs []float64, change, incident int) {
	const perDay = 288
	rng := rand.New(rand.NewPCG(seed, 43))
	xs = make([]float64, 15*perDay)
	change = 10*perDay + rng.IntN(perDay)
	incident = 13*perDay + rng.IntN(perDay)
	spike := make([]bool, len(xs))
	if every > 0 {
		for i := 2*perDay + rng.IntN(every); i < len(xs); i += every {
			spike[i] = true
		}
	} else {
		for k := range 6 {
			spike[2*perDay+k*perDay*3/2+rng.IntN(perDay/2)] = true
		}
	}
	spike[incident] = true
	for i := range xs {
		level, noise := 6.0, 0.3
		if i >= change {
			level, noise = 14.5, 0.72
		}
		xs[i] = level + noise*rng.NormFloat64()
		if spike[i] {
			xs[i] = level + (8+rng.Float64())*noise
		}
	}
	return xs, change, incident
}

// TestAutoNewRegimeCountsItsOwnSpikes: spikes that came often enough
// at the old level to be routine (six in eight days, where SpikeRate
// allows 1 + 0.001 of the samples) say nothing of the new regime, whose
// spike path counts from its run's first sample: a spike two days after
// the move pages on every seed. Counted from the warm-up as before, it
// paged on 1 of 10.
func TestAutoNewRegimeCountsItsOwnSpikes(t *testing.T) {
	const step = 300_000
	cfg := DefaultAutoConfig()
	caught, routine := 0, 0
	for seed := range uint64(10) {
		xs, change, incident := spikyMove(seed, 0)
		d := NewAuto(cfg)
		paged := false
		for i, x := range xs {
			v := d.Observe(int64(i)*step, x)
			if i == change-1 && d.routine(d.crossings) {
				routine++
			}
			if i >= incident && i < incident+3 && v.Score >= cfg.Threshold {
				paged = true
			}
		}
		require.Equal(t, 1, d.reg.begun, "seed %d: the move is a new regime", seed)
		if paged {
			caught++
		}
	}
	t.Logf("spikes routine before the move on %d of 10 seeds; a spike two days after it paged on %d", routine, caught)
	require.GreaterOrEqual(t, routine, 8, "the spikes before the move are routine")
	require.GreaterOrEqual(t, caught, 9)
}

// TestAutoNewRegimeKeepsRoutineSpikes: where the spikes go on, every 50
// samples before the move and after it, they stay routine in the new
// regime: from the regime on no spike pages on the seeds whose spikes
// were routine before it. The time-of-day slices keep their own counts
// through a regime (a regime moves the level, not the day's schedule),
// and the series' count restarts with the run's crossings. With the
// slices' counts restarted too, 4 spikes paged.
func TestAutoNewRegimeKeepsRoutineSpikes(t *testing.T) {
	const step = 300_000
	cfg := DefaultAutoConfig()
	pages, routine := 0, 0
	for seed := range uint64(10) {
		xs, change, _ := spikyMove(seed, 50)
		d := NewAuto(cfg)
		n := 0
		before := false
		for i, x := range xs {
			v := d.Observe(int64(i)*step, x)
			if i == change-1 {
				before = d.routine(d.crossings)
			}
			if d.reg.begun > 0 && v.Score >= cfg.Threshold && v.Evidence == EvidenceSpike {
				n++
			}
		}
		require.Equal(t, 1, d.reg.begun, "seed %d: the move is a new regime", seed)
		if before {
			routine++
			pages += n
		}
	}
	t.Logf("spikes routine before the move on %d of 10 seeds; on those, %d spikes paged from the new regime on", routine, pages)
	require.GreaterOrEqual(t, routine, 8, "the spikes before the move are routine")
	require.Zero(t, pages)
}

// TestAutoRegimeCountsRestored: a run under way written by format 42,
// which kept no counts of the spike path at the run's start, and read
// back: the crossings and jumps from the restore on are the run's own,
// and at the regime the rate counts from the run's first sample. As
// written by format 43, the counts at the run's start come back as
// they were.
func TestAutoRegimeCountsRestored(t *testing.T) {
	const step = 300_000
	xs, change, _ := spikyMove(1, 0)
	d := NewAuto(DefaultAutoConfig())
	for i, x := range xs[:change+50] {
		d.Observe(int64(i)*step, x)
	}
	require.NotZero(t, d.reg.side, "a run under way")
	d.crossings, d.jumps = 7, 3
	d.reg.before.crossings, d.reg.before.jumps = 5, 2
	for _, tc := range []struct {
		version          byte
		crossings, jumps uint64
	}{{42, 7, 3}, {43, 5, 2}} {
		w := &encoder{}
		d.reg.encode(w)
		if tc.version < 43 {
			w.b = w.b[:len(w.b)-2*8] // format 42's estimates end before the counts
		}
		r := NewAuto(DefaultAutoConfig())
		r.n, r.crossings, r.jumps = d.n, d.crossings, d.jumps
		dec := &decoder{b: w.b, version: tc.version}
		r.decodeRegime(dec)
		require.NoError(t, dec.finish(), "format %d", tc.version)
		require.Equal(t, tc.crossings, r.reg.before.crossings, "format %d", tc.version)
		require.Equal(t, tc.jumps, r.reg.before.jumps, "format %d", tc.version)
	}
	// Counts at the run's start beyond those now: a corrupt snapshot.
	d.reg.before.crossings = 8
	w := &encoder{}
	d.reg.encode(w)
	r := NewAuto(DefaultAutoConfig())
	r.n, r.crossings, r.jumps = d.n, d.crossings, d.jumps
	dec := &decoder{b: w.b, version: snapshotVersion}
	r.decodeRegime(dec)
	require.ErrorContains(t, dec.finish(), "regime run begun with 8 crossings and 2 jumps, at 7 and 3 now")
}
