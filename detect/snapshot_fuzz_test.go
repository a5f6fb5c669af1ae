package detect

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSnapshot feeds arbitrary bytes to every univariate detector's
// UnmarshalBinary, as a damaged or foreign state file would at the agent's
// start. Decoding must never panic; a snapshot it accepts must encode
// again to bytes that decode and encode to themselves (every field read
// is written back), and the detector must go on observing without
// panicking and with a valid state. The seeds are real snapshots of each
// kind after three days of 1-minute samples.
func FuzzSnapshot(f *testing.F) {
	kinds := univariateKinds(f)
	ts, vs := testSeries(3 * 1440)
	for k, kind := range kinds {
		d := newDetector(f, kind)
		for i := range ts {
			d.Observe(ts[i], vs[i])
		}
		snap, err := d.MarshalBinary()
		require.NoError(f, err)
		f.Add(uint8(k), snap)
		if kind == autoKind {
			// Finer than a minute, auto keeps its slices' fits too.
			d := newDetector(f, kind)
			for i := range ts {
				d.Observe(ts[0]+(ts[i]-ts[0])/4, vs[i])
			}
			snap, err := d.MarshalBinary()
			require.NoError(f, err)
			require.NotNil(f, d.(*Auto).fits)
			f.Add(uint8(k), snap)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		kind := kinds[int(k)%len(kinds)]
		d := newDetector(t, kind)
		if d.UnmarshalBinary(b) != nil {
			return
		}
		once, err := d.MarshalBinary()
		require.NoError(t, err)
		again := newDetector(t, kind)
		require.NoError(t, again.UnmarshalBinary(once), "%s: its own snapshot refused", kind)
		twice, err := again.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, once, twice, "%s: a decoded snapshot encodes differently", kind)
		for i := range 50 {
			x := 50 + float64(i%7)
			if i == 25 {
				x = math.NaN()
			}
			v := d.Observe(ts[len(ts)-1]+int64(i+1)*60_000, x)
			require.LessOrEqual(t, v.State, StateAnomalous, "%s: state %d", kind, v.State)
		}
	})
}
