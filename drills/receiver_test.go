package drills

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDrillReceiverFaults runs the agent against a webhook receiver that in
// turn answers 500, hangs past the webhook timeout, and answers 200 with a
// body trickled one byte at a time past the timeout, while alerts fire.
// After each fault ends, every alert must arrive firing and, once switched
// off, resolved; the agent must stay healthy throughout.
func TestDrillReceiverFaults(t *testing.T) {
	phase := time.Duration(size(4, 20)) * time.Second
	tg := newTarget(t)
	rc := newReceiver(t)
	dir, cfg := writeAgentFiles(t, agentConfig(tg, rc.srv.URL, map[string]string{"@WEBHOOK_TIMEOUT@": "1s"}))
	a := startAgent(t, dir, cfg)

	faults := []struct {
		name  string
		fault func(w http.ResponseWriter, r *http.Request, call int) bool
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			http.Error(w, "drill: internal error", http.StatusInternalServerError)
			return true
		}},
		{"hang past the timeout", func(_ http.ResponseWriter, r *http.Request, _ int) bool {
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
			return true
		}},
		{"200 with a 1-byte trickle past the timeout", func(w http.ResponseWriter, r *http.Request, _ int) bool {
			if err := rc.record(r); err != nil { // accepted: the answer is 200
				http.Error(w, err.Error(), http.StatusBadRequest)
				return true
			}
			w.WriteHeader(http.StatusOK)
			for range 20 {
				if _, err := w.Write([]byte("x")); err != nil {
					break
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return true
				case <-time.After(200 * time.Millisecond):
				}
			}
			return true
		}},
	}
	var did []string
	unhealthy := 0
	for i, f := range faults {
		var served atomic.Int64
		rc.setFault(func(w http.ResponseWriter, r *http.Request, call int) bool {
			served.Add(1)
			return f.fault(w, r, call)
		})
		for j := range 3 {
			tg.set(fmt.Sprintf("f%d-%d", i, j), true)
		}
		end := time.Now().Add(phase)
		for time.Now().Before(end) {
			if !a.healthy() {
				unhealthy++
			}
			time.Sleep(250 * time.Millisecond)
		}
		rc.setFault(nil)
		settleOrLog(t, tg, rc, true, time.Minute, "after the receiver recovered from "+f.name)
		did = append(did, fmt.Sprintf("%s for %s (%d requests)", f.name, phase, served.Load()))
	}
	require.True(t, a.alive())
	require.Equal(t, 0, a.stop())
	lost, dup, figs := verdict(t, tg, rc)
	figs = append(figs, fmt.Sprintf("%d failed health checks during faults", unhealthy))
	report(t, "receiver-faults", "receiver answered "+strings.Join(did, ", then "), lost+timed(unhealthy), dup, figs...)
}
