package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDrain(t *testing.T) {
	tests := []struct {
		name     string
		events   func(done chan<- error, sigs chan<- os.Signal)
		wantCode int // -1: no error
		wantErr  string
	}{
		{
			name:     "clean stop",
			events:   func(done chan<- error, _ chan<- os.Signal) { done <- nil },
			wantCode: -1,
		},
		{
			name:     "subsystem error is returned",
			events:   func(done chan<- error, _ chan<- os.Signal) { done <- errors.New("outbox: flush failed") },
			wantCode: 1,
			wantErr:  "outbox: flush failed",
		},
		{
			name: "second signal exits at once; SIGHUP does not",
			events: func(_ chan<- error, sigs chan<- os.Signal) {
				sigs <- syscall.SIGHUP
				sigs <- syscall.SIGINT
			},
			wantCode: 1,
			wantErr:  "second signal (interrupt) during shutdown",
		},
		{
			name:     "timeout",
			events:   func(chan<- error, chan<- os.Signal) {},
			wantCode: 1,
			wantErr:  "shutdown did not finish within shutdown_timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				done := make(chan error, 1)
				sigs := make(chan os.Signal, 4)
				tt.events(done, sigs)
				start := time.Now()
				err := drain(slog.New(slog.DiscardHandler), done, sigs, 4*time.Second)
				if tt.wantCode < 0 {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, tt.wantErr)
				require.Equal(t, tt.wantCode, exitStatus(err, &discard{}))
				if tt.name == "timeout" {
					require.Equal(t, 4*time.Second, time.Since(start), "waits exactly shutdown_timeout (fake clock)")
				}
			})
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestCheckDataDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, checkDataDir(dir+"/a/b"), "creates missing directories")
	require.DirExists(t, dir+"/a/b")
	entries, err := os.ReadDir(dir + "/a/b")
	require.NoError(t, err)
	require.Empty(t, entries, "the write probe is removed")

	file := dir + "/file"
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	require.ErrorContains(t, checkDataDir(file), "data_dir")

	t.Run("read-only", func(t *testing.T) {
		ro := dir + "/ro"
		require.NoError(t, os.Mkdir(ro, 0o500))
		if os.Geteuid() == 0 {
			// Root writes through permissions: make the directory a
			// read-only mount instead.
			out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro).CombinedOutput()
			if err != nil {
				msg := fmt.Sprintf("root, but cannot mount a read-only tmpfs (needs CAP_SYS_ADMIN): %v: %s", err, out)
				if os.Getenv("CI") == "true" {
					t.Fatal(msg + " (required under CI=true)")
				}
				t.Skip(msg)
			}
			t.Cleanup(func() { _ = exec.Command("umount", "-l", ro).Run() })
		}
		err := checkDataDir(ro)
		require.ErrorContains(t, err, "data_dir "+ro+" is not writable")
	})
}
