package drills

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDrillKill9 kills the agent with SIGKILL at a random moment after it
// is ready — while it scrapes, evaluates, writes its outbox or delivers —
// over and over, while alerts fire and resolve: each iteration switches on
// a new signal and switches off those whose firing notification arrived.
// A last agent then runs until everything settles. No firing or resolved
// notification may be lost, and none may arrive out of sequence.
func TestDrillKill9(t *testing.T) {
	iterations := size(12, 200)
	tg := newTarget(t)
	rc := newReceiver(t)
	rc.delay = func() time.Duration { return randDuration(30 * time.Millisecond) }
	dir, cfg := writeAgentFiles(t, agentConfig(tg, rc.srv.URL, nil))

	var killedAfter time.Duration
	for i := range iterations {
		for id, on := range tg.state() {
			if on && rc.has(id, "firing") {
				tg.set(id, false)
			}
		}
		tg.set(strconv.Itoa(i), true)
		a := startAgent(t, dir, cfg)
		d := randDuration(2 * time.Second)
		killedAfter += d
		time.Sleep(d)
		a.kill()
	}

	a := startAgent(t, dir, cfg)
	settled := settle(tg, rc, true, 2*time.Minute)
	require.True(t, a.alive())
	require.Equal(t, 0, a.stop())
	lost, dup, figs := verdict(t, tg, rc)
	if !settled {
		t.Log("did not settle within 2 minutes")
	}
	report(t, "kill9", fmt.Sprintf("%d SIGKILLs at random points 0-2s after ready (mean %s), %d alerts fired and resolved",
		iterations, (killedAfter/time.Duration(iterations)).Round(time.Millisecond), len(tg.state())), lost, dup, figs...)
}
