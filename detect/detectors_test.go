package detect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// univariateKinds are the kinds whose configs build a Detector.
func univariateKinds(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, n := range Kinds() {
		k, _ := Lookup(n)
		if _, ok := k.NewConfig().(UnivariateConfig); ok {
			names = append(names, n)
		}
	}
	require.Subset(t, names, []string{"auto", "ewma", "mad", "cusum", "seasonal", "zscore"})
	return names
}

func newDetector(t testing.TB, kind string) Detector {
	t.Helper()
	k, ok := Lookup(kind)
	require.True(t, ok, kind)
	cfg := k.NewConfig().(UnivariateConfig)
	require.NoError(t, cfg.Validate())
	d, err := cfg.New()
	require.NoError(t, err)
	return d
}

// testSeries is a noisy daily cycle at 1-minute steps with a level shift, a
// spike, gaps and a few non-finite values: enough to exercise every state.
func testSeries(n int) (ts []int64, vs []float64) {
	rng := rand.New(rand.NewPCG(7, 7))
	t0 := int64(1_700_000_000_000)
	for i := range n {
		t := t0 + int64(i)*60_000
		if i > n/3 {
			t += 3_600_000 // a one-hour gap
		}
		v := 50 + 10*math.Sin(2*math.Pi*float64(i)/1440) + rng.NormFloat64()
		switch {
		case i == n/2:
			v += 80
		case i > 2*n/3:
			v += 25
		case i%97 == 0:
			v = math.NaN()
		case i == 501:
			v = math.Inf(1)
		}
		ts = append(ts, t)
		vs = append(vs, v)
	}
	return ts, vs
}

func TestSnapshotRoundTripMidStream(t *testing.T) {
	ts1, vs := testSeries(4000)
	// At 15 seconds, a minute and 5 minutes: what auto fits to the
	// interval after its warm-up (see fitSlices and fitTrend) is fitted
	// again on restore.
	for _, step := range []int64{15_000, 60_000, 300_000} {
		ts := make([]int64, len(ts1))
		for i := range ts1 {
			ts[i] = ts1[0] + (ts1[i]-ts1[0])/60_000*step
		}
		roundTripMidStream(t, ts, vs)
	}
}

func roundTripMidStream(t *testing.T, ts []int64, vs []float64) {
	for _, kind := range univariateKinds(t) {
		for _, cut := range []int{1, 100, 1999, 3500} {
			t.Run(kind, func(t *testing.T) {
				whole := newDetector(t, kind)
				want := make([]Verdict, len(vs))
				for i := range vs {
					want[i] = whole.Observe(ts[i], vs[i])
				}

				first := newDetector(t, kind)
				for i := range cut {
					require.Equal(t, want[i], first.Observe(ts[i], vs[i]))
				}
				snap, err := first.MarshalBinary()
				require.NoError(t, err)

				restored := newDetector(t, kind)
				require.NoError(t, restored.UnmarshalBinary(snap))
				// Every field decoded is the one encoded, including state
				// the verdicts below may not reach.
				again, err := restored.MarshalBinary()
				require.NoError(t, err)
				require.Equal(t, snap, again, "snapshot after restoring at %d", cut)
				for i := cut; i < len(vs); i++ {
					require.Equal(t, want[i], restored.Observe(ts[i], vs[i]), "sample %d after restoring at %d", i, cut)
				}
			})
		}
	}
}

func TestAutoSnapshotWithoutDayBaselines(t *testing.T) {
	cfg := DefaultAutoConfig()
	cfg.DayBuckets = 0
	ts, vs := testSeries(3000)
	whole, cut := NewAuto(cfg), NewAuto(cfg)
	for i := range 1500 {
		require.Equal(t, whole.Observe(ts[i], vs[i]), cut.Observe(ts[i], vs[i]))
	}
	snap, err := cut.MarshalBinary()
	require.NoError(t, err)
	restored := NewAuto(cfg)
	require.NoError(t, restored.UnmarshalBinary(snap))
	for i := 1500; i < len(vs); i++ {
		require.Equal(t, whole.Observe(ts[i], vs[i]), restored.Observe(ts[i], vs[i]), "sample %d", i)
	}
	// A snapshot with day baselines does not restore into one without.
	withDay, err := NewAuto(DefaultAutoConfig()).MarshalBinary()
	require.NoError(t, err)
	require.ErrorIs(t, NewAuto(cfg).UnmarshalBinary(withDay), ErrSnapshot)
}

func TestSnapshotRejectsBadInput(t *testing.T) {
	for _, kind := range univariateKinds(t) {
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			for i := range 50 {
				d.Observe(int64(i)*1000, float64(i%7))
			}
			snap, err := d.MarshalBinary()
			require.NoError(t, err)

			tests := []struct {
				name string
				b    []byte
				want string
			}{
				{"empty", nil, "too short"},
				{"truncated", snap[:len(snap)-3], "truncated"},
				{"trailing bytes", append(append([]byte{}, snap...), 0), "trailing"},
				{"future version", append([]byte{99}, snap[1:]...), "version 99"},
				// A snapshot older than the oldest format read is
				// refused, and the agent starts that detector cold
				// (TestAutoSnapshotUpgrade reads the oldest).
				{"older version", append([]byte{snapshotOldest - 1}, snap[1:]...), fmt.Sprintf("version %d", snapshotOldest-1)},
			}
			for _, tt := range tests {
				err := newDetector(t, kind).UnmarshalBinary(tt.b)
				require.ErrorIs(t, err, ErrSnapshot, tt.name)
				require.ErrorContains(t, err, tt.want, tt.name)
			}

			other := "ewma"
			if kind == "ewma" {
				other = "mad"
			}
			err = newDetector(t, other).UnmarshalBinary(snap)
			require.ErrorIs(t, err, ErrSnapshot)
			require.ErrorContains(t, err, "made by detector")
		})
	}
}

func TestSnapshotRejectsOtherConfig(t *testing.T) {
	a := DefaultAutoConfig()
	d1, err := a.New()
	require.NoError(t, err)
	snap, err := d1.MarshalBinary()
	require.NoError(t, err)
	a.Quiet = 10
	d2, err := a.New()
	require.NoError(t, err)
	require.ErrorContains(t, d2.UnmarshalBinary(snap), "quiet=200")
}

func TestDetectorsHandleNonFinite(t *testing.T) {
	for _, kind := range univariateKinds(t) {
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			var last Verdict
			for i := range 300 {
				last = d.Observe(int64(i)*60_000, 10+float64(i%3))
			}
			for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				got := d.Observe(301*60_000, v)
				require.Zero(t, got.Score)
				require.NotEqual(t, StateAnomalous, got.State)
				require.Equal(t, last.Expected, got.Expected)
			}
		})
	}
}

// calmNoise is bounded noise around 100: unlike Gaussian noise it sets no
// new records after a while, so the new-extreme rule of "auto" must stay
// silent on it.
func calmNoise(rng *rand.Rand) float64 { return 100 + 2*(rng.Float64()-0.5)*math.Sqrt(3) }

func TestDetectorsFlagASpike(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, kind := range univariateKinds(t) {
		if kind == "cusum" {
			continue // CUSUM looks for lasting shifts; see TestDetectorsFlagALevelShift
		}
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			ts := int64(0)
			for range 2000 {
				ts += 60_000
				v := d.Observe(ts, calmNoise(rng))
				require.NotEqual(t, StateAnomalous, v.State)
			}
			ts += 60_000
			v := d.Observe(ts, 160)
			require.Equal(t, StateAnomalous, v.State)
			require.Equal(t, DirUp, v.Direction)
			require.InDelta(t, 100, v.Expected, 2)
			require.Less(t, v.Upper, 160.0)
		})
	}
}

func TestDetectorsFlagALevelShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, kind := range []string{"auto", "cusum", "ewma", "mad"} {
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			ts := int64(0)
			for range 1500 {
				ts += 60_000
				require.NotEqual(t, StateAnomalous, d.Observe(ts, calmNoise(rng)).State)
			}
			fired := false
			for range 100 {
				ts += 60_000
				v := d.Observe(ts, calmNoise(rng)-6)
				if v.State == StateAnomalous {
					fired = true
					require.Equal(t, DirDown, v.Direction)
					break
				}
			}
			require.True(t, fired, "a 6-sigma drop lasting 100 samples must be flagged")
		})
	}
}

func TestAutoEpisodes(t *testing.T) {
	const step = 300_000 // 5-minute samples: 1000 of them span more than a day
	calm := func(d *Auto, rng *rand.Rand, from, n int) {
		for i := range n {
			d.Observe(int64(from+i)*step, calmNoise(rng))
		}
	}
	t.Run("no new alert for the whole quiet period without calm", func(t *testing.T) {
		cfg := DefaultAutoConfig()
		cfg.Calm = 0
		d := NewAuto(cfg)
		rng := rand.New(rand.NewPCG(11, 11))
		calm(d, rng, 0, 1000)
		v := d.Observe(1000*step, 200)
		require.Equal(t, StateAnomalous, v.State)
		require.GreaterOrEqual(t, v.Score, cfg.Threshold)
		for i := range cfg.Quiet {
			// Not one value repeated: that would be a freeze, whose
			// samples are held as missing ones are (see frozen).
			d.Observe(int64(1001+i)*step, 200+calmNoise(rng))
			require.Equal(t, cfg.Quiet-1-i, d.quiet, "one episode, no new alert: sample %d", i)
		}
		v = d.Observe(int64(1001+cfg.Quiet)*step, 400)
		require.Equal(t, StateAnomalous, v.State, "%+v", v)
		require.Equal(t, cfg.Quiet, d.quiet, "a new alert after the quiet period")
	})
	t.Run("anomalous while the incident lasts, one alert per episode", func(t *testing.T) {
		cfg := DefaultAutoConfig()
		d := NewAuto(cfg)
		rng := rand.New(rand.NewPCG(12, 12))
		calm(d, rng, 0, 1000)
		require.Equal(t, StateAnomalous, d.Observe(1000*step, 200).State)
		for i := range 5 {
			v := d.Observe(int64(1001+i)*step, 200)
			require.Equal(t, StateAnomalous, v.State, "the incident goes on: still anomalous")
			require.Equal(t, cfg.Quiet-1-i, d.quiet, "the incident goes on: no second alert")
		}
		i := 1006
		var v Verdict
		for ; i < 1016; i++ {
			if v = d.Observe(int64(i)*step, calmNoise(rng)); v.State == StateNormal {
				break
			}
		}
		require.Equal(t, StateNormal, v.State, "normal within a few samples of the values")
		require.Zero(t, v.Score)
		require.Positive(t, d.quiet, "the episode goes on")
		i++
		v = d.Observe(int64(i)*step, 200)
		require.Equal(t, StateAnomalous, v.State, "anomalous again within the episode")
		require.Zero(t, v.Score, "but no new alert")
		require.Equal(t, cfg.Quiet-(i-1000), d.quiet)
		i++
		for d.quiet > 0 && i < 1100 {
			d.Observe(int64(i)*step, calmNoise(rng))
			i++
		}
		require.Equal(t, StateNormal, d.last.State, "calm again")
		require.Zero(t, d.quiet, "the episode is over after a calm spell")
		require.Less(t, i, 1050)
		v = d.Observe(int64(i)*step, 1000)
		require.Equal(t, StateAnomalous, v.State, "a new incident after calm alerts before the quiet period ends")
		require.GreaterOrEqual(t, v.Score, cfg.Threshold)
		require.Equal(t, cfg.Quiet, d.quiet)
	})
}

func TestWarmUp(t *testing.T) {
	for _, kind := range univariateKinds(t) {
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			v := d.Observe(0, 5)
			require.Equal(t, StateWarmingUp, v.State)
			require.Zero(t, v.Score)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		wants []string
	}{
		{"auto defaults", ptr(DefaultAutoConfig()), nil},
		{"auto bad", &AutoConfig{Threshold: 2, WarmUp: 0, LevelHalfLife: -1, SurpriseCap: 0, ShortHalfLife: math.Inf(1), LongHalfLife: 1, ExtremeTolerance: math.NaN(), Quiet: -1},
			[]string{"threshold: must be in (0, 1]", "warm_up:", "level_half_life:", "surprise_cap:", "short_half_life:", "extreme_tolerance:", "quiet:"}},
		{"auto bad spike path", func() *AutoConfig {
			c := DefaultAutoConfig()
			c.SpikeHalfLife, c.SpikeRate, c.JumpZ = 0, 2, math.NaN()
			return &c
		}(), []string{"spike_half_life:", "spike_rate:", "jump_z:"}},
		{"auto negative spike bound", func() *AutoConfig { c := DefaultAutoConfig(); c.SpikeZ = -1; return &c }(), []string{"spike_z:"}},
		{"auto freezes off", func() *AutoConfig { c := DefaultAutoConfig(); c.FrozenRuns = 0; return &c }(), nil},
		{"auto freezes within the longest run", func() *AutoConfig { c := DefaultAutoConfig(); c.FrozenRuns = 0.5; return &c }(), []string{"frozen_runs: must be 0 (off) or at least 1"}},
		{"ewma defaults", ptr(DefaultEWMAConfig()), nil},
		{"ewma bad", &EWMAConfig{}, []string{"half_life:", "threshold:", "warm_up:", "band:"}},
		{"mad defaults", ptr(DefaultMADConfig()), nil},
		{"cusum defaults", ptr(DefaultCUSUMConfig()), nil},
		{"cusum bad", &CUSUMConfig{HalfLife: 10, Slack: -1, Decision: 0, WarmUp: 1, Threshold: 0.5, Band: 3}, []string{"slack:", "decision:"}},
		{"seasonal defaults", ptr(DefaultSeasonalConfig()), nil},
		{"seasonal bad", &SeasonalConfig{Period: 0, Buckets: 0, HalfLife: 1, MinVisits: 1, WarmUp: 1, Threshold: 0.5, Band: 3},
			[]string{"buckets:", "period:", "min_visits:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wants == nil {
				require.NoError(t, err)
				return
			}
			for _, w := range tt.wants {
				require.ErrorContains(t, err, w)
			}
			_, nerr := tt.cfg.(UnivariateConfig).New()
			require.Error(t, nerr, "New refuses an invalid config")
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestZScoreFiresOncePerExcursion(t *testing.T) {
	d := newDetector(t, "zscore")
	rng := rand.New(rand.NewPCG(13, 13))
	for i := range 500 {
		d.Observe(int64(i), calmNoise(rng))
	}
	alerts := 0
	for i := range 3 { // one excursion of three samples far outside the band
		v := d.Observe(int64(500+i), 1000)
		require.Equal(t, StateAnomalous, v.State, "anomalous while outside the band")
		if v.Score >= 0.5 {
			alerts++
		}
	}
	require.Equal(t, 1, alerts, "one alert per excursion")
	var v Verdict
	for i := range 200 {
		v = d.Observe(int64(503+i), calmNoise(rng))
	}
	require.Equal(t, StateNormal, v.State, "back inside the band")
	v = d.Observe(710, 1e6)
	require.Equal(t, StateAnomalous, v.State)
	require.GreaterOrEqual(t, v.Score, 0.5, "a new excursion alerts again")
}

// TestDetectorsEvidence: every detector's verdict names its evidence
// where it scores and only there. The one-way detectors name theirs:
// ewma, mad and zscore a spike, cusum a lasting shift, seasonal the
// time of day once it judges a bucket (a spike before).
func TestDetectorsEvidence(t *testing.T) {
	ts, vs := testSeries(6000)
	want := map[string][]Evidence{
		"ewma": {EvidenceSpike}, "mad": {EvidenceSpike}, "zscore": {EvidenceSpike}, "cusum": {EvidenceLevel},
		"seasonal": {EvidenceSpike, EvidenceTimeOfDay},
		"auto":     {EvidenceLevel, EvidenceTimeOfDay, EvidenceChanges, EvidenceSpike, EvidenceRecord, EvidenceZero},
	}
	for kind, allowed := range want {
		t.Run(kind, func(t *testing.T) {
			d := newDetector(t, kind)
			scored := 0
			for i := range ts {
				v := d.Observe(ts[i], vs[i])
				if v.Score == 0 {
					require.Equal(t, EvidenceNone, v.Evidence, "sample %d scores 0", i)
					continue
				}
				if kind == "auto" && v.Score < DefaultAutoConfig().Threshold/2 {
					continue // auto does not work out a small likelihood's evidence
				}
				scored++
				require.Contains(t, allowed, v.Evidence, "sample %d scores %.3f", i, v.Score)
			}
			require.Positive(t, scored, "nothing scored: the test shows nothing")
		})
	}
}
