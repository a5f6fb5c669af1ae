package main

import (
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// sdNotify sends state to systemd. Without NOTIFY_SOCKET (not started by
// systemd with Type=notify) it does nothing.
func sdNotify(state string) {
	_, _ = daemon.SdNotify(false, state)
}

// sdWatchdog returns the watchdog interval systemd asks for (WatchdogSec=),
// or 0 when the watchdog is off.
func sdWatchdog() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0
	}
	return d
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which systemd wants with
// RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano() / 1000
}
