package store

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
)

// TestCommitCountsStoredSamples checks that Commit counts only samples it
// stored: a repeat of the last sample, or a staleness marker at the same
// instant, is neither stored nor counted (FuzzLoadCSV found the repeat
// counted, so replay statistics over-reported).
func TestCommitCountsStoredSamples(t *testing.T) {
	s, _ := newStore(t, DefaultConfig())
	lset := labels.FromStrings("__name__", "m")
	app := s.Appender()
	var ref SeriesRef
	for _, x := range []sample{{1000, 1}, {1000, 1}, {2000, 2}, {2000, math.Float64frombits(value.StaleNaN)}, {3000, 3}} {
		var err error
		ref, err = app.Append(ref, lset, x.t, x.v)
		require.NoError(t, err)
	}
	require.Equal(t, 3, app.Commit())
	got := readAll(t, s, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	requireSamples(t, []sample{{1000, 1}, {2000, 2}, {3000, 3}}, got[lset.String()])
}
