package main

import (
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
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
