package detect

import "math"

// A series timestamped by row number has no clock (see fitClock), and
// without one auto has no time of day. Many such series still repeat a
// day in samples: 24 a day for hourly data, 288 for 5-minute data.
// cycleSearch keeps such a series' samples from the first and looks for
// a cycle in them at the periods of common intervals, each once the
// samples since the warm-up cover three of it. Once one is clear, auto
// gives the series a clock with days of that many samples (see
// setCycle): from then on the time-of-day slices, the day's profile and
// the hour's spikes judge it as they judge a series with times. The
// samples, at most 31 + 3 × 1,440 of them (35 KB), are let go when the
// search ends.

// cyclePeriods are the samples in a day at intervals of an hour, 30,
// 15, 10, 5 minutes and a minute, in ascending order.
var cyclePeriods = [...]int{24, 48, 96, 144, 288, 1440}

const (
	// cycleMinR is the least autocorrelation at the period, and
	// cycleMinGap the least by which it exceeds the autocorrelation at
	// half the period. A cycle is as similar a period apart and unlike
	// itself half a period apart; a smooth or drifting series without one
	// is more similar at the shorter lag, not less.
	cycleMinR   = 0.4
	cycleMinGap = 0.4
	// cycleEpoch is where the clock that a cycle gives a series starts:
	// 2001-01-01 00:00 UTC, a Monday, in Unix ms.
	cycleEpoch = 978_307_200_000
)

// cycleSearch holds the series' samples from its first; the periods
// are tested on them from the sample after the warm-up (from) on.
type cycleSearch struct {
	buf  []float64
	from int
}

// add appends x and tests the periods once the samples since the search
// began cover three of the next one: it returns the least period whose
// cycle is clear, 0 while the search goes on and -1 once the longest
// period has been tested without one.
func (c *cycleSearch) add(x float64) int {
	c.buf = append(c.buf, x)
	n := len(c.buf) - c.from
	for k, p := range cyclePeriods {
		if n != 3*p {
			continue
		}
		// Every period up to p is tested again with all the samples:
		// a cycle that noise hid over three periods may show over more.
		y := detrended(c.buf)
		for _, q := range cyclePeriods[:k+1] {
			if isCycle(y, q) {
				return q
			}
		}
		if k == len(cyclePeriods)-1 {
			return -1
		}
	}
	return 0
}

// isCycle reports whether y repeats every p samples: alike p apart
// (cycleMinR) and much less alike half a period apart (cycleMinGap). A
// cycle within a few per cent of p passes too (one of 300 samples is
// alike 288 apart) and is read as a day of p samples, whose slices then
// drift from it by an hour in two days.
func isCycle(y []float64, p int) bool {
	r := autocorrelation(y, p)
	return r >= cycleMinR && r-autocorrelation(y, p/2) >= cycleMinGap
}

// detrended returns y less its least-squares line, so that a rise over
// the samples is not read as their being alike at every lag.
func detrended(y []float64) []float64 {
	n := float64(len(y))
	mx := (n - 1) / 2
	my, sxy, sxx := 0.0, 0.0, 0.0
	for _, v := range y {
		my += v / n
	}
	for i, v := range y {
		d := float64(i) - mx
		sxy += d * (v - my)
		sxx += d * d
	}
	b := 0.0
	if sxx > 0 {
		b = sxy / sxx
	}
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = v - my - b*(float64(i)-mx)
	}
	return out
}

// autocorrelation is y's (mean 0) correlation with itself lag samples
// apart, scaled for the pairs a lag loses; 0 for a constant y.
func autocorrelation(y []float64, lag int) float64 {
	var num, den float64
	for i, v := range y {
		den += v * v
		if i >= lag {
			num += v * y[i-lag]
		}
	}
	if den == 0 || !finite(den) || lag >= len(y) {
		return 0
	}
	r := num / den * float64(len(y)) / float64(len(y)-lag)
	if math.IsNaN(r) {
		return 0
	}
	return r
}

// searchCycle adds x to the search under way, and ends it when a cycle
// is found (see setCycle) or none can be.
func (a *Auto) searchCycle(x float64) {
	switch p := a.cycle.add(x); {
	case p > 0:
		a.setCycle(p)
	case p < 0:
		a.cycle = nil
	}
}

// setCycle gives a series without a clock one with days of p samples:
// sample k is at cycleEpoch + k × day/p. The detector's state becomes
// what it would be had the series come with that clock: a detector
// with it is run over every sample so far, and takes this one's place.
// The verdicts already given stay as they were.
func (a *Auto) setCycle(p int) {
	buf := a.cycle.buf
	b := NewAuto(a.cfg)
	b.synthStep = dayMs / int64(p)
	for _, x := range buf {
		b.Observe(0, x)
	}
	*a = *b
}
