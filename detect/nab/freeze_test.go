package nab

import (
	"math"
	"slices"
	"testing"

	"github.com/seismo-agent/seismo/detect"
	"github.com/stretchr/testify/require"
)

// freezeVerdicts runs a default auto over f and returns the rows that
// alerted (a score at or above the threshold outside an episode) and,
// of all rows, those that scored as a freeze (within an episode too).
func freezeVerdicts(f *File) (alerts, frozen []int) {
	cfg := detect.DefaultAutoConfig()
	d := detect.NewAuto(cfg)
	ep := false
	for i, x := range f.Values {
		v := d.Observe(f.Times[i], x)
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

// TestFreezeOnNAB: on NAB's real series auto names no freeze outside the
// labelled windows (art_daily_flatmiddle's labelled anomaly is a day at
// one value, and is named), and it
// pages a freeze put into each file: from the first row at a third of
// the file outside any window, the value before it held for a day's
// worth of rows or 300, whichever is fewer, as an exporter that hangs
// keeps serving its last value. Paged means an alert that began within
// the freeze (a held value soon lies away from the hour's usual one) or
// a freeze named within it; files frozen at 0, where auto judges no
// freeze, are left out.
func TestFreezeOnNAB(t *testing.T) {
	c, err := Load(corpusDir(t))
	require.NoError(t, err)
	named, paged, asFrozen, tried := 0, 0, 0, 0
	for _, f := range c.Files {
		_, frozen := freezeVerdicts(f)
		for _, r := range frozen {
			t.Logf("as loaded: %s frozen at row %d (%v), in a window: %v", f.Name, r, f.Values[r], f.inWindow(r))
			if !f.inWindow(r) {
				named++
			}
		}
		at := f.quietRow()
		if at < 1 || f.Values[at-1] == 0 {
			continue
		}
		saved := append([]float64(nil), f.Values...)
		hold := 300
		if step := (f.Times[len(f.Times)-1] - f.Times[0]) / int64(len(f.Times)-1); step > 0 {
			hold = min(hold, int(86_400_000/step))
		}
		end := min(at+hold, len(f.Values))
		for i := at; i < end; i++ {
			f.Values[i] = f.Values[at-1]
		}
		tried++
		alerts, frozen := freezeVerdicts(f)
		within := func(rows []int) bool {
			i, _ := slices.BinarySearch(rows, at)
			return i < len(rows) && rows[i] < end
		}
		switch {
		case within(frozen):
			paged++
			asFrozen++
		case within(alerts):
			paged++
			t.Logf("frozen: %s at row %d (%v) for %d rows: paged, not as frozen", f.Name, at, f.Values[at], end-at)
		default:
			t.Logf("frozen: %s at row %d (%v) for %d rows: no page", f.Name, at, f.Values[at], end-at)
		}
		copy(f.Values, saved)
	}
	t.Logf("freezes named on NAB as loaded, outside the windows: %d; freezes put in: %d, paged %d, %d of them named frozen", named, tried, paged, asFrozen)
	require.Zero(t, named, "freezes named on NAB as loaded, outside the windows")
	require.GreaterOrEqual(t, paged, tried*9/10, "freezes paged")
	require.GreaterOrEqual(t, asFrozen, tried*3/4, "freezes named frozen")
}
