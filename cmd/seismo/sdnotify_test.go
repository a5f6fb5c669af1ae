package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBinaryTalksToSystemd runs the binary with a real NOTIFY_SOCKET, as
// systemd does for Type=notify with WatchdogSec=, and reads what it says:
// READY=1 once serving, WATCHDOG=1 pings, RELOADING=1 then READY=1 around a
// SIGHUP reload, and STOPPING=1 on SIGTERM.
func TestBinaryTalksToSystemd(t *testing.T) {
	bin := buildSeismo(t)
	// Unix socket paths are limited to ~108 bytes: keep it short.
	dir, err := os.MkdirTemp("", "sd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })

	msgs := make(chan string, 256)
	go func() {
		defer close(msgs)
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	// next returns the next message that starts with prefix, skipping
	// others (watchdog pings arrive at any time).
	next := func(prefix string) string {
		t.Helper()
		deadline := time.NewTimer(time.Minute) // hang guard, not a timing assertion
		defer deadline.Stop()
		for {
			select {
			case m := <-msgs:
				if strings.HasPrefix(m, prefix) {
					return m
				}
			case <-deadline.C:
				t.Fatalf("no %q from seismo within a minute", prefix)
			}
		}
	}

	p := startSeismo(t, bin, t.TempDir(), []string{
		"NOTIFY_SOCKET=" + sock,
		"WATCHDOG_USEC=200000", // 200ms: pings every 100ms
		"SEISMO_HTTP__LISTEN_ADDRESS=127.0.0.1:0",
		"SEISMO_LOG__FORMAT=json",
	}, "run")
	require.Equal(t, "READY=1", next("READY=1"))
	ready := p.waitLog(t, "agent ready")
	code, _ := do(t, "GET", "http://"+ready["listen_address"].(string)+"/-/ready")
	require.Equal(t, 200, code, "READY=1 is sent only once /-/ready says so")
	next("WATCHDOG=1")
	next("WATCHDOG=1")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	reloading := next("RELOADING=1")
	require.Contains(t, reloading, "MONOTONIC_USEC=")
	next("READY=1")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	next("STOPPING=1")
	require.Equal(t, 0, p.wait(t))
	conn.Close()
	for range msgs {
	}
}
