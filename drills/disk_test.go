package drills

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mountTmpfs mounts a tmpfs of size bytes at dir, or skips the drill when
// the machine does not let this process mount (not root, no CAP_SYS_ADMIN).
// Under CI=true (which runs as root) it fails instead: a drill that
// silently stops running proves nothing.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs for the data directory (needs root and CAP_SYS_ADMIN): %v: %s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (required under CI=true)")
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func remount(t *testing.T, dir, mode string) {
	t.Helper()
	out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// fill writes a file into dir until the filesystem is full and returns its
// path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "drill-filler")
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling: %v", err)
			break
		}
	}
	// Fill the last partial block too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return p
}

// TestDrillDataDir runs the agent on a data directory that becomes full
// (ENOSPC) and later read-only while alerts fire and resolve. The agent must
// keep running, evaluating and notifying, and recover once the disk is
// writable again: nothing lost.
func TestDrillDataDir(t *testing.T) {
	phase := time.Duration(size(5, 20)) * time.Second
	tg := newTarget(t)
	rc := newReceiver(t)
	dir, cfg := writeAgentFiles(t, agentConfig(tg, rc.srv.URL, map[string]string{"@SNAPSHOT@": "1s"}))
	state := filepath.Join(dir, "state")
	mountTmpfs(t, state, 8<<20)
	a := startAgent(t, dir, cfg)
	tg.set("before", true)
	settleOrLog(t, tg, rc, false, time.Minute, "settle")

	unhealthy := 0
	run := func(name string, n int) {
		for i := range n {
			tg.set(fmt.Sprintf("%s%d", name, i), true)
		}
		end := time.Now().Add(phase)
		for time.Now().Before(end) {
			for id, on := range tg.state() {
				if on && rc.has(id, "firing") {
					tg.set(id, false)
				}
			}
			if !a.healthy() {
				unhealthy++
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	filler := fill(t, state)
	run("full", 3)
	deliveredWhileFull := len(rc.deliveries())
	require.True(t, a.alive(), "agent died on a full disk:\n%s", a.logText())
	require.NoError(t, os.Remove(filler))
	settleOrLog(t, tg, rc, true, time.Minute, "alerts did not settle after the disk was freed")

	// A mount cannot turn read-only while the agent holds files open for
	// writing (EBUSY), so the agent is restarted on the read-only disk.
	errLogs := len(a.logsWith("save rule state")) + len(a.logsWith("save rule state before notifying"))
	require.Equal(t, 0, a.stop())
	remount(t, state, "ro")
	ro := launch(t, dir, cfg)
	roOutcome := ""
	if err := ro.waitReady(30 * time.Second); err != nil {
		<-ro.done
		require.NotEqual(t, 0, ro.cmd.ProcessState.ExitCode())
		logs := ro.logText()
		require.Contains(t, logs, "read-only file system", "the error says why")
		require.Contains(t, logs, state, "the error names the directory")
		roOutcome = "refused to start with an error naming the directory"
	} else {
		a = ro
		run("ro", 3)
		require.True(t, a.alive(), "agent died on a read-only disk:\n%s", a.logText())
		require.Equal(t, 0, a.stop())
		roOutcome = "ran"
	}
	remount(t, state, "rw")
	a = startAgent(t, dir, cfg)
	settleOrLog(t, tg, rc, true, time.Minute, "alerts did not settle after the disk was writable again")

	require.Equal(t, 0, a.stop())
	lost, dup, figs := verdict(t, tg, rc)
	figs = append(figs, fmt.Sprintf("%d deliveries before the disk was freed", deliveredWhileFull),
		fmt.Sprintf("%d rule-state save errors logged", errLogs), fmt.Sprintf("%d failed health checks", unhealthy))
	report(t, "data-dir", fmt.Sprintf("data dir full (ENOSPC, 8 MiB tmpfs) for %s while %d alerts fired and resolved; restarted on it read-only: %s", phase, len(tg.state()), roOutcome),
		lost+timed(unhealthy), dup, figs...)
}
