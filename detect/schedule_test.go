package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// jobSeries is a busy metric (100, noise 3) at 1-minute resolution on
// which a job raises the value by 60 for width minutes every period
// minutes.
func jobSeries(rng *rand.Rand, n, period, width int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 100 + 3*rng.NormFloat64()
		if i%period < width {
			xs[i] += 60
		}
	}
	return xs
}

// A job every four or six hours, and a nightly one, stop paging once
// they have run on schedule four times.
func TestAutoScheduledJobs(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	for _, job := range []struct{ period, width, days, from, most int }{
		{240, 3, 5, 2, 3},   // 18 runs a series after day 2; 69 pages over 5 series without schedule
		{360, 10, 5, 2, 3},  // 12 runs
		{1440, 10, 8, 4, 2}, // 4 runs
	} {
		pages, runs := 0, 0
		for seed := range uint64(5) {
			rng := rand.New(rand.NewPCG(seed, 3))
			xs := jobSeries(rng, job.days*perDay, job.period, job.width)
			p, _ := alerts(t, cfg, xs, job.from*perDay)
			pages += p
			runs += (job.days - job.from) * perDay / job.period
		}
		t.Logf("a job every %d minutes for %d: %d pages for %d runs", job.period, job.width, pages, runs)
		require.LessOrEqual(t, pages, job.most*5, "every %d minutes for %d: %d pages for %d runs", job.period, job.width, pages, runs)
	}
}

// An incident between a job's runs still pages: only an excursion that
// begins on the schedule is muted.
func TestAutoScheduledJobsIncident(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 4))
		xs := jobSeries(rng, 4*perDay, 240, 10)
		at := 3*perDay + 100 // 100 minutes after a run, 140 before the next
		for i := at; i < at+20; i++ {
			xs[i] += 40
		}
		d := NewAuto(cfg)
		paged := false
		for i, x := range xs {
			if v := d.Observe(int64(i)*60_000, x); i >= at && i < at+20 && v.Score >= cfg.Threshold {
				paged = true
			}
		}
		require.True(t, paged, "seed %d: the incident between runs", seed)
	}
}

// A snapshot taken during a scheduled job restores it, muted.
func TestAutoScheduleSnapshot(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	rng := rand.New(rand.NewPCG(9, 3))
	xs := jobSeries(rng, 3*perDay, 240, 10)
	cut := 2*perDay + 2 // in a run on day 3
	first, restored := restoreAt(t, cfg, xs, cut)
	require.True(t, first.sch.open && first.sch.muted, "a scheduled job under way at the cut")
	require.Equal(t, first.sch, restored.sch)
	requireResumes(t, cfg, xs, cut, restored)
}

// A memory sawtooth that creeps up and drops back at each restart, every
// two to five days: from the fourth restart on, the restarts are on
// schedule and do not page, although on a 1-minute series the noise's
// own excursions between two restarts outnumber the ring's places.
func TestAutoScheduledRestarts(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	late, restarts := 0, 0
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 5))
		period := (2 + 3*rng.Float64()) * perDay
		xs := make([]float64, 22*perDay)
		for i := range xs {
			ph := math.Mod(float64(i), period) / period
			xs[i] = math.Round(100*(40+30*ph+0.2*rng.NormFloat64())) / 100
		}
		// Rows within 3 samples of a restart, from the fifth restart on.
		near := func(i int) bool {
			k := int(float64(i) / period) // the restarts before i
			return k >= 4 && float64(i)-float64(k)*period < 3
		}
		rows, _ := alertRows(cfg, xs)
		for _, i := range rows {
			if near(i) {
				late++
			}
		}
		restarts += max(0, int(float64(len(xs)-1)/period)-3)
	}
	t.Logf("%d pages at %d restarts after the fourth", late, restarts)
	require.Positive(t, restarts)
	require.Zero(t, late, "restarts on schedule page")
}

// A full ring whose oldest start would alert drops the oldest start that
// would not, keeps the rest in time order, and takes the new one last.
func TestScheduleKeepsWhatWouldAlert(t *testing.T) {
	var s schedule
	for i := range scheduleMemory {
		s.begin(int64(i + 1))
		if i%4 == 0 { // starts 1, 5, 9, ... would alert
			s.check(1, 1000)
		}
	}
	s.begin(100)
	var got []int64
	for k := 1; k <= scheduleMemory; k++ {
		got = append(got, s.at[(int(s.slot)+k)%scheduleMemory])
	}
	want := []int64{1}
	for i := int64(3); i <= scheduleMemory; i++ {
		want = append(want, i)
	}
	want = append(want, 100)
	require.Equal(t, want, got, "start 2, the oldest that would not alert, goes")
	require.NotZero(t, s.alerted&(1<<((s.slot+1)%scheduleMemory)), "start 1 still marked")
}
