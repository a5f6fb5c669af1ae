package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/draft"
	"github.com/seismo-agent/seismo/notify/file"
	"github.com/seismo-agent/seismo/notify/internal/notifytest"
)

func ctx() context.Context {
	return notify.WithGroup(context.Background(), notify.Group{Key: "k", Receiver: "audit", Labels: map[string]string{"alertname": "LatencyUpCPUFlat"}})
}

func TestStdoutGolden(t *testing.T) {
	var buf bytes.Buffer
	n := file.New(file.Config{Path: file.Stdout}, "", &buf, func() time.Time { return notifytest.T0 })
	_, err := n.Notify(ctx(), notifytest.Firing())
	require.NoError(t, err)
	_, err = n.NotifyDraft(ctx(), &draft.Draft{IncidentID: "i", Phase: draft.PhaseMonitoring, Title: "t", Text: "x", CreatedAt: notifytest.T0})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	notifytest.Golden(t, "notification.json", []byte(lines[0]))
	notifytest.Golden(t, "draft.json", []byte(lines[1]))
}

func TestAppendsToFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	n := file.New(file.Config{Path: p}, "", nil, nil)
	for range 3 {
		retry, err := n.Notify(ctx(), notifytest.Firing(), notifytest.Resolved())
		require.NoError(t, err)
		require.False(t, retry)
	}
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 3)
	var l file.Line
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &l))
	require.Equal(t, "notification", l.Kind)
	require.Len(t, l.Notification.Alerts, 2)

	bad := file.New(file.Config{Path: filepath.Join(t.TempDir(), "missing", "x.jsonl")}, "", nil, nil)
	retry, err := bad.Notify(ctx(), notifytest.Firing())
	require.Error(t, err)
	require.True(t, retry)
}

func TestCancelled(t *testing.T) {
	c, cancel := context.WithCancel(ctx())
	cancel()
	var buf bytes.Buffer
	_, err := file.New(file.Config{Path: file.Stdout}, "", &buf, nil).Notify(c, notifytest.Firing())
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, buf.Len())
}
