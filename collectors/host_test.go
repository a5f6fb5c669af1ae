package collectors

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func sampleMap(samples []Sample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		out[s.Labels.String()] = s.Value
	}
	return out
}

func TestHostCollector(t *testing.T) {
	tests := []struct {
		name    string
		proc    string
		want    map[string]float64
		absent  []string
		samples int
	}{
		{
			name: "with PSI",
			proc: "testdata/v1/proc",
			want: map[string]float64{
				`{__name__="node_cpu_seconds_total", cpu="0", mode="user"}`:   6,
				`{__name__="node_cpu_seconds_total", cpu="1", mode="idle"}`:   250,
				`{__name__="node_load1"}`:                                     1.5,
				`{__name__="node_load15"}`:                                    0.25,
				`{__name__="node_memory_MemAvailable_bytes"}`:                 4000000 * 1024,
				`{__name__="node_pressure_cpu_waiting_seconds_total"}`:        2.5,
				`{__name__="node_pressure_io_stalled_seconds_total"}`:         0.5,
				`{__name__="node_pressure_memory_waiting_seconds_total"}`:     0.3,
				`{__name__="node_cpu_seconds_total", cpu="0", mode="iowait"}`: 0.2,
			},
			samples: 2*8 + 3 + 2 + 6,
		},
		{
			name:    "kernel without PSI",
			proc:    "testdata/v2/proc",
			want:    map[string]float64{`{__name__="node_load5"}`: 0.75},
			absent:  []string{`{__name__="node_pressure_cpu_waiting_seconds_total"}`},
			samples: 2*8 + 3 + 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHostCollector(tc.proc)
			require.NoError(t, err)
			got, err := h.Collect(context.Background(), time.Unix(0, 0))
			require.NoError(t, err)
			m := sampleMap(got)
			require.Len(t, got, tc.samples)
			for k, v := range tc.want {
				require.Contains(t, m, k)
				require.InDelta(t, v, m[k], 1e-9, k)
			}
			for _, k := range tc.absent {
				require.NotContains(t, m, k)
			}
		})
	}
}

func TestHostCollectorMissingProc(t *testing.T) {
	h, err := NewHostCollector(t.TempDir())
	require.NoError(t, err)
	_, err = h.Collect(context.Background(), time.Unix(0, 0))
	require.Error(t, err)
	require.Equal(t, ReasonCollect, reasonOf(err))
}

func TestCgroupCollector(t *testing.T) {
	tests := []struct {
		name, proc, sys, path string
		want                  map[string]float64
		wantErr               bool
	}{
		{
			name: "v1 hybrid, own cgroup",
			proc: "testdata/v1/proc", sys: "testdata/v1/sys",
			want: map[string]float64{
				`{__name__="container_cpu_usage_seconds_total", id="/docker/abc"}`:            12.5,
				`{__name__="container_cpu_user_seconds_total", id="/docker/abc"}`:             8,
				`{__name__="container_cpu_system_seconds_total", id="/docker/abc"}`:           4,
				`{__name__="container_cpu_cfs_periods_total", id="/docker/abc"}`:              1000,
				`{__name__="container_cpu_cfs_throttled_periods_total", id="/docker/abc"}`:    250,
				`{__name__="container_cpu_cfs_throttled_seconds_total", id="/docker/abc"}`:    7.5,
				`{__name__="container_spec_cpu_quota", id="/docker/abc"}`:                     50000,
				`{__name__="container_spec_cpu_period", id="/docker/abc"}`:                    100000,
				`{__name__="container_pressure_cpu_waiting_seconds_total", id="/docker/abc"}`: 4,
				`{__name__="container_pressure_cpu_stalled_seconds_total", id="/docker/abc"}`: 1.5,
			},
		},
		{
			name: "v2, own cgroup",
			proc: "testdata/v2/proc", sys: "testdata/v2/sys",
			want: map[string]float64{
				`{__name__="container_cpu_usage_seconds_total", id="/system.slice/app.service"}`:               9,
				`{__name__="container_cpu_user_seconds_total", id="/system.slice/app.service"}`:                6,
				`{__name__="container_cpu_system_seconds_total", id="/system.slice/app.service"}`:              3,
				`{__name__="container_cpu_cfs_periods_total", id="/system.slice/app.service"}`:                 400,
				`{__name__="container_cpu_cfs_throttled_periods_total", id="/system.slice/app.service"}`:       100,
				`{__name__="container_cpu_cfs_throttled_seconds_total", id="/system.slice/app.service"}`:       2,
				`{__name__="container_spec_cpu_quota", id="/system.slice/app.service"}`:                        200000,
				`{__name__="container_spec_cpu_period", id="/system.slice/app.service"}`:                       100000,
				`{__name__="container_pressure_cpu_waiting_seconds_total", id="/system.slice/app.service"}`:    0.7,
				`{__name__="container_pressure_memory_stalled_seconds_total", id="/system.slice/app.service"}`: 0.00005,
			},
		},
		{
			name: "v2, configured path",
			proc: "testdata/v2/proc", sys: "testdata/v2/sys", path: "/system.slice/app.service",
			want: map[string]float64{`{__name__="container_cpu_usage_seconds_total", id="/system.slice/app.service"}`: 9},
		},
		{
			name: "no cgroup mounted",
			proc: "testdata/v2/proc", sys: "testdata/v1/proc",
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCgroupCollector(tc.proc, tc.sys, tc.path)
			got, err := c.Collect(context.Background(), time.Unix(0, 0))
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			m := sampleMap(got)
			for k, v := range tc.want {
				require.Contains(t, m, k)
				require.InDelta(t, v, m[k], 1e-9, k)
			}
		})
	}
}

func TestPSIUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no file: kernel without PSI", &fs.PathError{Op: "open", Path: "/proc/pressure/cpu", Err: syscall.ENOENT}, true},
		{"psi=0 at boot", fmt.Errorf("psi_stats: %w", &fs.PathError{Op: "read", Path: "/proc/pressure/cpu", Err: syscall.EOPNOTSUPP}), true},
		{"permission denied is a failure", &fs.PathError{Op: "open", Path: "/proc/pressure/cpu", Err: syscall.EACCES}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, psiUnavailable(tc.err))
		})
	}
}
