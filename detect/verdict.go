package detect

import (
	"math"

	"github.com/seismo-agent/seismo/internal/configutil"
)

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// skipVerdict is what a detector returns for a NaN or infinite sample: the
// previous baseline, no score, never anomalous.
func skipVerdict(prev Verdict) Verdict {
	prev.Score = 0
	prev.Direction = DirNone
	if prev.State == StateAnomalous {
		prev.State = StateNormal
	}
	return prev
}

// direction returns the direction of x relative to expected.
func direction(x, expected float64) Direction {
	switch {
	case x > expected:
		return DirUp
	case x < expected:
		return DirDown
	}
	return DirNone
}

// scaleFloor is the smallest scale a detector divides by for a series
// around level loc: a flat series still has some tolerance, relative to its
// magnitude, so that float noise is not an anomaly.
func scaleFloor(loc float64) float64 { return 1e-3*math.Abs(loc) + 1e-9 }

// checkHalfLife records an error unless v is a positive, finite number of
// samples.
func checkHalfLife(errs *configutil.Errors, field string, v float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		errs.Addf(field, "must be a positive number of samples, got %v", v)
	}
}
