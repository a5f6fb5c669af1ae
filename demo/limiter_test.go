package demo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimiter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type req struct {
		at     time.Duration
		client string
		want   bool
	}
	tests := []struct {
		name   string
		global bool
		reqs   []req
	}{
		{
			name: "burst then refill per client",
			reqs: []req{
				{0, "a", true}, {0, "a", true}, {0, "a", false},
				{0, "b", true}, // another client has its own bucket
				{500 * time.Millisecond, "a", true},
				{500 * time.Millisecond, "a", false},
			},
		},
		{
			name:   "global bucket limits every client",
			global: true,
			reqs: []req{
				{0, "a", true}, {0, "b", true}, {0, "c", false}, {0, "d", false},
				{500 * time.Millisecond, "e", true}, {500 * time.Millisecond, "f", false},
			},
		},
		{
			name:   "global table is cleared periodically, letting a burst through",
			global: true,
			reqs: []req{
				{0, "a", true}, {0, "b", true}, {0, "c", false},
				{10 * time.Second, "d", true}, {10 * time.Second, "e", true}, {10 * time.Second, "f", false},
			},
		},
		{
			name: "full table is cleared",
			reqs: []req{
				{0, "a", true}, {0, "a", true}, {0, "a", false},
				{0, "b", true}, {0, "c", true},
				{0, "d", true}, // a fourth key clears the table
				{0, "a", true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 2 tokens/s, burst 2, three keys, cleared every 10 s when global.
			l := newLimiter(2, 2, 3, 10*time.Second)
			l.setGlobal(tt.global, t0)
			for i, r := range tt.reqs {
				require.Equal(t, r.want, l.allow(r.client, t0.Add(r.at)), "request %d (%s at %v)", i, r.client, r.at)
			}
		})
	}
}

func TestLimiterOff(t *testing.T) {
	l := newLimiter(-1, 1, 1, 0)
	for range 100 {
		require.True(t, l.allow("a", time.Time{}))
	}
}
