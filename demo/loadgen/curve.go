package loadgen

import (
	"math"
	"time"
)

// Curve is the request rate over time: a base rate shaped like a day of
// traffic in compressed time, times a surge multiplier. It is a pure
// function of the time since the start of the run.
type Curve struct {
	// Base is the mean rate in requests per second.
	Base float64
	// DayLength is the length of one compressed day; 0 keeps the rate flat.
	DayLength time.Duration
	// Amplitude is the day's swing as a fraction of Base (0.3: ±30 %).
	Amplitude float64
	// Surge multiplies the rate for a while; the zero value does nothing.
	Surge Surge
}

// Surge is a traffic surge: from Start the rate ramps linearly to Factor
// times its normal value within Ramp, holds for Hold (0: until the end of the
// run), then ramps back down within Ramp.
type Surge struct {
	Start  time.Duration
	Ramp   time.Duration
	Hold   time.Duration
	Factor float64
}

// Multiplier returns the surge factor at t since the start of the run.
func (s Surge) Multiplier(t time.Duration) float64 {
	if s.Factor <= 0 || s.Factor == 1 || t < s.Start {
		return 1
	}
	frac := func(d time.Duration) float64 {
		if s.Ramp <= 0 {
			return 1
		}
		return min(1, float64(d)/float64(s.Ramp))
	}
	t -= s.Start
	if t < s.Ramp {
		return 1 + (s.Factor-1)*frac(t)
	}
	t -= s.Ramp
	if s.Hold <= 0 || t < s.Hold {
		return s.Factor
	}
	t -= s.Hold
	return 1 + (s.Factor-1)*(1-frac(t))
}

// Rate returns the request rate in requests per second at t since the start
// of the run. It never returns less than zero.
func (c Curve) Rate(t time.Duration) float64 {
	r := c.Base
	if c.DayLength > 0 && c.Amplitude != 0 {
		// Start at the morning mean, rising towards the midday peak.
		r *= 1 + c.Amplitude*math.Sin(2*math.Pi*float64(t)/float64(c.DayLength))
	}
	return max(0, r*c.Surge.Multiplier(t))
}
