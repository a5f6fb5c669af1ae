package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// blipCounter is a week of a counter of rare events at 1-minute
// resolution: 0, and every few hours (a mean spacing drawn between 4
// and 12 hours) a blip of a few events for one sample, sometimes two.
func blipCounter(rng *rand.Rand, n int) []float64 {
	gap := 240 + rng.IntN(480)
	size := float64(1 + rng.IntN(20))
	xs := make([]float64, n)
	for next := rng.IntN(gap); next < n; next += gap/2 + rng.IntN(gap) {
		xs[next] = math.Max(1, math.Round(size*(0.7+0.6*rng.Float64())))
		if next+1 < n && rng.IntN(3) == 0 {
			xs[next+1] = math.Max(1, math.Round(size*(0.7+0.6*rng.Float64())))
		}
	}
	return xs
}

// alertRows runs a detector over xs (one sample a minute) and returns the
// rows on which an alert starts.
func alertRows(cfg AutoConfig, xs []float64) ([]int, *Auto) {
	d := NewAuto(cfg)
	var rows []int
	was := StateNormal
	for i, x := range xs {
		v := d.Observe(int64(i)*60_000, x)
		if v.Score >= cfg.Threshold && was != StateAnomalous {
			rows = append(rows, i)
		}
		was = v.State
	}
	return rows, d
}

// alerts counts the alert starts (alertRows) from row from on.
func alerts(t *testing.T, cfg AutoConfig, xs []float64, from int) (int, *Auto) {
	t.Helper()
	rows, d := alertRows(cfg, xs)
	pages := 0
	for _, i := range rows {
		if i >= from {
			pages++
		}
	}
	return pages, d
}

// restoreAt runs a detector over xs[:cut] and restores its snapshot into
// a new one; it returns both.
func restoreAt(t *testing.T, cfg AutoConfig, xs []float64, cut int) (first, restored *Auto) {
	t.Helper()
	first = NewAuto(cfg)
	for i := range cut {
		first.Observe(int64(i)*60_000, xs[i])
	}
	snap, err := first.MarshalBinary()
	require.NoError(t, err)
	restored = NewAuto(cfg)
	require.NoError(t, restored.UnmarshalBinary(snap))
	return first, restored
}

// requireResumes checks that restored, restored at cut, gives on xs[cut:]
// the verdicts of a detector that saw all of xs.
func requireResumes(t *testing.T, cfg AutoConfig, xs []float64, cut int, restored *Auto) {
	t.Helper()
	whole := NewAuto(cfg)
	for i, x := range xs {
		want := whole.Observe(int64(i)*60_000, x)
		if i >= cut {
			require.Equal(t, want, restored.Observe(int64(i)*60_000, x), "sample %d", i)
		}
	}
}

// On a counter that blips every few hours, the blips stop paging once a
// few have been seen; before departures, nearly every one paged.
func TestAutoDeparturesBlips(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	pages, blips := 0, 0
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		xs := blipCounter(rng, 7*perDay)
		// From day 3: the first blips are news.
		p, _ := alerts(t, cfg, xs, 2*perDay)
		pages += p
		for i := 2 * perDay; i < len(xs); i++ {
			if xs[i] > 0 && xs[i-1] == 0 {
				blips++
			}
		}
	}
	require.Greater(t, blips, 100, "blips drawn")
	require.LessOrEqual(t, pages, blips/10, "pages on days 3-7 of ten counters")
}

// An incident on such a counter still pages: a burst that lasts, and a
// second one like it (a single earlier departure proves nothing).
func TestAutoDeparturesIncidents(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		xs := blipCounter(rng, 8*perDay)
		peak := 0.0
		for _, x := range xs {
			peak = max(peak, x)
		}
		// Two bursts of 30 minutes at the largest blip's size, a day
		// apart, on days 6 and 7.
		for _, at := range []int{5*perDay + 600, 6*perDay + 600} {
			for i := at; i < at+30; i++ {
				xs[i] = peak
			}
		}
		d := NewAuto(cfg)
		paged := [2]bool{}
		for i, x := range xs {
			v := d.Observe(int64(i)*60_000, x)
			for k, at := range []int{5*perDay + 600, 6*perDay + 600} {
				if i >= at && i < at+30 && v.Score >= cfg.Threshold {
					paged[k] = true
				}
			}
		}
		require.True(t, paged[0], "seed %d: the first burst", seed)
		require.True(t, paged[1], "seed %d: the second burst", seed)
	}
}

// A gauge at a whole number that dips by one for a sample every few
// hours: the dips stop paging, and a snapshot taken in the middle of a
// departure restores it.
func TestAutoDeparturesGaugeSnapshot(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	rng := rand.New(rand.NewPCG(3, 9))
	xs := make([]float64, 5*perDay)
	dips := []int{}
	for i := range xs {
		xs[i] = 12
	}
	for next := 100; next < len(xs); next += 200 + rng.IntN(300) {
		xs[next] = 11
		dips = append(dips, next)
	}
	pages, whole := alerts(t, cfg, xs, perDay)
	require.Zero(t, pages, "dips paging after the first day")
	require.True(t, whole.dep.same >= 0.9, "the gauge repeats its value")

	// Cut right after a dip on day 3, while its departure is open.
	cut := 0
	for _, at := range dips {
		if at > 3*perDay {
			cut = at + 1
			break
		}
	}
	first, restored := restoreAt(t, cfg, xs, cut)
	require.True(t, first.dep.open, "a departure is under way at the cut")
	require.Equal(t, first.dep, restored.dep)
	requireResumes(t, cfg, xs, cut, restored)
}

// A metric is taken to sit on one value from its first samples: on a
// counter that blips about every 100 samples (as NAB's
// art_increase_spike_density), only the first blips page, not every
// blip until the share of repeats has been learnt.
func TestAutoDeparturesFromTheStart(t *testing.T) {
	// Gaps of 90 to 110 samples, never three alike in a row: evenly
	// spaced blips would be a scheduled job (see schedule).
	xs := make([]float64, 1000)
	for i, k := 30, 0; i < len(xs); i, k = i+[]int{90, 110, 97, 104}[k%4], k+1 {
		xs[i] = 20
	}
	pages, _ := alerts(t, DefaultAutoConfig(), xs, 0)
	require.LessOrEqual(t, pages, 3, "pages over 10 blips")
}

// On a metric that never repeats, the share of repeats must not end as
// a denormal number: their arithmetic is many times slower (auto's
// update went from 95 to 120 ns), and the share's decay, which rounds
// to nothing there, would leave it at the smallest denormal for good.
func TestAutoDeparturesShareStaysNormal(t *testing.T) {
	d := NewAuto(DefaultAutoConfig())
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 200_000 {
		d.Observe(int64(i)*60_000, 100+rng.NormFloat64())
	}
	require.Less(t, d.dep.same, 0.01, "the share of repeats on noise")
	require.True(t, d.dep.same == 0 || d.dep.same >= 0x1p-1022, "a denormal share: %g", d.dep.same)
}
