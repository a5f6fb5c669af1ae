package collectors

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// CgroupCollector reads CPU usage, CFS throttling, quota and pressure of one
// cgroup, on cgroup v2 (unified) and v1 (cpu, cpuacct; PSI from the unified
// hierarchy of a hybrid setup when present), with cAdvisor's metric names
// and the cgroup path in the id label. Throttling is how a container looks
// saturated while its host CPU graph stays flat.
type CgroupCollector struct {
	procPath, sysPath string
	path              string // configured cgroup, empty: own
	out               []Sample
}

// NewCgroupCollector reads under procPath and sysPath; path is the cgroup
// to watch ("" for the agent's own, from /proc/self/cgroup).
func NewCgroupCollector(procPath, sysPath, path string) *CgroupCollector {
	return &CgroupCollector{procPath: procPath, sysPath: sysPath, path: path}
}

// Collect implements Collector. The cgroup is looked up again on every
// call, so a moved process is followed.
func (c *CgroupCollector) Collect(_ context.Context, _ time.Time) ([]Sample, error) {
	c.out = c.out[:0]
	root := filepath.Join(c.sysPath, "fs", "cgroup")
	own, err := readOwnCgroups(filepath.Join(c.procPath, "self", "cgroup"))
	if err != nil && c.path == "" {
		return nil, failf(ReasonCollect, "%v", err)
	}
	if fileExists(filepath.Join(root, "cgroup.controllers")) {
		err = c.collectV2(root, own)
	} else {
		err = c.collectV1(root, own)
	}
	if err != nil {
		return nil, failf(ReasonCollect, "%v", err)
	}
	return c.out, nil
}

func (c *CgroupCollector) add(v float64, name, id string) {
	c.out = append(c.out, Sample{Labels: labels.FromStrings("__name__", name, "id", id), Value: v})
}

func (c *CgroupCollector) collectV2(root string, own map[string]string) error {
	p := c.path
	if p == "" {
		p = own[""]
	}
	dir := cgroupDir(root, p)
	kv, err := readKV(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return err
	}
	usec := func(k string) float64 { return kv[k] / 1e6 }
	c.add(usec("usage_usec"), "container_cpu_usage_seconds_total", p)
	c.add(usec("user_usec"), "container_cpu_user_seconds_total", p)
	c.add(usec("system_usec"), "container_cpu_system_seconds_total", p)
	c.addThrottling(kv["nr_periods"], kv["nr_throttled"], usec("throttled_usec"), p)
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			if f[0] != "max" {
				if q, err := strconv.ParseFloat(f[0], 64); err == nil {
					c.add(q, "container_spec_cpu_quota", p)
				}
			}
			if per, err := strconv.ParseFloat(f[1], 64); err == nil {
				c.add(per, "container_spec_cpu_period", p)
			}
		}
	}
	return c.addPressure(dir, p)
}

func (c *CgroupCollector) collectV1(root string, own map[string]string) error {
	p := c.path
	acct, acctPath := v1Controller(root, own, "cpuacct")
	cpu, cpuPath := v1Controller(root, own, "cpu")
	if acct == "" || cpu == "" {
		return errors.New("no cgroup v2 hierarchy and no v1 cpu/cpuacct controllers mounted")
	}
	if p == "" {
		p = acctPath
	}
	acctDir := cgroupDir(acct, p)
	usage, err := readUint(filepath.Join(acctDir, "cpuacct.usage"))
	if err != nil {
		return err
	}
	c.add(usage/1e9, "container_cpu_usage_seconds_total", p)
	if kv, err := readKV(filepath.Join(acctDir, "cpuacct.stat")); err == nil {
		// USER_HZ ticks, 100 per second on every Linux architecture.
		c.add(kv["user"]/100, "container_cpu_user_seconds_total", p)
		c.add(kv["system"]/100, "container_cpu_system_seconds_total", p)
	}
	if c.path == "" {
		p = cpuPath
	}
	cpuDir := cgroupDir(cpu, p)
	kv, err := readKV(filepath.Join(cpuDir, "cpu.stat"))
	if err != nil {
		return err
	}
	c.addThrottling(kv["nr_periods"], kv["nr_throttled"], kv["throttled_time"]/1e9, p)
	if q, err := readInt(filepath.Join(cpuDir, "cpu.cfs_quota_us")); err == nil && q > 0 {
		c.add(q, "container_spec_cpu_quota", p)
	}
	if per, err := readInt(filepath.Join(cpuDir, "cpu.cfs_period_us")); err == nil {
		c.add(per, "container_spec_cpu_period", p)
	}
	// Hybrid hosts expose PSI per cgroup in the unified hierarchy.
	unified := filepath.Join(root, "unified")
	if fileExists(unified) {
		return c.addPressure(cgroupDir(unified, own[""]), p)
	}
	return nil
}

func (c *CgroupCollector) addThrottling(periods, throttled, seconds float64, id string) {
	c.add(periods, "container_cpu_cfs_periods_total", id)
	c.add(throttled, "container_cpu_cfs_throttled_periods_total", id)
	c.add(seconds, "container_cpu_cfs_throttled_seconds_total", id)
}

func (c *CgroupCollector) addPressure(dir, id string) error {
	for _, res := range []string{"cpu", "io", "memory"} {
		b, err := os.ReadFile(filepath.Join(dir, res+".pressure"))
		if err != nil {
			if psiUnavailable(err) {
				continue
			}
			return err
		}
		some, full, err := parsePressureTotals(b)
		if err != nil {
			return fmt.Errorf("%s.pressure: %w", res, err)
		}
		if some >= 0 {
			c.add(some/1e6, "container_pressure_"+res+"_waiting_seconds_total", id)
		}
		if full >= 0 {
			c.add(full/1e6, "container_pressure_"+res+"_stalled_seconds_total", id)
		}
	}
	return nil
}

// parsePressureTotals returns the total= microseconds of the some and full
// lines, -1 for a missing line.
func parsePressureTotals(b []byte) (some, full float64, err error) {
	some, full = -1, -1
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		for _, x := range f[1:] {
			v, ok := strings.CutPrefix(x, "total=")
			if !ok {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("bad total %q", v)
			}
			switch f[0] {
			case "some":
				some = n
			case "full":
				full = n
			}
		}
	}
	return some, full, nil
}

// readOwnCgroups parses /proc/self/cgroup: controller list -> path, with
// "" for the unified (v2) line "0::/path".
func readOwnCgroups(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		out[parts[1]] = parts[2]
	}
	return out, sc.Err()
}

// v1Controller finds the mount directory of a v1 controller (cpu and
// cpuacct are often co-mounted as "cpu,cpuacct") and the process's path in
// it.
func v1Controller(root string, own map[string]string, name string) (mount, path string) {
	for ctrls, p := range own {
		for _, c := range strings.Split(ctrls, ",") {
			if c == name {
				for _, dir := range []string{ctrls, name} {
					if fileExists(filepath.Join(root, dir)) {
						return filepath.Join(root, dir), p
					}
				}
			}
		}
	}
	for _, dir := range []string{name, "cpu,cpuacct", "cpuacct,cpu"} {
		if fileExists(filepath.Join(root, dir)) {
			return filepath.Join(root, dir), "/"
		}
	}
	return "", ""
}

// cgroupDir is mount/path, or mount itself when path does not exist there:
// inside a cgroup namespace /proc/self/cgroup names a path of the host
// while the container sees its own cgroup at the mount root.
func cgroupDir(mount, path string) string {
	dir := filepath.Join(mount, filepath.Clean("/"+path))
	if fileExists(dir) {
		return dir
	}
	return mount
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readKV(file string) (map[string]float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad value in %q", file, line)
		}
		out[f[0]] = v
	}
	return out, nil
}

func readUint(file string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return float64(v), nil
}

func readInt(file string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return float64(v), nil
}
