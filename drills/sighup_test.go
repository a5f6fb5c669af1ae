package drills

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrillSIGHUPStorm sends SIGHUP in quick succession while alerts fire
// and resolve; half the storm also rewrites the config (a changed
// resend_delay), so reloads really rebuild. Every alert must still arrive
// firing and resolved exactly in sequence, no evaluation may be missed,
// and the agent must end healthy with a successful reload.
func TestDrillSIGHUPStorm(t *testing.T) {
	hups := size(100, 1000)
	tg := newTarget(t)
	rc := newReceiver(t)
	cfgText := agentConfig(tg, rc.srv.URL, nil)
	dir, cfg := writeAgentFiles(t, cfgText)
	a := startAgent(t, dir, cfg)
	for i := range 5 {
		tg.set("pre"+strconv.Itoa(i), true)
	}
	settleOrLog(t, tg, rc, false, time.Minute, "alerts did not fire before the storm")

	start := time.Now()
	unhealthy := 0
	for i := range hups {
		if i%10 == 0 {
			tg.set("storm"+strconv.Itoa(i/10), true)
			for id, on := range tg.state() {
				if on && rc.has(id, "firing") && id[:3] == "pre" {
					tg.set(id, false)
				}
			}
			if !a.healthy() {
				unhealthy++
			}
		}
		if i == hups/2 {
			writeFile(t, cfg, cfgText+"\n# changed by the drill\n")
		}
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGHUP))
		time.Sleep(time.Duration(5+i%15) * time.Millisecond)
	}
	storm := time.Since(start)
	settleOrLog(t, tg, rc, true, 2*time.Minute, "alerts did not settle after the storm")
	require.True(t, a.alive(), "agent died in the storm")
	require.True(t, a.healthy())
	if !assert.Eventually(t, func() bool { return a.metric("seismo_config_last_reload_successful") == 1 }, 30*time.Second, 100*time.Millisecond,
		"no successful reload after the storm") {
		a.dumpStacks(t)
		t.FailNow()
	}
	missed := a.metric("seismo_rules_group_iterations_missed_total")
	reloads := a.metric("seismo_config_reloads_total")
	require.Equal(t, 0, a.stop())
	lost, dup, figs := verdict(t, tg, rc)
	figs = append(figs, fmt.Sprintf("%.0f reloads done", reloads), fmt.Sprintf("%.0f evaluations missed", missed),
		fmt.Sprintf("%d failed health checks", unhealthy))
	lost += timed(int(missed)) // a missed evaluation is a lost one
	report(t, "sighup-storm", fmt.Sprintf("%d SIGHUPs in %s while %d alerts fired and resolved", hups, storm.Round(time.Millisecond), len(tg.state())),
		lost+timed(unhealthy), dup, figs...)
}
