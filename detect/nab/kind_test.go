package nab

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// episodeOpenings runs a fresh detector from cfg over ten days of
// 5-minute Gaussian noise with a spike every half day, each larger than
// the last, and returns the score of every sample that opens an episode.
func episodeOpenings(t *testing.T, cfg detect.Config) []float64 {
	t.Helper()
	newDet, _, err := Factory(cfg)
	require.NoError(t, err)
	d, err := newDet()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	var open []float64
	inEpisode := false
	for i := range 10 * 288 {
		v := 100 + 2*rng.NormFloat64()
		if i >= 288 && i%144 == 72 {
			v += 2 * (3 + float64(i)/288) // 8 to 26 spreads
		}
		vd := d.Observe(int64(i)*300_000, v)
		if vd.Episode && !inEpisode {
			open = append(open, vd.Score)
		}
		inEpisode = vd.Episode
	}
	return open
}

// TestSetThreshold checks that a threshold set as a rule sets it is the
// one the detector runs with: every episode opens at a score at or above
// it, where with the default threshold some open below it.
func TestSetThreshold(t *testing.T) {
	const th = 0.9
	def, err := KindConfig("auto")
	require.NoError(t, err)
	below := 0
	for _, s := range episodeOpenings(t, def) {
		require.GreaterOrEqual(t, s, 0.6)
		if s < th {
			below++
		}
	}
	require.Positive(t, below, "no episode opened between the default threshold and %v: the test tells nothing", th)

	cfg, err := KindConfig("auto")
	require.NoError(t, err)
	require.NoError(t, SetThreshold(cfg, th))
	require.Equal(t, th, cfg.(Thresholder).AlertThreshold())
	open := episodeOpenings(t, cfg)
	require.NotEmpty(t, open)
	for _, s := range open {
		require.GreaterOrEqual(t, s, th)
	}

	for _, kind := range []string{"zscore", "ewma", "mad", "cusum", "seasonal"} {
		cfg, err := KindConfig(kind)
		require.NoError(t, err)
		require.NoError(t, SetThreshold(cfg, 0.7), kind)
		require.Equal(t, 0.7, cfg.(Thresholder).AlertThreshold(), kind)
	}
	_, _, err = func() (func() (detect.Detector, error), float64, error) {
		cfg, _ := KindConfig("auto")
		require.NoError(t, SetThreshold(cfg, 1.5))
		return Factory(cfg)
	}()
	require.ErrorContains(t, err, "threshold: must be in (0, 1]")
}
