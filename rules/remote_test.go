package rules

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/datasource"
	"github.com/seismo-agent/seismo/internal/model"
)

// importOpenMetrics writes an OpenMetrics recording (timestamps in
// seconds) to VictoriaMetrics' Prometheus text import (milliseconds).
func importOpenMetrics(t *testing.T, vm string, rec []byte) {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(rec))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		sec, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err)
		out.WriteString(line[:i])
		out.WriteString(" ")
		out.WriteString(strconv.FormatInt(int64(sec*1000+0.5), 10))
		out.WriteByte('\n')
	}
	require.NoError(t, sc.Err())
	resp, err := http.Post(vm+"/api/v1/import/prometheus", "text/plain", &out)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get(vm + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
}

// TestBuiltinPackOnVictoriaMetrics runs the built-in pack, unchanged,
// against a real VictoriaMetrics holding each outage recording, with a
// cold agent that first evaluates a minute into the outage: the warm start
// fills the composite detectors from range queries, so the right alert
// fires at that first evaluation.
func TestBuiltinPackOnVictoriaMetrics(t *testing.T) {
	vm := startVictoriaMetrics(t)
	for _, tt := range []struct{ shape, job, want string }{
		{"saturation", "sat", "SaturationWithoutCPU"},
		{"storm", "storm", "RateLimitStorm"},
	} {
		t.Run(tt.shape, func(t *testing.T) {
			// The outage begins six minutes ago; the recording goes on
			// into the future, which instant queries never read.
			start := time.Now().Truncate(15 * time.Second).Add(-recNormal - 6*time.Minute)
			rec, onset := genRecording(tt.shape, start)
			// One job label per recording keeps them apart in one server.
			rec = bytes.ReplaceAll(rec, []byte("{"), []byte(`{job="`+tt.job+`",`))
			for _, name := range []string{"process_cpu_seconds_total", "http_server_queue_length", "http_server_requests_in_flight"} {
				rec = bytes.ReplaceAll(rec, []byte(name+" "), []byte(name+`{job="`+tt.job+`"} `))
			}
			importOpenMetrics(t, vm, rec)
			src, err := datasource.NewRemote(datasource.RemoteConfig{Name: "vm", URL: vm, Timeout: time.Minute})
			require.NoError(t, err)
			defer src.Close()
			rec2 := &recorder{}
			m, err := NewManager(Options{Source: src, Notify: rec2.notify, OnTransition: rec2.onTransition})
			require.NoError(t, err)
			cfg := DefaultConfig()
			cfg.WatchFiles = false
			cfg.Builtin.Metrics.Selector = `job="` + tt.job + `"`
			require.NoError(t, m.ApplyConfig(cfg))
			at := onset.Add(time.Minute)
			require.NoError(t, m.EvalGroups(context.Background(), at))
			var fired []string
			for _, a := range rec2.take() {
				if a.State == model.StateFiring {
					fired = append(fired, a.Name())
				}
			}
			require.Contains(t, fired, tt.want, "the first evaluation of a cold agent pages; transitions: %v", rec2.transitions)
		})
	}
}
