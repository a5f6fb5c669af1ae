package collectors

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFileSDRead(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		pattern string
		want    []StaticConfig
	}{
		{
			name:    "json and yaml, sorted by file",
			pattern: "*.*",
			files: map[string]string{
				"a.json": `[{"targets": ["h1:80", "h2:80"], "labels": {"env": "prod"}}]`,
				"b.yml":  "- targets: [h3:9100]\n",
			},
			want: []StaticConfig{{Targets: []string{"h1:80", "h2:80"}, Labels: map[string]string{"env": "prod"}}, {Targets: []string{"h3:9100"}}},
		},
		{
			name:    "a bad file contributes nothing until it is good",
			pattern: "*.json",
			files:   map[string]string{"a.json": `[{"targets": ["no-port"]}]`, "b.json": `[{"targets": ["h:1"]}]`},
			want:    []StaticConfig{{Targets: []string{"h:1"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(c), 0o600))
			}
			d := newFileSD([]FileSDConfig{{Files: []string{filepath.Join(dir, tc.pattern)}}}, slog.New(slog.DiscardHandler))
			require.Equal(t, tc.want, d.read())
		})
	}
}

func TestFileSDKeepsLastGoodAndDropsDeleted(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "t.json")
	require.NoError(t, os.WriteFile(f, []byte(`[{"targets": ["h:1"]}]`), 0o600))
	d := newFileSD([]FileSDConfig{{Files: []string{filepath.Join(dir, "*.json")}}}, slog.New(slog.DiscardHandler))
	want := []StaticConfig{{Targets: []string{"h:1"}}}
	require.Equal(t, want, d.read())
	require.NoError(t, os.WriteFile(f, []byte(`[{"targets": `), 0o600)) // half-written
	require.Equal(t, want, d.read())
	require.NoError(t, os.Remove(f))
	require.Empty(t, d.read())
}

func TestFileSDWatch(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "t.yml")
	require.NoError(t, os.WriteFile(f, []byte("- targets: [a:1]\n"), 0o600))
	// A long refresh interval: only the file watch can deliver the change.
	d := newFileSD([]FileSDConfig{{Files: []string{filepath.Join(dir, "*.yml")}, RefreshInterval: time.Hour}}, slog.New(slog.DiscardHandler))
	updates := make(chan []StaticConfig, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.run(ctx, func(g []StaticConfig) { updates <- g })
	}()
	wait := func() []StaticConfig {
		select {
		case g := <-updates:
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("no update from file_sd")
			return nil
		}
	}
	require.Equal(t, []StaticConfig{{Targets: []string{"a:1"}}}, wait())
	// Replace the file as editors do: write a temp file and rename it.
	tmp := filepath.Join(dir, "t.yml.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte("- targets: [b:2]\n"), 0o600))
	require.NoError(t, os.Rename(tmp, f))
	require.Equal(t, []StaticConfig{{Targets: []string{"b:2"}}}, wait())
	cancel()
	<-done
}
