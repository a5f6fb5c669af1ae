package detect

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/model"
)

// Formatting for the incident-shape explanations. Summaries are read by a
// tired person at 3 a.m.: short numbers with units, no scientific notation.

// shapeNum formats v with about three significant digits and no exponent.
func shapeNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "-∞"
	case math.Abs(v) < 5e-7:
		return "0" // float dust: a learned baseline of "nothing"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	// Round to three significant digits, then print without trailing zeros.
	mag := math.Floor(math.Log10(math.Abs(v)))
	dec := int(2 - mag)
	if dec < 0 {
		dec = 0
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// shapeVal formats v in unit: ratios as percentages, other units appended.
func shapeVal(v float64, unit string) string {
	switch unit {
	case "ratio":
		return shapeNum(v*100) + " %"
	case "":
		return shapeNum(v)
	}
	return shapeNum(v) + " " + unit
}

// shapeSpread formats a ± spread in unit with two significant digits,
// without repeating the unit ("± 0.04", "± 1.2" percentage points).
func shapeSpread(v float64, unit string) string {
	if unit == "ratio" {
		v *= 100
	}
	if v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) < 100 {
		p := math.Pow(10, 1-math.Floor(math.Log10(math.Abs(v))))
		v = math.Round(v*p) / p
	}
	return "± " + shapeNum(v)
}

// shapeDur formats a duration between two Unix-ms timestamps as "40 s",
// "4 min" or "1 h 5 min".
func shapeDur(ms int64) string {
	if ms < 0 {
		ms = 0
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
	case d < time.Hour:
		m := d.Round(30 * time.Second).Minutes()
		return shapeNum(m) + " min"
	}
	h := int(d / time.Hour)
	m := int((d % time.Hour).Round(time.Minute) / time.Minute)
	return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
}

// shapeSignal builds a model.Signal from a baseline and a current value, with
// the band at ±k standard deviations.
func shapeSignal(name, unit string, cur float64, b *shapeBaseline, k, floorRel, floorAbs float64) model.Signal {
	sd := b.sd(floorRel, floorAbs)
	return model.Signal{
		Name: name, Unit: unit, Current: shapeFinite(cur), Expected: shapeFinite(b.mean),
		Lower: shapeFinite(b.mean - k*sd), Upper: shapeFinite(b.mean + k*sd),
	}
}

// shapeFinite replaces NaN and ±Inf, which JSON cannot carry, with 0 or the
// largest float.
func shapeFinite(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}

// shapeRound3 rounds to three significant digits, for figures that go into
// explanations and golden files.
func shapeRound3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// shapeTimes formats a ratio to the baseline as ", 8.3×", or nothing when
// the baseline is about zero and the ratio means nothing.
func shapeTimes(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) || r > 1000 {
		return ""
	}
	return ", " + shapeNum(r) + "×"
}
