package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchPeerSmoke runs bench/peer/run.sh at 1k series beside Prometheus
// for a few seconds and checks that it prints the table with a row per
// tool and the ratios. It checks that the benchmark works, not speed.
// It takes about a minute, so it runs under CI=true or BENCH_PEER_SMOKE=1
// only; under CI a missing Prometheus fails it.
func TestBenchPeerSmoke(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	if !ci && os.Getenv("BENCH_PEER_SMOKE") != "1" {
		t.Skip("set BENCH_PEER_SMOKE=1 to run the benchmark smoke check (CI runs it)")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		if ci {
			t.Fatal("prometheus is not installed (Debian package prometheus)")
		}
		t.Skip("prometheus is not installed")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "seismo")
	// Build with the test's own race setting so the build cache of the
	// test run serves it.
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/seismo")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	targets := filepath.Join(dir, "targets")
	build = exec.Command("go", "build", "-o", targets, "./bench/peer/targets")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "bench/peer/run.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"SERIES=1000", "PEERS=prometheus", "WARM=15", "MEASURE=15",
		"OUT="+filepath.Join(dir, "out"), "PORT="+strconv.Itoa(freePorts(t)),
		"BIN_SEISMO="+bin, "BIN_TARGETS="+targets)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// The logs live under the test's temporary directory, which is
		// gone once the test ends: show their ends here.
		var logs strings.Builder
		paths, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.log"))
		more, _ := filepath.Glob(filepath.Join(dir, "out", "*.log"))
		for _, p := range append(paths, more...) {
			b, _ := os.ReadFile(p)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			fmt.Fprintf(&logs, "--- %s (end):\n%s\n", p, b)
		}
		t.Fatalf("run.sh: %v\nstdout:\n%s\nstderr:\n%s\n%s", err, stdout.String(), stderr.String(), logs.String())
	}
	out := stdout.String()
	for _, want := range []string{"CPU-s/min", "RSS MB", "CPU seismo/"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks column %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^1000 +seismo +[0-9.]+ +[0-9.]+`).MatchString(out) {
		t.Errorf("no seismo row at 1000 series:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^1000 +prometheus +[0-9.]+ +[0-9.]+ .* [0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}$`).MatchString(out) {
		t.Errorf("no prometheus row with the ratios at 1000 series:\n%s", out)
	}
}

// freePorts returns a port p such that p-10 .. p+1, the ports run.sh uses
// at 1k series, are free on 127.0.0.1 right now.
func freePorts(t *testing.T) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port + 10
		ln.Close()
		if p+1 > 65535 {
			continue
		}
		ok := true
		for q := p - 10; q <= p+1 && ok; q++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", q))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free port range on 127.0.0.1")
	return 0
}
