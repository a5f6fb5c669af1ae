package drills

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDrillBadTargets scrapes, next to a good target, one that hangs, one
// that sends 100 MB, and one that sends random bytes. The bad targets must
// be down (up 0) without harming the rest: the good target's alerts fire
// and resolve, no evaluation is missed, the agent stays healthy and its
// memory bounded.
func TestDrillBadTargets(t *testing.T) {
	run := time.Duration(size(8, 60)) * time.Second
	var bigSent, garbageSent, hangs atomic.Int64

	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hangs.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	line := []byte(strings.Repeat("drill_filler 1\n", 4096))
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for sent := 0; sent < 100<<20; sent += len(line) {
			n, err := w.Write(line)
			bigSent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(big.Close)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := make([]byte, 64<<10)
		for i := range b {
			b[i] = byte(rand.Uint32())
		}
		n, _ := w.Write(b)
		garbageSent.Add(int64(n))
	}))
	t.Cleanup(garbage.Close)

	tg := newTarget(t)
	rc := newReceiver(t)
	jobs := ""
	for _, j := range []struct{ name, url string }{{"hang", hang.URL}, {"big", big.URL}, {"garbage", garbage.URL}} {
		jobs += fmt.Sprintf("    - job_name: %s\n      static_configs: [{targets: [%s]}]\n", j.name, hostPort(j.url))
	}
	dir, cfg := writeAgentFiles(t, agentConfig(tg, rc.srv.URL, map[string]string{"@EXTRA_JOBS@": jobs}))
	a := startAgent(t, dir, cfg)

	end := time.Now().Add(run)
	unhealthy, maxRSS, i := 0, 0, 0
	for time.Now().Before(end) {
		tg.set(fmt.Sprintf("s%d", i), true)
		i++
		for id, on := range tg.state() {
			if on && rc.has(id, "firing") {
				tg.set(id, false)
			}
		}
		if !a.healthy() {
			unhealthy++
		}
		maxRSS = max(maxRSS, a.rssKiB())
		time.Sleep(500 * time.Millisecond)
	}
	settleOrLog(t, tg, rc, true, time.Minute, "alerts of the good target did not settle")

	up := query(t, a, "up")
	require.Equal(t, "1", up["drill"], "the good target is up")
	for _, job := range []string{"hang", "big", "garbage"} {
		require.Equal(t, "0", up[job], "target %s is down", job)
	}
	missed := a.metric("seismo_rules_group_iterations_missed_total")
	require.Equal(t, 0, a.stop())
	lost, dup, figs := verdict(t, tg, rc)
	figs = append(figs, fmt.Sprintf("max RSS %d MiB", maxRSS/1024), fmt.Sprintf("%.0f evaluations missed", missed),
		fmt.Sprintf("%d failed health checks", unhealthy))
	report(t, "bad-targets", fmt.Sprintf("scraped for %s a target that hangs (%d scrapes), one sending 100 MB (%d MiB sent in all), one sending random bytes (%d KiB), next to a good one with %d alerts",
		run, hangs.Load(), bigSent.Load()>>20, garbageSent.Load()>>10, len(tg.state())), lost+timed(int(missed)+unhealthy), dup, figs...)
	require.Less(t, maxRSS, 512<<10, "RSS stays bounded")
}

// query runs an instant PromQL query against the agent and returns the
// value of each result series by its job label.
func query(t *testing.T, a *agent, q string) map[string]string {
	t.Helper()
	resp, err := http.Get(a.url("/api/v1/query?query=" + url.QueryEscape(q)))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	out := map[string]string{}
	for _, s := range r.Data.Result {
		out[s.Metric["job"]] = fmt.Sprint(s.Value[1])
	}
	return out
}
