package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplayHangPagesOnce replays a recording of one exporter whose
// queue and in-flight gauges, each watched by its own `auto` rule, freeze
// together for three hours on the fourth day (1-minute rows): one of the
// two alerts is sent, the other fires suppressed by it, as the agent
// would page the hang once.
func TestReplayHangPagesOnce(t *testing.T) {
	dir := t.TempDir()
	const perDay = 1440
	from, until := 3*perDay+perDay*10/24, 3*perDay+perDay*13/24
	rows := until + 120
	cols := [][]float64{make([]float64, rows), make([]float64, rows)}
	for k, col := range cols {
		rng := rand.New(rand.NewPCG(uint64(k+1), 6))
		for i := range col {
			col[i] = 100 * (1 + 0.3*math.Sin(2*math.Pi*float64(i)/perDay)) * (1 + 0.03*rng.NormFloat64())
			if i >= from && i < until {
				col[i] = col[from-1]
			}
		}
	}
	var b strings.Builder
	b.WriteString(`time,queue{instance="a"},inflight{instance="a"}` + "\n")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		fmt.Fprintf(&b, "%d,%.4f,%.4f\n", start.Add(time.Duration(i)*time.Minute).Unix(), cols[0][i], cols[1][i])
	}
	csv := filepath.Join(dir, "hang.csv")
	require.NoError(t, os.WriteFile(csv, []byte(b.String()), 0o600))
	ruleFile := filepath.Join(dir, "app.yml")
	require.NoError(t, os.WriteFile(ruleFile, []byte(`groups:
  - name: app
    rules:
      - anomaly: Queue
        expr: queue
        detector: {type: auto}
      - anomaly: Inflight
        expr: inflight
        detector: {type: auto}
`), 0o600))
	code, out, errOut := cli(t, "replay", ruleFile, "--csv", csv, "--interval", "1m")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	hang := start.Add(time.Duration(from) * time.Minute)
	var sent, suppressed []string
	for _, l := range strings.Split(out, "\n") {
		ts, rest, ok := strings.Cut(l, "  ")
		when, err := time.Parse(time.RFC3339, ts)
		if !ok || err != nil || when.Before(hang) || !strings.HasPrefix(strings.TrimSpace(rest), "FIRING") {
			continue
		}
		if strings.Contains(rest, "suppressed_by=") {
			suppressed = append(suppressed, rest)
		} else {
			sent = append(sent, rest)
		}
	}
	require.Len(t, sent, 1, "pages from the hang on:\n%s", out)
	require.Len(t, suppressed, 1, "suppressed from the hang on:\n%s", out)
	paged := strings.Fields(sent[0])[1]
	require.Contains(t, suppressed[0], "suppressed_by="+paged+" (one hang)")
	require.Contains(t, out, "(1 suppressed: not sent)")
}
