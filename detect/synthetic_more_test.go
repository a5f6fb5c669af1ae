package detect_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/detect/nab"
)

// More families, for what the first four leave out: long 1-minute series
// whose incidents are single-point spikes and short dips, crash rates
// (small ratios of two counts), series with daily and weekly cycles that
// are mostly all-normal, latencies that drift slowly, series with gaps,
// and a persisting shift followed by a second incident soon after.
func init() { families = append(families, moreFamilies...) }

// weekly is 1 on weekdays and w at weekends (UTC).
func weekly(ts int64, w float64) float64 {
	// t0 is a Sunday; day 0 of the week is Sunday.
	d := ((ts-t0)/day%7 + 7) % 7
	if d == 0 || d == 6 {
		return w
	}
	return 1
}

var moreFamilies = []family{
	{
		// Long 1-minute request rates (10k-40k rows) with a daily cycle;
		// incidents are point spikes of one to three samples and short
		// dips (a few minutes at a fraction), as labelled in real sets.
		name:   "minute_spikes",
		behind: "false alarms at the fixed threshold (seed 1: 15 against 2), from records in the first days (9) and level likelihoods (4); ahead at the optimised threshold on seed 1, and ahead or within 0.4 on seeds 7-12 and 13-18",
		floor:  [2]float64{81, 79},
		gen: func(rng *rand.Rand, i int) synthSeries {
			n := []int{10000, 20000, 40000}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			k := []int{2, 3, 1, 0}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*minute
				x := level * (1 + 0.3*daily(ts))
				for m, o := range s.onsets {
					switch (i + m) % 3 {
					case 0: // spike
						if j >= o && j < o+1+m%3 {
							x *= 2.2
						}
					case 1: // dip
						if j >= o && j < o+3+i%3*3 {
							x *= 0.35
						}
					default: // spike down to almost nothing
						if j == o {
							x *= 0.1
						}
					}
				}
				x += math.Sqrt(x)*rng.NormFloat64() + 0.03*level*rng.NormFloat64()
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, math.Round(x)))
			}
			return s
		},
	},
	{
		// Crash rates: crashes per session, a small ratio whose noise
		// grows at night when sessions are few; incidents (a bad release)
		// multiply it for a while or for good.
		name:   "crash_ratio",
		behind: "barely beaten records of a ratio whose noise grows at night (11 of 22 false alarms on seed 1; not the ratio's small size: ×1e4 scores the same); level with zscore over seeds 1-6 and 13-18",
		floor:  [2]float64{80, 75},
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour, 15 * minute}[i%3]
			n := []int{600, 1500, 3000, 800}[i%4]
			p := []float64{0.002, 0.01, 0.0005}[i%3]
			sessions := math.Pow(10, 3+1.5*rng.Float64())
			k := []int{1, 2, 0, 1}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			for j := range n {
				ts := t0 + int64(j)*step
				sess := math.Max(1, math.Round(sessions*(1+0.6*daily(ts))*(1+0.1*rng.NormFloat64())))
				q := p
				for m, o := range s.onsets {
					if j >= o && ((i+m)%2 == 0 || j < o+8+i%3*8) {
						q = p * []float64{4, 2.5}[(i+m)%2]
					}
				}
				s.times, s.values = append(s.times, ts), append(s.values, count(rng, q*sess)/sess)
			}
			return s
		},
	},
	{
		// Daily and weekly cycles (weekends at 50-70 %), 5-minute or
		// hourly, mostly all-normal: a detector must not page on them.
		// One series in three has an incident (a drop to half for a few
		// hours).
		name: "weekly_quiet",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{fiveMins, hour, 10 * minute}[i%3]
			n := []int{4000, 1500, 3000, 2500}[i%4]
			level := math.Pow(10, 1+3*rng.Float64())
			wk := 0.5 + 0.2*rng.Float64()
			k := []int{0, 0, 1}[i%3]
			s := synthSeries{onsets: onsets(rng, n, k)}
			dur := int(4 * hour / step)
			for j := range n {
				ts := t0 + int64(j)*step
				x := level * (1 + 0.4*daily(ts)) * weekly(ts, wk)
				for _, o := range s.onsets {
					if j >= o && j < o+max(dur, 3) {
						x *= 0.5
					}
				}
				x += 0.05 * x * rng.NormFloat64()
				if rng.IntN(500) == 0 { // a harmless blip
					x *= 1 + 0.3*rng.Float64()
				}
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
			}
			return s
		},
	},
	{
		// Latencies that drift slowly (a growing table, a warming cache)
		// with incidents on top: a few to tens of samples at 2-3x, or a
		// lasting step up.
		name: "latency_drift",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{minute, fiveMins}[i%2]
			n := []int{2000, 5000, 12000}[i%3]
			med := math.Pow(10, 1+2*rng.Float64())
			drift := (0.5 + rng.Float64()) * []float64{1, -0.5}[i%2]
			k := []int{1, 2, 0, 2}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			walk := 0.0
			for j := range n {
				ts := t0 + int64(j)*step
				walk += 0.01 * rng.NormFloat64()
				walk *= 0.995
				f := 1 + drift*float64(j)/float64(n)
				for m, o := range s.onsets {
					if j >= o && ((i+m)%3 == 0 || j < o+5+m*10) {
						f *= []float64{1.8, 3}[(i+m)%2]
					}
				}
				x := med * f * math.Exp(0.15*rng.NormFloat64()+walk+0.05*daily(ts))
				s.times, s.values = append(s.times, ts), append(s.values, x)
			}
			return s
		},
	},
	{
		// Series with gaps: missing scrapes (NaN) now and then and in
		// blocks, and rows that are simply absent; incidents are surges
		// and lasting drops.
		name: "gappy",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{minute, fiveMins, hour}[i%3]
			n := []int{1500, 3000, 800, 6000}[i%4]
			level := math.Pow(10, 1+3*rng.Float64())
			k := []int{1, 2, 1, 0}[i%4]
			s := synthSeries{onsets: onsets(rng, n, k)}
			ts := t0
			gap := 0
			for j := range n {
				ts += step
				if rng.IntN(200) == 0 {
					ts += step * int64(1+rng.IntN(50)) // absent rows
				}
				if gap == 0 && rng.IntN(400) == 0 {
					gap = 5 + rng.IntN(60)
				}
				x := level * (1 + 0.3*daily(ts))
				for m, o := range s.onsets {
					if j >= o && ((i+m)%2 == 0 || j < o+6+i%3*6) {
						x *= []float64{0.5, 2}[(i+m)%2]
					}
				}
				x += 0.05 * level * rng.NormFloat64()
				v := math.Max(0, x)
				isOnset := false
				for _, o := range s.onsets {
					isOnset = isOnset || j == o
				}
				if gap > 0 && !isOnset {
					gap--
					v = math.NaN()
				} else if rng.IntN(50) == 0 && !isOnset {
					v = math.NaN()
				}
				s.times, s.values = append(s.times, ts), append(s.values, v)
			}
			return s
		},
	},
	{
		// A persisting level shift (a migration, a lost client) and, one
		// to a few days later, a second incident: the shift must not leave
		// the detector blind.
		name: "shift_recur",
		gen: func(rng *rand.Rand, i int) synthSeries {
			step := []int64{hour, fiveMins, 15 * minute}[i%3]
			n := []int{700, 2500, 1200}[i%3]
			level := math.Pow(10, 1+3*rng.Float64())
			s := synthSeries{}
			if i%4 != 3 {
				o := nab.Probation(n) + n/10 + rng.IntN(n/10)
				gapSamples := int(int64(1+i%3) * day / step / 2)
				s.onsets = []int{o, min(o+gapSamples, n-n/20)}
			}
			shift := []float64{0.6, -0.35, 1.5, -0.5}[i%4]
			for j := range n {
				ts := t0 + int64(j)*step
				x := level * (1 + 0.3*daily(ts))
				if len(s.onsets) == 2 {
					if j >= s.onsets[0] {
						x *= 1 + shift
					}
					if o := s.onsets[1]; j >= o && j < o+2+i%3*4 {
						x *= []float64{0.3, 2.5}[i%2]
					}
				}
				x += 0.05 * level * rng.NormFloat64()
				s.times, s.values = append(s.times, ts), append(s.values, math.Max(0, x))
			}
			return s
		},
	},
}

// TestSyntheticMeans prints, for experiments, the mean standard scores of
// auto and zscore per family over the seeds in SEISMO_SYNTH_SEEDS (e.g.
// "7-12"), and checks that auto's mean over all families is at least
// zscore's, optimised and at the own thresholds; it is skipped without
// the variable. SEISMO_NAB_DETECTOR=auto with SEISMO_NAB_CONFIG sets
// auto's config as in the other tests; SEISMO_SYNTH_UNITS=range, max,
// offset or nano rescales each series first (see rescaled), and
// SEISMO_SYNTH_TIMES=rows replaces its timestamps by row numbers,
// shift:M moves them by M minutes (see retimed), and
// SEISMO_SYNTH_ZEROS=N sets N rows of each series to 0 (see zeroed),
// and SEISMO_SYNTH_PROBE applies any other probe (see probed).
func TestSyntheticMeans(t *testing.T) {
	spec := os.Getenv("SEISMO_SYNTH_SEEDS")
	if spec == "" {
		t.Skip("set SEISMO_SYNTH_SEEDS (e.g. 1-6) to run")
	}
	lo, hi, ok := strings.Cut(spec, "-")
	if !ok {
		hi = lo
	}
	a, err := strconv.Atoi(lo)
	require.NoError(t, err)
	b, err := strconv.Atoi(hi)
	require.NoError(t, err)
	var all [4]float64
	var lines []string
	for _, f := range families {
		var sum [4]float64
		for seed := a; seed <= b; seed++ {
			series := retimed(rescaled(f.generate(uint64(seed)), os.Getenv("SEISMO_SYNTH_UNITS")), os.Getenv("SEISMO_SYNTH_TIMES"))
			series = probed(t, zeroed(t, series, os.Getenv("SEISMO_SYNTH_ZEROS")), os.Getenv("SEISMO_SYNTH_PROBE"))
			ao, af := scoreFamily(t, "auto", series)
			zo, zf := scoreFamily(t, "zscore", series)
			for k, v := range []float64{ao.Normalized, af.Normalized, zo.Normalized, zf.Normalized} {
				sum[k] += v / float64(b-a+1)
			}
		}
		for k := range sum {
			all[k] += sum[k] / float64(len(families))
		}
		lines = append(lines, fmt.Sprintf("%-18s auto %6.1f / %6.1f   zscore %6.1f / %6.1f", f.name, sum[0], sum[1], sum[2], sum[3]))
	}
	for _, l := range lines {
		t.Log(l)
	}
	t.Logf("%-18s auto %6.1f / %6.1f   zscore %6.1f / %6.1f", "MEAN", all[0], all[1], all[2], all[3])
	require.GreaterOrEqual(t, all[0], all[2], "auto's mean below zscore's, optimised")
	require.GreaterOrEqual(t, all[1], all[3], "auto's mean below zscore's, fixed thresholds")
}

// zeroed returns the series with the values of n rows (spec, a whole
// number; "" leaves them as drawn) set to 0 from the first row at a
// third of each series outside its windows: a restart, or missing data
// written as 0, by the probe `seismo bench nab --probe zero=N` applies
// to NAB.
func zeroed(t *testing.T, series []synthSeries, spec string) []synthSeries {
	if spec == "" {
		return series
	}
	return probed(t, series, "zero="+spec)
}

// probed returns the series changed by a probe as `seismo bench nab
// --probe` writes it (spec; "" leaves them as drawn), each series its
// own file of a corpus: SEISMO_SYNTH_PROBE=gaps=0.05 blanks a
// twentieth of the rows outside the windows, jitter=0.02 moves the
// times.
func probed(t *testing.T, series []synthSeries, spec string) []synthSeries {
	if spec == "" {
		return series
	}
	p, err := nab.ParseProbe(spec)
	require.NoError(t, err, "probe %q", spec)
	files := make([]*nab.File, len(series))
	out := make([]synthSeries, len(series))
	for i, s := range series {
		s.values = append([]float64(nil), s.values...)
		s.times = append([]int64(nil), s.times...)
		files[i] = &nab.File{Values: s.values, Times: s.times, Windows: s.windows}
		out[i] = s
	}
	p.Apply(&nab.Corpus{Files: files})
	return out
}

// rescaled returns the series with their values in another unit, as
// data sets publish them: "range" maps each series' range onto 0 to 1
// (min-max normalisation, as server-metric data sets are published),
// "max" divides by the series' largest value, "offset" adds 100 times
// the series' range (a gauge that carries a constant: bytes of a disk, a
// temperature in kelvin), "nano" multiplies by 10⁻⁹ (nanoseconds
// written in seconds); "" leaves them as drawn.
func rescaled(series []synthSeries, units string) []synthSeries {
	if units == "" {
		return series
	}
	out := make([]synthSeries, len(series))
	for i, s := range series {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s.values {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		s.values = append([]float64(nil), s.values...)
		if units == "offset" || units == "nano" {
			for j := range s.values {
				if units == "nano" {
					s.values[j] *= 1e-9
				} else {
					s.values[j] += 100 * (hi - lo)
				}
			}
			out[i] = s
			continue
		}
		if units == "max" {
			lo = 0
		} else if units != "range" {
			panic("unknown units " + units)
		}
		for j, v := range s.values {
			if hi > lo {
				s.values[j] = (v - lo) / (hi - lo)
			}
		}
		out[i] = s
	}
	return out
}

// retimed returns the series with other timestamps: "rows" numbers the
// rows 1, 2, 3, ... as Unix seconds, as data sets without times publish
// them (see fitClock); "shift:M" moves every timestamp M minutes later,
// so that the samples fall elsewhere within the detector's hours; ""
// keeps the times drawn.
func retimed(series []synthSeries, times string) []synthSeries {
	shift, rows := int64(0), false
	switch {
	case times == "":
		return series
	case times == "rows":
		rows = true
	case strings.HasPrefix(times, "shift:"):
		m, err := strconv.Atoi(strings.TrimPrefix(times, "shift:"))
		if err != nil {
			panic("unknown times " + times)
		}
		shift = int64(m) * minute
	default:
		panic("unknown times " + times)
	}
	out := make([]synthSeries, len(series))
	for i, s := range series {
		times := make([]int64, len(s.values))
		for j := range times {
			if rows {
				times[j] = int64(j+1) * 1000
			} else {
				times[j] = s.times[j] + shift
			}
		}
		s.times = times
		out[i] = s
	}
	return out
}

// TestSyntheticCountsRescaled: counts published in another unit
// (normalised by their range, as server-metric data sets are) are still
// counts to auto (see lattice.go). On the families of counts that start
// from 0 (errors, crashes) their scores stay within a point of the
// counts' own, over seeds 1 to 3, optimised and at the own threshold.
// Modelled as measurements, as before auto kept their lattice,
// sparse_counts lost 3.8 / 6.3 points so. Counts far from 0 lose their
// origin to the normalisation, and with it the Poisson floor's level
// (docs/detectors.md, "Counts in another unit").
func TestSyntheticCountsRescaled(t *testing.T) {
	for _, name := range []string{"sparse_counts", "rare_counts"} {
		i := slices.IndexFunc(families, func(f family) bool { return f.name == name })
		require.GreaterOrEqual(t, i, 0, name)
		var own, norm [2]float64
		for seed := uint64(1); seed <= 3; seed++ {
			series := families[i].generate(seed)
			oo, of := scoreFamily(t, "auto", series)
			no, nf := scoreFamily(t, "auto", rescaled(series, "range"))
			own[0], own[1] = own[0]+oo.Normalized/3, own[1]+of.Normalized/3
			norm[0], norm[1] = norm[0]+no.Normalized/3, norm[1]+nf.Normalized/3
		}
		t.Logf("%-15s own %.1f / %.1f   normalised %.1f / %.1f", name, own[0], own[1], norm[0], norm[1])
		assert.GreaterOrEqual(t, norm[0], own[0]-1, "%s normalised, optimised", name)
		assert.GreaterOrEqual(t, norm[1], own[1]-1, "%s normalised, own threshold", name)
	}
}

// TestSyntheticGaugeUnits: a constant added to every series (100 times
// its range, as a disk's used bytes or a temperature in kelvin carry
// one), or every value times 10⁻⁹ (nanoseconds written in seconds),
// leaves auto's mean over the families, on seed 1, within a point and
// a half of the mean as drawn, optimised and at the own threshold. With
// the floor at a thousandth of the magnitude and at least 10⁻⁹, the
// offset cost 6.4 / 10.9 points over seeds 1-6 (75.6 / 66.0 against
// 82.0 / 76.9; kpi_minute, server_minute and gc_pauses lost 43 to 56),
// and 10⁻⁹ 2.2 / 1.5 (docs/detectors.md, "A floor at the series' own
// scale").
func TestSyntheticGaugeUnits(t *testing.T) {
	n := float64(len(families))
	var own [2]float64
	moved := map[string]*[2]float64{"offset": {}, "nano": {}}
	for _, f := range families {
		series := f.generate(1)
		oo, of := scoreFamily(t, "auto", series)
		own[0], own[1] = own[0]+oo.Normalized/n, own[1]+of.Normalized/n
		for units, sum := range moved {
			so, sf := scoreFamily(t, "auto", rescaled(series, units))
			sum[0], sum[1] = sum[0]+so.Normalized/n, sum[1]+sf.Normalized/n
		}
	}
	for _, units := range []string{"offset", "nano"} {
		sum := moved[units]
		t.Logf("as drawn %.1f / %.1f   %s %.1f / %.1f", own[0], own[1], units, sum[0], sum[1])
		assert.GreaterOrEqual(t, sum[0], own[0]-1.5, "%s, optimised", units)
		assert.GreaterOrEqual(t, sum[1], own[1]-1.5, "%s, own threshold", units)
	}
}

// TestSyntheticRowNumbers: the families timestamped by row number (1,
// 2, 3, ... seconds from 1970, as data sets without times publish them)
// have no clock to auto (see fitClock), which judges them by their
// samples alone until it finds a daily cycle in them (see cycle.go).
// Its mean over the families, on seed 1, stays at least 17 points above
// zscore's, optimised and at the own thresholds: 78.4 / 73.6 against
// 58.4 / 19.6, and 73.5 / 68.3 without the cycles. With the clock taken
// at its word (a day of slices over an hour of "seconds", records
// waiting a day that never came, windows fitted to one-second samples)
// auto's mean over seeds 1-6 was 51.5 / 46.5, below zscore's optimised
// 58.4 (docs/detectors.md, "Timestamps that are row numbers").
func TestSyntheticRowNumbers(t *testing.T) {
	var auto, z [2]float64
	for _, f := range families {
		series := retimed(f.generate(1), "rows")
		ao, af := scoreFamily(t, "auto", series)
		zo, zf := scoreFamily(t, "zscore", series)
		n := float64(len(families))
		auto[0], auto[1] = auto[0]+ao.Normalized/n, auto[1]+af.Normalized/n
		z[0], z[1] = z[0]+zo.Normalized/n, z[1]+zf.Normalized/n
	}
	t.Logf("auto %.1f / %.1f   zscore %.1f / %.1f", auto[0], auto[1], z[0], z[1])
	require.GreaterOrEqual(t, auto[0], z[0]+17, "optimised")
	require.GreaterOrEqual(t, auto[1], z[1]+17, "own thresholds")
}

// TestSyntheticPerFile logs per-series detections of one family
// (SEISMO_SYNTH_FAMILY, with SEISMO_NAB_PERFILE=1) for experiments, with
// the series changed as TestSyntheticMeans changes them; the family must
// exist.
func TestSyntheticPerFile(t *testing.T) {
	name := os.Getenv("SEISMO_SYNTH_FAMILY")
	if name == "" {
		t.Skip("set SEISMO_SYNTH_FAMILY to run")
	}
	found := false
	for _, f := range families {
		if f.name != name {
			continue
		}
		found = true
		series := retimed(rescaled(f.generate(synthSeed(t)), os.Getenv("SEISMO_SYNTH_UNITS")), os.Getenv("SEISMO_SYNTH_TIMES"))
		series = probed(t, zeroed(t, series, os.Getenv("SEISMO_SYNTH_ZEROS")), os.Getenv("SEISMO_SYNTH_PROBE"))
		for i, s := range series {
			t.Logf("#%d n=%d onsets %v windows %v", i, len(s.values), s.onsets, s.windows)
		}
		for _, kind := range []string{"auto", "zscore"} {
			o, fx := scoreFamily(t, kind, series)
			t.Logf("%s opt %s", kind, o)
			t.Logf("%s fix %s", kind, fx)
		}
	}
	require.True(t, found, "no family %q", name)
}

// TestSyntheticEpisodes checks, on every family, what lets a rule keep
// one alert per incident: outside an open episode (the previous
// verdict's Episode false) auto turns anomalous only with an alert, a
// score at its threshold. A rule that holds its alert while Episode is
// true (rules, "One incident, one page") then fires once per alert.
// Logged per family: the alerts, and the firings of a rule without the
// hold (one per turn to anomalous), which an incident in waves
// multiplies.
func TestSyntheticEpisodes(t *testing.T) {
	seed := synthSeed(t)
	cfg := detect.DefaultAutoConfig()
	var alerts, turns int
	for _, f := range families {
		fa, ft := 0, 0
		for i, s := range f.generate(seed) {
			d := detect.NewAuto(cfg)
			var prev detect.Verdict
			for j := range s.values {
				v := d.Observe(s.times[j], s.values[j])
				if math.IsNaN(s.values[j]) {
					continue // a missing value is skipped, its verdict the last one's
				}
				if v.State == detect.StateAnomalous && prev.State != detect.StateAnomalous {
					ft++
					if !prev.Episode {
						require.GreaterOrEqual(t, v.Score, cfg.Threshold, "%s #%d row %d: anomalous outside an episode without an alert", f.name, i, j)
					}
				}
				if v.Score >= cfg.Threshold && prev.State != detect.StateAnomalous {
					fa++
					require.False(t, prev.Episode, "%s #%d row %d: an alert within an open episode", f.name, i, j)
				}
				prev = v
			}
		}
		t.Logf("%-18s alerts %4d, turns to anomalous %4d", f.name, fa, ft)
		alerts, turns = alerts+fa, turns+ft
	}
	t.Logf("%-18s alerts %4d, turns to anomalous %4d", "ALL", alerts, turns)
}
