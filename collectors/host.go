package collectors

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/prometheus/model/labels"
)

// HostCollector reads host CPU time by mode, load average, available memory
// and pressure stall information under a /proc root, with node_exporter's
// metric names. PSI (/proc/pressure/*) is the direct measure of work that
// waits instead of running; kernels without it simply yield no node_pressure
// series.
type HostCollector struct {
	fs  procfs.FS
	out []Sample
}

// NewHostCollector reads from procPath ("/proc" on a real host).
func NewHostCollector(procPath string) (*HostCollector, error) {
	pfs, err := procfs.NewFS(procPath)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", procPath, err)
	}
	return &HostCollector{fs: pfs}, nil
}

// Collect implements Collector.
func (h *HostCollector) Collect(_ context.Context, _ time.Time) ([]Sample, error) {
	h.out = h.out[:0]
	st, err := h.fs.Stat()
	if err != nil {
		return nil, failf(ReasonCollect, "read stat: %v", err)
	}
	for cpu, c := range st.CPU {
		id := strconv.FormatInt(cpu, 10)
		for _, m := range []struct {
			mode string
			v    float64
		}{{"user", c.User}, {"nice", c.Nice}, {"system", c.System}, {"idle", c.Idle}, {"iowait", c.Iowait}, {"irq", c.IRQ}, {"softirq", c.SoftIRQ}, {"steal", c.Steal}} {
			h.add(m.v, "__name__", "node_cpu_seconds_total", "cpu", id, "mode", m.mode)
		}
	}
	if la, err := h.fs.LoadAvg(); err == nil {
		h.add(la.Load1, "__name__", "node_load1")
		h.add(la.Load5, "__name__", "node_load5")
		h.add(la.Load15, "__name__", "node_load15")
	}
	if mi, err := h.fs.Meminfo(); err == nil {
		if mi.MemAvailableBytes != nil {
			h.add(float64(*mi.MemAvailableBytes), "__name__", "node_memory_MemAvailable_bytes")
		}
		if mi.MemTotalBytes != nil {
			h.add(float64(*mi.MemTotalBytes), "__name__", "node_memory_MemTotal_bytes")
		}
	}
	for _, res := range []string{"cpu", "io", "memory"} {
		psi, err := h.fs.PSIStatsForResource(res)
		if err != nil {
			if psiUnavailable(err) {
				continue
			}
			return nil, failf(ReasonCollect, "read pressure %s: %v", res, err)
		}
		addPSI(psi, "node_pressure_"+res, h.add)
	}
	return h.out, nil
}

// psiUnavailable reports a kernel without PSI (no file) or with PSI
// switched off at boot (psi=0: the file exists, reading it fails with
// EOPNOTSUPP): both mean "no pressure series", not a failed collection.
func psiUnavailable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP)
}

func (h *HostCollector) add(v float64, kv ...string) {
	h.out = append(h.out, Sample{Labels: labels.FromStrings(kv...), Value: v})
}

// addPSI adds the "some" total as <prefix>_waiting_seconds_total and the
// "full" total as <prefix>_stalled_seconds_total (node_exporter's names;
// the kernel reports microseconds). The cpu "full" line only exists on
// newer kernels and is all zero at the system level, as node_exporter
// also reports it.
func addPSI(psi procfs.PSIStats, prefix string, add func(float64, ...string)) {
	if psi.Some != nil {
		add(float64(psi.Some.Total)/1e6, "__name__", prefix+"_waiting_seconds_total")
	}
	if psi.Full != nil {
		add(float64(psi.Full.Total)/1e6, "__name__", prefix+"_stalled_seconds_total")
	}
}
