package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const unitPath = "../../systemd/seismo.service"

// systemdAnalyze returns the path of systemd-analyze, skipping the test when
// it is missing, except under CI=true where a missing tool is a failure.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze is required under CI=true: %v", err)
		}
		t.Skipf("systemd-analyze not installed: %v", err)
	}
	return p
}

func TestUnitDirectives(t *testing.T) {
	b, err := os.ReadFile(unitPath)
	require.NoError(t, err)
	unit := string(b)
	for _, want := range []string{
		"Type=notify",
		"WatchdogSec=",
		"ExecReload=/bin/kill -HUP $MAINPID",
		"StateDirectory=seismo",
		"DynamicUser=yes",
		"ProtectSystem=strict",
		"NoNewPrivileges=yes",
		"PrivateTmp=yes",
		"CapabilityBoundingSet=\n",
		"SystemCallFilter=@system-service",
	} {
		t.Run(want, func(t *testing.T) {
			require.Contains(t, unit, want)
		})
	}
}

// TestUnitSecurityExposure requires systemd-analyze's offline security score
// to stay at 2.0 or lower.
func TestUnitSecurityExposure(t *testing.T) {
	sa := systemdAnalyze(t)
	out, err := exec.Command(sa, "security", "--offline=true", unitPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	m := regexp.MustCompile(`Overall exposure level for seismo\.service: (\d+\.\d+)`).FindSubmatch(out)
	require.NotNil(t, m, "no overall exposure line in:\n%s", out)
	score, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	t.Logf("systemd-analyze security --offline=true: %.1f", score)
	require.LessOrEqual(t, score, 2.0, "exposure too high:\n%s", out)
}

// TestUnitVerifies runs systemd-analyze verify on a copy of the unit whose
// ExecStart points at a freshly built binary (verify checks that it exists).
func TestUnitVerifies(t *testing.T) {
	sa := systemdAnalyze(t)
	bin := buildSeismo(t)
	b, err := os.ReadFile(unitPath)
	require.NoError(t, err)
	unit := strings.ReplaceAll(string(b), "/usr/local/bin/seismo", bin)
	require.NotEqual(t, string(b), unit, "ExecStart no longer names /usr/local/bin/seismo")
	tmp := filepath.Join(t.TempDir(), "seismo.service")
	require.NoError(t, os.WriteFile(tmp, []byte(unit), 0o644))
	out, err := exec.Command(sa, "verify", tmp).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "seismo.service", "verify warned about the unit")
}
