package detect

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// dailyCycle is days of 5-minute samples of a ±30 % daily cycle on a
// level of 100 that grows by growth per day, with noise (a share of the
// value).
func dailyCycle(seed uint64, days int, growth, noise float64) []float64 {
	const step = 5 * 60_000
	rng := rand.New(rand.NewPCG(seed, 3))
	xs := make([]float64, days*dayMs/step)
	for i := range xs {
		ts := int64(i) * step
		level := 100 * (1 + growth*float64(ts)/dayMs)
		xs[i] = level * (1 + 0.3*daySine(ts)) * (1 + noise*rng.NormFloat64())
	}
	return xs
}

// TestAutoRecordAtUsualHour: a daily peak that beats the record by a hair
// lies where that hour usually is and is not news, on a steady cycle and
// on one that grows 10 % a day (where the hour's own mean lags the trend
// and only the level plus the hour's offset from it keeps up); a surge at
// the same hour beats the record and the hour's usual value, and is.
func TestAutoRecordAtUsualHour(t *testing.T) {
	const step = 5 * 60_000
	perDay := dayMs / step
	cfg := DefaultAutoConfig()
	for _, tc := range []struct {
		name          string
		seed          uint64
		growth, noise float64
	}{
		{"steady", 2, 0, 0.02},
		{"growing", 1, 0.1, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := dailyCycle(tc.seed, 12, tc.growth, tc.noise)
			require.Less(t, maxScoreAt(cfg, xs, step, 4*perDay, len(xs)-1), cfg.Threshold, "records at the daily peak")

			peak := 10*perDay + perDay/4 // the cycle's peak on day 10
			for i := peak; i < peak+6; i++ {
				xs[i] *= 1.25
			}
			require.GreaterOrEqual(t, maxScoreAt(cfg, xs, step, peak, peak+6), cfg.Threshold, "a surge at the peak hour")
		})
	}
}

// TestOffsetLearnsAfterZeroSpread: a time-of-day offset that has only
// seen one value has no spread to clip by; when the value changes for
// good, the offset follows instead of clipping every change to nothing.
func TestOffsetLearnsAfterZeroSpread(t *testing.T) {
	day := NewEWMA(AlphaForHalfLife(20))
	var o offset
	for range 100 {
		day.Update(5)
		o.update(0, &day, 3)
	}
	require.Zero(t, o.vr)
	for range 200 {
		day.Update(10)
		o.update(5, &day, 3)
	}
	require.InDelta(t, 5, o.mean, 0.5)
}

// TestAutoTrendExpected: on a series rising steadily, an exponentially
// weighted level lags the trend by its lag × slope (here about 22, at a
// noise of 1). The expected value, from which surprise is measured, is
// where the trend puts the level now.
func TestAutoTrendExpected(t *testing.T) {
	for _, days := range []int{0, 24} { // the trend alone, and with time-of-day slices (no daily cycle)
		rng := rand.New(rand.NewPCG(5, 5))
		cfg := DefaultAutoConfig()
		cfg.DayBuckets = days
		d := NewAuto(cfg)
		trend := func(i int) float64 { return 100 + 0.1*float64(i) }
		for i := range 3000 {
			v := d.Observe(int64(i)*60_000, trend(i)+rng.NormFloat64())
			if i >= 2000 {
				require.InDelta(t, trend(i), v.Expected, 3, "day buckets %d, sample %d", days, i)
			}
		}
	}
}

// TestAutoRecordLowAtNight: on a strong daily cycle (business hours at
// 100, nights at 30) the level's spread is the cycle's, so a night-time
// outage to a fifth of the night's traffic, a record low, lies within
// 1.5 σ of the level. It is far below what the night usually has, and
// once the night's slice is known that is what judges it.
func TestAutoRecordLowAtNight(t *testing.T) {
	const step = 5 * 60_000
	perDay := dayMs / step
	rng := rand.New(rand.NewPCG(4, 4))
	xs := make([]float64, 10*perDay)
	for i := range xs {
		h := float64(i%perDay) / float64(perDay) * 24
		v := 30.0
		if h >= 8 && h < 20 {
			v = 100
		}
		xs[i] = v * (1 + 0.03*rng.NormFloat64())
	}
	cfg := DefaultAutoConfig()
	require.Less(t, maxScoreAt(cfg, xs, step, 2*perDay, len(xs)-1), cfg.Threshold, "the cycle alone")

	night := 8*perDay + perDay/8 // 03:00 on day 8
	for i := night; i < night+12; i++ {
		xs[i] *= 0.2
	}
	require.GreaterOrEqual(t, maxScoreAt(cfg, xs, step, night, night+12), cfg.Threshold, "an outage at night")
}

// TestAutoExpectedAtHour: on a strong daily cycle the verdict's expected
// value is this hour's usual value (its slice's mean), not the level's,
// and its band is the hour's: for an outage to 90 at 2 pm, "expected
// 297 (normal 186 to 409)" rather than the level's "expected 192
// (normal −254 to 639)".
func TestAutoExpectedAtHour(t *testing.T) {
	const step = 5 * 60_000
	perDay := dayMs / step
	rng := rand.New(rand.NewPCG(8, 8))
	lambda := func(i int) float64 {
		h := float64(i%perDay) / float64(perDay) * 24
		if h >= 8 && h < 20 {
			return 300
		}
		return 60
	}
	d := NewAuto(DefaultAutoConfig())
	for i := range 10 * perDay {
		x := lambda(i) + math.Sqrt(lambda(i))*rng.NormFloat64()
		if i == 9*perDay+14*perDay/24 { // 14:00 on day 9: an outage to 30 %
			x = 90
		}
		v := d.Observe(int64(i)*step, x)
		// Mid-hour, once the slices are known, within 15 % of the hour's
		// value (the level's 192 is 3.2 times the night's 60): the
		// expected value carries the day's offset and the week's, each a
		// few counts where one count's noise is 13 % of the night's.
		if i >= 2*perDay && i%(perDay/24) == perDay/48 {
			require.InDelta(t, lambda(i), v.Expected, 0.15*lambda(i), "sample %d", i)
		}
		if x == 90 {
			require.Less(t, x, v.Lower, "the outage lies below the hour's band")
			require.Equal(t, DirDown, v.Direction)
		}
	}
}

// TestAutoRecordsOnRise: on a series rising 2 % a day with 1 % Gaussian
// noise (1-minute samples, two weeks, ten seeds) a sample a little above
// the level beat the highest value only because the level had risen, and
// the record's bar was reset to its distance from the level; the next
// sample three spreads up set a record. The rise paged 131 times, the
// same noise without it 31. A record now has to lie further from the
// level than the highest value did, and the rise pages about as often
// as the noise alone (18 and 15; 23 and 29 before records needed more
// than noise's reach and the step likelihood dropped the way back from
// an outlier), while a sample six spreads above the rise on day 10
// still pages. On a positive series the distance kept is a ratio, since
// noise that grows with the level is the rule there (latencies, rates):
// a latency with 10 % lognormal noise rising 10 % a day pages 47 times
// with the distance kept as a difference, 35 as a ratio, 24 without the
// rise (73, 48 and 37 at first). The rise's excess over the noise alone
// stayed at 11 to 12 as the noise's own pages fell, so the bound is
// three quarters as many again as the noise alone: the difference fails
// it.
func TestAutoRecordsOnRise(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	pages := func(value func(i int, rng *rand.Rand) float64, spike int) (n int, spiked bool) {
		for seed := range uint64(10) {
			rng := rand.New(rand.NewPCG(seed, 5))
			d := NewAuto(cfg)
			for i := range 14 * perDay {
				x := value(i, rng)
				if i == spike {
					x += 60
				}
				v := d.Observe(int64(i)*60_000, x)
				if v.Score >= cfg.Threshold {
					n++
					spiked = spiked || i == spike
				}
			}
		}
		return n, spiked
	}
	gaussian := func(rise float64) func(int, *rand.Rand) float64 {
		return func(i int, rng *rand.Rand) float64 {
			return 1000 + rise*float64(i)/perDay + 10*rng.NormFloat64()
		}
	}
	lognormal := func(rise float64) func(int, *rand.Rand) float64 {
		return func(i int, rng *rand.Rand) float64 {
			return 100 * (1 + rise*float64(i)/perDay) * math.Exp(0.1*rng.NormFloat64())
		}
	}
	// Three quarters as many again as the noise alone leaves room for
	// chance.
	flat, _ := pages(gaussian(0), -1)
	rise, _ := pages(gaussian(20), -1)
	require.LessOrEqual(t, 4*rise, 7*flat, "pages on the rise (%d) and on the noise alone (%d)", rise, flat)
	_, spiked := pages(gaussian(20), 10*perDay+600)
	require.True(t, spiked, "the spike on the rise")
	flat, _ = pages(lognormal(0), -1)
	rise, _ = pages(lognormal(0.1), -1)
	require.LessOrEqual(t, 4*rise, 7*flat, "pages on the lognormal rise (%d) and on its noise alone (%d)", rise, flat)
}

// TestAutoRecordsOnNoise: in independent samples the nth is a record with
// probability 1/n, and every record paged: over two weeks of 1-minute
// noise, 60 pages came from records in 20 series of Gaussian noise, 69 in
// Poisson counts and 54 in 10 % lognormal noise. A record beyond the
// normal band now counts only where noise at its spread seldom reaches
// (noiseReach), and they page 25, 38 and 32 times. A record beyond that
// still pages, and one within it, beating the highest value by a hair,
// does not.
func TestAutoRecordsOnNoise(t *testing.T) {
	const perDay = 1440
	cfg := DefaultAutoConfig()
	off := cfg
	off.ExtremeTolerance = -1 // no records
	for _, kind := range plainNoises {
		records := 0
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 11))
			xs := make([]float64, 14*perDay)
			for i := range xs {
				xs[i] = kind.draw(rng)
			}
			records += pagesAt(cfg, xs, 60_000, 0, len(xs)-1) - pagesAt(off, xs, 60_000, 0, len(xs)-1)
		}
		require.LessOrEqual(t, records, 45, "%s noise: pages from records", kind.name)
	}

	rng := rand.New(rand.NewPCG(1, 11))
	xs := make([]float64, 4*perDay)
	for i := range xs {
		xs[i] = 100 + rng.NormFloat64()
	}
	k := 3 * perDay
	hi := slices.Max(xs[:k])
	xs[k] = hi + 0.3 // a record by a hair (the tolerance is 2 % of a range of some 8)
	require.Less(t, xs[k]-100, noiseReach(uint64(k)), "the record lies within noise's reach")
	require.Zero(t, pagesAt(cfg, xs, 60_000, k, k), "a record noise reaches")
	xs[k] = 100 + 4.6 // beyond noise's reach (3.9 here), within the spike path's 5
	require.Equal(t, 1, pagesAt(cfg, xs, 60_000, k, k), "a record beyond noise's reach")
	require.Zero(t, pagesAt(off, xs, 60_000, k, k), "and it pages as a record")
}

// plainNoises are stationary noises a new deployment sees: Gaussian
// noise, Poisson counts of 20 and a latency with 10 % lognormal noise.
var plainNoises = []struct {
	name string
	draw func(rng *rand.Rand) float64
}{
	{"gaussian", func(rng *rand.Rand) float64 { return 100 + rng.NormFloat64() }},
	{"poisson", func(rng *rand.Rand) float64 { return poissonCount(rng, 20) }},
	{"lognormal", func(rng *rand.Rand) float64 { return 100 * math.Exp(0.1*rng.NormFloat64()) }},
}

// poissonCount draws a Poisson count with mean lambda (Knuth's method,
// for small means).
func poissonCount(rng *rand.Rand, lambda float64) float64 {
	l, k, p := math.Exp(-lambda), 0.0, rng.Float64()
	for p >= l {
		p *= rng.Float64()
		k++
	}
	return k
}

// TestAutoGlitchKeepsRecords: one wild sample (a misread counter, 1,000
// times the series) pages, but does not become the bar that every later
// record must beat: on the next sample, back within the old bar, the
// old bar is restored (see glitch), and a new high two days later is
// still a record. A wild value that holds for two samples is a new bar.
func TestAutoGlitchKeepsRecords(t *testing.T) {
	const perDay, minuteMs = 1440, 60_000
	cfg := DefaultAutoConfig()
	draw := func(seed uint64, wild ...int) []float64 {
		rng := rand.New(rand.NewPCG(seed, 11))
		xs := make([]float64, 6*perDay)
		for i := range xs {
			xs[i] = 50 + 10*math.Sin(2*math.Pi*float64(i)/perDay) + rng.NormFloat64()
		}
		for _, i := range wild {
			xs[i] = 5e4
		}
		return xs
	}
	glitch, high := 3*perDay+100, 5*perDay+perDay/4 // the high at the day's peak
	for seed := range uint64(5) {
		xs := draw(seed, glitch)
		for i := high; i < high+10; i++ {
			xs[i] = 80
		}
		d := NewAuto(cfg)
		var before float64
		for i, x := range xs[:high+10] {
			if i == glitch {
				before = d.hi
			}
			v := d.Observe(int64(i)*minuteMs, x)
			switch i {
			case glitch:
				require.GreaterOrEqual(t, v.Score, cfg.Threshold, "seed %d: the wild value pages", seed)
			case glitch + 1:
				require.Equal(t, before, d.hi, "seed %d: the bar before the wild value", seed)
			case high:
				require.Equal(t, EvidenceRecord, v.Evidence, "seed %d: the new high", seed)
				require.GreaterOrEqual(t, v.Score, cfg.Threshold, "seed %d: the new high", seed)
			}
		}

		d = NewAuto(cfg)
		for i, x := range draw(seed, glitch, glitch+1)[:glitch+3] {
			d.Observe(int64(i)*minuteMs, x)
		}
		require.Equal(t, 5e4, d.hi, "seed %d: a wild value that held is the bar", seed)
	}
}

// TestAutoDropToZeroKeepsRecords: a gauge that keeps well away from 0
// reads 0 for a few samples (a restart, or a gap written as 0). The drop
// pages, but once the series is back the bar is the lowest value before
// it, so a later low that no path but the records would call pages as a
// record. Kept at 0, the bar made every later low no record (NAB lost
// two windows: docs/detectors.md, "A drop to 0"). The zeros after the
// first are held, not learnt, for a day at most. A series that lives
// near 0 keeps its zeros as its bar.
func TestAutoDropToZeroKeepsRecords(t *testing.T) {
	const perDay, minuteMs = 1440, 60_000
	cfg := DefaultAutoConfig()
	draw := func(seed uint64) []float64 {
		rng := rand.New(rand.NewPCG(seed, 13))
		xs := make([]float64, 6*perDay)
		for i := range xs {
			xs[i] = 50 + 10*math.Sin(2*math.Pi*float64(i)/perDay) + rng.NormFloat64()
		}
		return xs
	}
	drop, low := 3*perDay+100, 5*perDay+3*perDay/4 // the low at the day's trough
	for _, zeros := range []int{1, 3, 30} {
		for seed := range uint64(5) {
			xs := draw(seed)
			for i := drop; i < drop+zeros; i++ {
				xs[i] = 0
			}
			for i := low; i < low+10; i++ {
				xs[i] = 20
			}
			d := NewAuto(cfg)
			var before float64
			for i, x := range xs[:low+10] {
				if i == drop {
					before = d.lo
				}
				v := d.Observe(int64(i)*minuteMs, x)
				switch i {
				case drop:
					require.GreaterOrEqual(t, v.Score, cfg.Threshold, "%d zeros, seed %d: the drop pages", zeros, seed)
					require.Equal(t, EvidenceZero, v.Evidence, "%d zeros, seed %d: the drop is named", zeros, seed)
				case drop + zeros - 1:
					require.Equal(t, 0.0, d.lo, "%d zeros, seed %d: at 0, 0 is the lowest", zeros, seed)
					require.Equal(t, StateAnomalous, v.State, "%d zeros, seed %d: the alert lasts while the zeros do", zeros, seed)
				case drop + zeros:
					require.Equal(t, before, d.lo, "%d zeros, seed %d: back, the bar before the drop", zeros, seed)
				case low:
					require.Equal(t, EvidenceRecord, v.Evidence, "%d zeros, seed %d: the new low", zeros, seed)
					require.GreaterOrEqual(t, v.Score, cfg.Threshold, "%d zeros, seed %d: the new low", zeros, seed)
				}
			}
		}
	}

	// Restored from a snapshot taken while the zeros are held, a
	// detector judges the rest as the one that ran on.
	xs := draw(7)
	for i := drop; i < drop+30; i++ {
		xs[i] = 0
	}
	d, e := NewAuto(cfg), NewAuto(cfg)
	for i, x := range xs[:drop+10] {
		d.Observe(int64(i)*minuteMs, x)
	}
	require.NotZero(t, d.wild.held)
	snap, err := d.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, e.UnmarshalBinary(snap))
	for i := drop + 10; i < len(xs); i++ {
		require.Equal(t, d.Observe(int64(i)*minuteMs, xs[i]), e.Observe(int64(i)*minuteMs, xs[i]), "row %d", i)
	}

	// A series at 0 for more than a day is at 0: the drop stands as the
	// bar once the day is over.
	xs = draw(8)
	for i := drop; i < drop+perDay+60; i++ {
		xs[i] = 0
	}
	d = NewAuto(cfg)
	for i, x := range xs[:drop+perDay+120] {
		d.Observe(int64(i)*minuteMs, x)
		if i == drop+perDay-2 {
			require.Equal(t, int8(-1), d.wild.side, "held for most of a day")
		}
	}
	require.Equal(t, int8(0), d.wild.side, "a day at 0 is no glitch")
	require.Equal(t, 0.0, d.lo, "a day at 0 is the lowest")

	// A series whose lowest value lies within half its range of 0 (a
	// count of 1 to 10 a minute) keeps a first 0 as its bar: there a 0
	// is the next low, not a restart.
	rng := rand.New(rand.NewPCG(1, 13))
	d = NewAuto(cfg)
	at := 3 * perDay
	for i := range at + 10 {
		x := float64(1 + rng.IntN(10))
		if i == at {
			require.True(t, d.recordsCount(int64(i)*minuteMs), "records count at the 0")
			require.Equal(t, 1.0, d.lo)
			x = 0
		}
		d.Observe(int64(i)*minuteMs, x)
	}
	require.Equal(t, 0.0, d.lo, "a series near 0 keeps 0 as its lowest")
}

// TestAutoNightlyZeros: a series far from 0 that reads 0 for half an
// hour every night from its fourth day on (a maintenance window) reads 0
// as part of its life. Only the first drop is judged as a restart's; the
// next nights' are learnt, and from the seventh night nothing pages.
// Held and put back every night, the zeros paged every night: 157
// alerts over ten seeds' 21 days (zeroGap).
func TestAutoNightlyZeros(t *testing.T) {
	const perDay, step = 288, 300_000
	late := 0
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 5))
		xs := make([]float64, 21*perDay)
		for i := range xs {
			xs[i] = 100 + 20*math.Sin(2*math.Pi*float64(i)/perDay) + 3*rng.NormFloat64()
			if i/perDay >= 3 && i%perDay >= 24 && i%perDay < 30 { // 02:00 to 02:30
				xs[i] = 0
			}
		}
		d := NewAuto(DefaultAutoConfig())
		var prev Verdict
		for i, x := range xs {
			v := d.Observe(int64(i)*step, x)
			if i == 3*perDay+24 {
				require.Equal(t, EvidenceZero, v.Evidence, "seed %d: the first night's drop", seed)
			}
			if i == 4*perDay+24 {
				require.NotEqual(t, EvidenceZero, v.Evidence, "seed %d: the second night's drop is the series' own", seed)
			}
			if i >= 9*perDay && v.Score >= d.cfg.Threshold && prev.State != StateAnomalous {
				late++
			}
			prev = v
		}
	}
	require.Zero(t, late, "alerts from the tenth day on, ten seeds")
}
