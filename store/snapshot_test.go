package store

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
)

func fillForSnapshot(t *testing.T, s *Store, base int64) {
	t.Helper()
	app := s.Appender()
	for i := range 5 {
		lset := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i), "weird", "a\"b\n\xff")
		for k := range int64(300) {
			_, err := app.Append(SeriesRef{}, lset, base+k*1000, float64(k*int64(i)))
			require.NoError(t, err)
		}
	}
	_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "special"), base, math.Float64frombits(value.StaleNaN))
	require.NoError(t, err)
	_, err = app.Append(SeriesRef{}, labels.FromStrings("__name__", "special"), base+1000, math.Inf(-1))
	require.NoError(t, err)
	app.Commit()
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store.snapshot")
	base := time.Now().UnixMilli() - 10*60*1000
	src, _ := newStore(t, DefaultConfig())
	fillForSnapshot(t, src, base)
	require.NoError(t, src.WriteSnapshot(file))

	dst, err := New(Options{Config: DefaultConfig(), SnapshotFile: file, Metrics: metrics.NewSet()})
	require.NoError(t, err)
	all := labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")
	want := readAll(t, src, math.MinInt64, math.MaxInt64, all)
	got := readAll(t, dst, math.MinInt64, math.MaxInt64, all)
	require.Len(t, got, len(want))
	for k, w := range want {
		requireSamples(t, w, got[k])
	}
	require.Equal(t, src.Stats(), dst.Stats())

	// Appends continue after the restored samples, in a new head chunk.
	app := dst.Appender()
	lset := labels.FromStrings("__name__", "m", "i", "1", "weird", "a\"b\n\xff")
	_, err = app.Append(SeriesRef{}, lset, base+300*1000, 300)
	require.NoError(t, err)
	_, err = app.Append(SeriesRef{}, lset, base+1000, 1)
	require.NoError(t, err)
	require.Equal(t, 1, app.Commit(), "the restored last timestamp still rejects out-of-order samples")
	got = readAll(t, dst, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "1"))
	require.Len(t, got[lset.String()], 301)
	require.Equal(t, 300.0, got[lset.String()][300].v)
}

func TestSnapshotBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	src, _ := newStore(t, DefaultConfig())
	fillForSnapshot(t, src, time.Now().UnixMilli()-60_000)
	require.NoError(t, src.WriteSnapshot(good))
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	flipped := append([]byte(nil), b...)
	flipped[len(flipped)/2] ^= 0x40

	tests := []struct {
		name    string
		content []byte // nil: no file
		series  int
		wantErr string
	}{
		{name: "missing file", series: 0},
		{name: "good", content: b, series: 6},
		{name: "truncated", content: b[:len(b)/2], wantErr: "checksum"},
		{name: "bit flip", content: flipped, wantErr: "checksum"},
		{name: "foreign file", content: []byte("hello world, not a snapshot"), wantErr: "not a store snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "store.snapshot")
			if tc.content != nil {
				require.NoError(t, os.WriteFile(file, tc.content, 0o600))
			}
			s, _ := newStore(t, DefaultConfig())
			err := s.LoadSnapshot(file)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.series, s.NumSeries())
			// New never fails on a bad snapshot: it starts empty.
			s2, err := New(Options{Config: DefaultConfig(), SnapshotFile: file})
			require.NoError(t, err)
			require.Equal(t, tc.series, s2.NumSeries())
		})
	}
}

func TestSnapshotRetentionAndLimit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "store.snapshot")
	src, _ := newStore(t, DefaultConfig())
	app := src.Appender()
	now := time.Now().UnixMilli()
	for i := range 4 {
		ts := now - int64(i)*40*60*1000 // 0, 40, 80, 120 minutes ago
		_, err := app.Append(SeriesRef{}, labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)), ts, 1)
		require.NoError(t, err)
	}
	app.Commit()
	require.NoError(t, src.WriteSnapshot(file))
	tests := []struct {
		name   string
		cfg    Config
		series int
	}{
		{"retention drops old series", Config{Retention: time.Hour, MaxSeries: 10}, 2},
		{"series limit", Config{Retention: 3 * time.Hour, MaxSeries: 3}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Config: tc.cfg, SnapshotFile: file})
			require.NoError(t, err)
			require.Equal(t, tc.series, s.NumSeries())
		})
	}
}

func TestRunWritesSnapshot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "store.snapshot")
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Options{Config: DefaultConfig(), SnapshotFile: file, SnapshotInterval: time.Minute})
		require.NoError(t, err)
		app := s.Appender()
		_, err = app.Append(SeriesRef{}, labels.FromStrings("__name__", "m"), time.Now().UnixMilli(), 1)
		require.NoError(t, err)
		app.Commit()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(61 * time.Second) // the periodic snapshot
		synctest.Wait()
		_, err = os.Stat(file)
		require.NoError(t, err)
		require.NoError(t, os.Remove(file))
		cancel() // and the one at exit
		require.NoError(t, <-done)
		restored, err := New(Options{Config: DefaultConfig(), SnapshotFile: file})
		require.NoError(t, err)
		require.Equal(t, 1, restored.NumSeries())
	})
}
