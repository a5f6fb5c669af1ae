package detect_test

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/detect"
)

// frozenVerdicts runs a default auto over a series and returns the rows
// that alerted (a score at or above the threshold outside an episode)
// and, of all rows, those that scored as a freeze (within an episode
// too).
func frozenVerdicts(times []int64, values []float64) (alerts, frozen []int) {
	cfg := detect.DefaultAutoConfig()
	d := detect.NewAuto(cfg)
	ep := false
	for i, x := range values {
		v := d.Observe(times[i], x)
		if v.Score >= cfg.Threshold && !ep {
			alerts = append(alerts, i)
		}
		if v.Score > 0 && v.Evidence == detect.EvidenceFrozen {
			frozen = append(frozen, i)
		}
		if !math.IsNaN(x) {
			ep = v.Episode
		}
	}
	return alerts, frozen
}

// TestSyntheticFrozen: over the synthetic families, none of which was
// drawn with a freeze in it, auto scores nothing as frozen; and a freeze
// put into each series (from the first row at a third of it outside any
// window, the value before held for a day's rows or 300, whichever is
// fewer; series frozen at 0 left out) pages in most, as frozen in three
// quarters. Seed 1, or SEISMO_SYNTH_SEEDS (e.g. 1-6). Families whose
// series are short or hourly see few freezes paged: a freeze is judged
// only a day after the first sample, over 20 samples, and at four times
// the longest run before it.
func TestSyntheticFrozen(t *testing.T) {
	lo, hi := 1, 1
	if spec := os.Getenv("SEISMO_SYNTH_SEEDS"); spec != "" {
		a, b, ok := strings.Cut(spec, "-")
		if !ok {
			b = a
		}
		var err error
		lo, err = strconv.Atoi(a)
		require.NoError(t, err)
		hi, err = strconv.Atoi(b)
		require.NoError(t, err)
	}
	named, series, tried, paged, asFrozen := 0, 0, 0, 0, 0
	for _, f := range families {
		fNamed, fTried, fPaged, fAs := 0, 0, 0, 0
		for seed := lo; seed <= hi; seed++ {
			for _, s := range f.generate(uint64(seed)) {
				series++
				_, fr := frozenVerdicts(s.times, s.values)
				fNamed += len(fr)
				at := -1
				for r := len(s.values) / 3; r < len(s.values) && at < 0; r++ {
					in := false
					for _, w := range s.windows {
						in = in || r >= w.First && r <= w.Last
					}
					if !in && !math.IsNaN(s.values[r]) && !math.IsNaN(s.values[r-1]) {
						at = r
					}
				}
				if at < 0 || s.values[at-1] == 0 {
					continue
				}
				step := (s.times[len(s.times)-1] - s.times[0]) / int64(len(s.times)-1)
				end := min(at+min(300, int(24*hour/max(step, 1))), len(s.values))
				vals := append([]float64(nil), s.values...)
				for i := at; i < end; i++ {
					vals[i] = vals[at-1]
				}
				fTried++
				alerts, fr := frozenVerdicts(s.times, vals)
				within := func(rows []int) bool {
					for _, r := range rows {
						if r >= at && r < end {
							return true
						}
					}
					return false
				}
				switch {
				case within(fr):
					fPaged++
					fAs++
				case within(alerts):
					fPaged++
				}
			}
		}
		t.Logf("%-20s scored as frozen as drawn: %3d; frozen %3d: paged %3d, as frozen %3d", f.name, fNamed, fTried, fPaged, fAs)
		named += fNamed
		tried += fTried
		paged += fPaged
		asFrozen += fAs
	}
	t.Logf("%d series: scored as frozen as drawn %d; %d frozen, paged %d, as frozen %d", series, named, tried, paged, asFrozen)
	require.Zero(t, named, "scored as frozen on series drawn without a freeze")
	require.GreaterOrEqual(t, paged, tried*4/5, "freezes paged")
	require.GreaterOrEqual(t, asFrozen, tried*3/4, "freezes paged as frozen")
}
