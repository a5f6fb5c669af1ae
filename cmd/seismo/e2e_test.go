package main

// End-to-end tests of the real binary: built with go build, run as a child
// process on a free loopback port, driven with real signals and HTTP.

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/testbin"
)

// buildSeismo returns the path of the seismo binary, built with a version
// set the way "make build" does.
func buildSeismo(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := testbin.Seismo()
	require.NoError(t, err)
	return bin
}

// proc is a running "seismo run" child process.
type proc struct {
	cmd  *exec.Cmd
	logs chan map[string]any // JSON log lines from stderr; closed at exit
	done chan struct{}       // closed once the process has exited
}

// childEnv is the test's environment without SEISMO_* variables: those
// configure the agent, and a child must see only what its test sets.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEISMO_") {
			env = append(env, kv)
		}
	}
	return env
}

// startSeismo starts bin with args in dir and extra environment; the
// config must log JSON. It is killed at the end of the test if still
// running.
func startSeismo(t *testing.T, bin, dir string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(childEnv(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, logs: make(chan map[string]any, 64), done: make(chan struct{})}
	go func() {
		defer close(p.logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": sc.Text()} // not JSON (e.g. a fatal error)
			}
			t.Logf("seismo: %s", sc.Text())
			p.logs <- m
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			p.wait(t)
		}
	})
	return p
}

// waitLog reads log lines until one has msg, and returns it. A generous
// deadline only guards against a hung test; it is not a timing assertion.
func (p *proc) waitLog(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		select {
		case m, ok := <-p.logs:
			require.True(t, ok, "seismo exited before logging %q", msg)
			if m["msg"] == msg {
				return m
			}
		case <-deadline.C:
			t.Fatalf("no %q log line within a minute", msg)
		}
	}
}

// wait drains the log and waits for the process to exit; it returns the
// exit status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	for range p.logs {
	}
	err := p.cmd.Wait()
	close(p.done)
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
	}
	return p.cmd.ProcessState.ExitCode()
}

func metricLine(t *testing.T, base, name string) string {
	t.Helper()
	code, body := do(t, "GET", base+"/metrics")
	require.Equal(t, 200, code)
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

const e2eConfig = `data_dir: state
http:
  listen_address: 127.0.0.1:0
  enable_lifecycle: true
log:
  format: json
  level: info
`

// TestBinaryReloadAndShutdown is the acceptance path: start, answer health,
// survive a bad config on SIGHUP with the metric at 0, recover on
// POST /-/reload, and exit 0 on SIGTERM.
func TestBinaryReloadAndShutdown(t *testing.T) {
	bin := buildSeismo(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(e2eConfig), 0o600))

	p := startSeismo(t, bin, t.TempDir(), nil, "run", "--config", cfgPath)
	ready := p.waitLog(t, "agent ready")
	base := "http://" + ready["listen_address"].(string)

	code, _ := do(t, "GET", base+"/-/healthy")
	require.Equal(t, 200, code)
	code, _ = do(t, "GET", base+"/-/ready")
	require.Equal(t, 200, code)
	require.Contains(t, metricLine(t, base, "seismo_build_info"), `version="`+testbin.Version+`",revision="`+testbin.Revision+`"`)
	require.Equal(t, "seismo_config_last_reload_successful 1", metricLine(t, base, "seismo_config_last_reload_successful"))
	require.DirExists(t, filepath.Join(dir, "state"), "data_dir is relative to the config file")

	// A bad key, then SIGHUP: rejected, still serving, metric 0.
	require.NoError(t, os.WriteFile(cfgPath, []byte(e2eConfig+"bogus_key: 1\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	failed := p.waitLog(t, "config reload failed; the previous config keeps running")
	require.Contains(t, failed["err"], cfgPath+":8:1: bogus_key: unknown key")
	code, _ = do(t, "GET", base+"/-/healthy")
	require.Equal(t, 200, code)
	require.Equal(t, "seismo_config_last_reload_successful 0", metricLine(t, base, "seismo_config_last_reload_successful"))

	// check config agrees and names the key.
	out, err := exec.Command(bin, "check", "config", cfgPath).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), "bogus_key: unknown key")

	// Fixed file, reload over HTTP: back to 1.
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(e2eConfig, "level: info", "level: debug", 1)), 0o600))
	code, body := do(t, "POST", base+"/-/reload")
	require.Equal(t, 200, code, body)
	require.Equal(t, "seismo_config_last_reload_successful 1", metricLine(t, base, "seismo_config_last_reload_successful"))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	p.waitLog(t, "agent stopped")
	require.Equal(t, 0, p.wait(t))
}

// TestBinaryRunsWithEmbeddedDefault runs without --config: the embedded
// default, with the port overridden by the environment, data_dir relative
// to the working directory; SIGINT exits 0.
func TestBinaryRunsWithEmbeddedDefault(t *testing.T) {
	bin := buildSeismo(t)
	wd := t.TempDir()
	p := startSeismo(t, bin, wd, []string{
		"SEISMO_HTTP__LISTEN_ADDRESS=127.0.0.1:0",
		"SEISMO_LOG__FORMAT=json",
	}, "run")
	ready := p.waitLog(t, "agent ready")
	code, _ := do(t, "GET", "http://"+ready["listen_address"].(string)+"/-/healthy")
	require.Equal(t, 200, code)
	require.DirExists(t, filepath.Join(wd, "data"))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, p.wait(t))
}

// TestBinaryRejectsUnknownEnvironment shows that a mistyped SEISMO_*
// variable stops start-up with a message naming it.
func TestBinaryRejectsUnknownEnvironment(t *testing.T) {
	bin := buildSeismo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run")
	cmd.Dir = t.TempDir()
	cmd.Env = append(childEnv(), "SEISMO_HTTP__LISTEN_ADRESS=127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), "$SEISMO_HTTP__LISTEN_ADRESS: http.listen_adress: unknown key")
}
