package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCurveRate(t *testing.T) {
	day := 40 * time.Second
	surge := Surge{Start: 10 * time.Second, Ramp: 4 * time.Second, Hold: 6 * time.Second, Factor: 5}
	tests := []struct {
		name  string
		curve Curve
		at    time.Duration
		want  float64
	}{
		{"flat", Curve{Base: 50}, 17 * time.Second, 50},
		{"day starts at the mean", Curve{Base: 100, DayLength: day, Amplitude: 0.3}, 0, 100},
		{"midday peak", Curve{Base: 100, DayLength: day, Amplitude: 0.3}, day / 4, 130},
		{"night trough", Curve{Base: 100, DayLength: day, Amplitude: 0.3}, 3 * day / 4, 70},
		{"before surge", Curve{Base: 10, Surge: surge}, 9 * time.Second, 10},
		{"half way up the ramp", Curve{Base: 10, Surge: surge}, 12 * time.Second, 30},
		{"top of the ramp", Curve{Base: 10, Surge: surge}, 14 * time.Second, 50},
		{"holding", Curve{Base: 10, Surge: surge}, 19 * time.Second, 50},
		{"half way down", Curve{Base: 10, Surge: surge}, 22 * time.Second, 30},
		{"after surge", Curve{Base: 10, Surge: surge}, 30 * time.Second, 10},
		{"surge without hold lasts", Curve{Base: 10, Surge: Surge{Start: time.Second, Factor: 5}}, time.Hour, 50},
		{"surge with day curve multiplies", Curve{Base: 100, DayLength: day, Amplitude: 0.3, Surge: Surge{Factor: 2}}, day / 4, 260},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, tt.curve.Rate(tt.at), 1e-9)
		})
	}
}
