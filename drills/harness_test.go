package drills

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/testbin"
	"github.com/seismo-agent/seismo/notify/webhook"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// full reports whether the drills run at full size (make drills).
func full() bool { return os.Getenv("DRILLS_FULL") == "1" }

// size picks the CI or the full size of a drill.
func size(ci, fullSize int) int {
	if full() {
		return fullSize
	}
	return ci
}

// seismoBinary returns the binary under drill.
func seismoBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drills run the real binary")
	}
	bin, err := testbin.Seismo()
	require.NoError(t, err)
	return bin
}

// report prints the drill's outcome line and fails the drill when anything
// was lost or duplicated.
func report(t *testing.T, name, did string, lost, dup int, extra ...string) {
	t.Helper()
	line := fmt.Sprintf("DRILL %s: %s; lost %d, duplicated %d", name, did, lost, dup)
	if len(extra) > 0 {
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	fmt.Println(line)
	t.Log(line)
	if lost != 0 || dup != 0 {
		t.Errorf("%s: lost %d, duplicated %d", name, lost, dup)
	}
}

// timed counts failures that depend on wall-clock time (a missed
// evaluation, a health check slower than 2 s) only at full size, on a
// machine given to the drills; under go test they are reported, not
// failed, since a loaded CI machine may be slow without anything lost.
func timed(n int) int {
	if full() {
		return n
	}
	return 0
}

// childEnv is the environment without SEISMO_* variables, which would
// configure the agent under drill.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEISMO_") {
			env = append(env, kv)
		}
	}
	return env
}

// agent is one running seismo process.
type agent struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string // http://host:port once ready
	mu   sync.Mutex
	logs []map[string]any
	done chan struct{}
	err  error
}

// startAgent runs "seismo run --config cfg" in dir and waits until it is
// ready (or exits, which fails the drill).
func startAgent(t *testing.T, dir, cfg string) *agent {
	t.Helper()
	a := launch(t, dir, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range a.problems() {
				t.Logf("agent: %s", p)
			}
			lines := strings.Split(strings.TrimSpace(a.logText()), "\n")
			for _, l := range lines[max(0, len(lines)-15):] {
				t.Logf("agent (last lines): %s", l)
			}
		}
	})
	require.NoError(t, a.waitReady(time.Minute))
	return a
}

// launch starts the agent without waiting for it.
func launch(t *testing.T, dir, cfg string) *agent {
	t.Helper()
	cmd := exec.Command(seismoBinary(t), "run", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = childEnv()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	require.NoError(t, cmd.Start())
	a := &agent{t: t, cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": sc.Text()}
			}
			a.mu.Lock()
			a.logs = append(a.logs, m)
			a.mu.Unlock()
			if m["msg"] == "agent ready" {
				ready <- m["listen_address"].(string)
			}
		}
		a.err = cmd.Wait()
		close(a.done)
	}()
	go func() {
		select {
		case addr := <-ready:
			a.mu.Lock()
			a.base = "http://" + addr
			a.mu.Unlock()
		case <-a.done:
		}
	}()
	t.Cleanup(func() { a.kill() })
	return a
}

// waitReady waits for "agent ready"; a generous bound only guards against a
// hung drill.
func (a *agent) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		base := a.base
		a.mu.Unlock()
		if base != "" {
			return nil
		}
		select {
		case <-a.done:
			return fmt.Errorf("seismo exited before it was ready: %v\n%s", a.err, a.logText())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("seismo not ready within %s", d)
}

func (a *agent) url(path string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.base + path
}

// logText is every log line so far, for failure messages.
func (a *agent) logText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, m := range a.logs {
		j, _ := json.Marshal(m)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// problems returns the agent's warning and error log lines.
func (a *agent) problems() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, m := range a.logs {
		if l, _ := m["level"].(string); l == "WARN" || l == "ERROR" || l == "" {
			j, _ := json.Marshal(m)
			out = append(out, string(j))
		}
	}
	return out
}

// dumpStacks makes the agent print its goroutines (SIGQUIT) and writes
// them, with its log, to a file whose path it logs: what a hung agent was
// doing.
func (a *agent) dumpStacks(t *testing.T) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
	}
	f, err := os.CreateTemp("", "seismo-drill-stacks-*.txt")
	if err != nil {
		return
	}
	defer f.Close()
	a.mu.Lock()
	for _, m := range a.logs {
		if msg, ok := m["msg"].(string); ok && len(m) == 1 {
			fmt.Fprintln(f, msg)
		} else {
			j, _ := json.Marshal(m)
			fmt.Fprintln(f, string(j))
		}
	}
	a.mu.Unlock()
	t.Logf("agent goroutines and log written to %s", f.Name())
}

// logsWith returns the log lines whose msg is msg.
func (a *agent) logsWith(msg string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	for _, m := range a.logs {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// kill sends SIGKILL and waits for the exit.
func (a *agent) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// stop sends SIGTERM and returns the exit code.
func (a *agent) stop() int {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		a.kill()
	}
	return a.cmd.ProcessState.ExitCode()
}

// alive reports whether the process still runs.
func (a *agent) alive() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// healthy asks /-/healthy with a short timeout.
func (a *agent) healthy() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(a.url("/-/healthy"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// rssKiB is the agent's resident set size.
func (a *agent) rssKiB() int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// metric returns the value of the first sample of name on /metrics, or -1.
func (a *agent) metric(name string) float64 {
	resp, err := http.Get(a.url("/metrics"))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// delivery is one notification a receiver accepted.
type delivery struct {
	id       string // the drill_signal id label
	status   string
	startsAt time.Time
	fp       string
}

// receiver is a webhook endpoint on loopback that records every accepted
// alert. fault, when set, may answer instead (return true when it did).
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []delivery
	calls int
	fault func(w http.ResponseWriter, r *http.Request, call int) bool
	delay func() time.Duration
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.calls++
	call, fault, delay := rc.calls, rc.fault, rc.delay
	rc.mu.Unlock()
	if fault != nil && fault(w, r, call) {
		return
	}
	if delay != nil {
		time.Sleep(delay()) // widen the window in which a kill hits a delivery
	}
	if err := rc.record(r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// record reads a webhook message and records its alerts as delivered.
func (rc *receiver) record(r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	var m webhook.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, al := range m.Alerts {
		rc.got = append(rc.got, delivery{id: al.Labels["id"], status: al.Status, startsAt: al.StartsAt, fp: al.Fingerprint})
	}
	return nil
}

func (rc *receiver) setFault(f func(w http.ResponseWriter, r *http.Request, call int) bool) {
	rc.mu.Lock()
	rc.fault = f
	rc.mu.Unlock()
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// has reports whether a delivery of id with status arrived.
func (rc *receiver) has(id, status string) bool {
	for _, d := range rc.deliveries() {
		if d.id == id && d.status == status {
			return true
		}
	}
	return false
}

// target is a scrape target exposing drill_signal{id} 1 for the ids that
// are on and 0 for those switched off.
type target struct {
	srv *httptest.Server
	mu  sync.Mutex
	on  map[string]bool
}

func newTarget(t *testing.T) *target {
	tg := &target{on: map[string]bool{}}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		ids := make([]string, 0, len(tg.on))
		for id := range tg.on {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE drill_signal gauge")
		for _, id := range ids {
			v := 0
			if tg.on[id] {
				v = 1
			}
			fmt.Fprintf(w, "drill_signal{id=%q} %d\n", id, v)
		}
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) set(id string, on bool) {
	tg.mu.Lock()
	tg.on[id] = on
	tg.mu.Unlock()
}

func (tg *target) state() map[string]bool {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	out := make(map[string]bool, len(tg.on))
	for k, v := range tg.on {
		out[k] = v
	}
	return out
}

func hostPort(u string) string {
	return strings.TrimPrefix(u, "http://")
}

// agentConfig is the config of the drilled agent: one scrape job on tg,
// one alert per drill_signal id that is 1, each alert its own group, sent
// at once to the webhook url.
func agentConfig(tg *target, hookURL string, extra map[string]string) string {
	r := strings.NewReplacer("@TARGET@", hostPort(tg.srv.URL), "@HOOK@", hookURL)
	cfg := r.Replace(`data_dir: state
http:
  listen_address: 127.0.0.1:0
log:
  format: json
  level: info
rules:
  files: [drill.rules.yml]
  evaluation_interval: 1s
  resend_delay: 2s
  snapshot_interval: @SNAPSHOT@
  flap_threshold: 0
  builtin: {enabled: false}
collectors:
  scrape_interval: 1s
  scrape_timeout: 1s
  host: {enabled: false}
  cgroup: {enabled: false}
  scrape_configs:
    - job_name: drill
      static_configs: [{targets: [@TARGET@]}]
@EXTRA_JOBS@notify:
  route:
    receiver: hook
    group_by: ['...']
    group_wait: 0s
    group_interval: 1s
    repeat_interval: 1h
  receivers:
    - name: hook
      webhook_configs:
        - url: @HOOK@
          timeout: @WEBHOOK_TIMEOUT@
@NOTIFY_EXTRA@  min_backoff: 100ms
  max_backoff: 1s
`)
	defaults := map[string]string{"@SNAPSHOT@": "5s", "@WEBHOOK_TIMEOUT@": "2s", "@EXTRA_JOBS@": "", "@NOTIFY_EXTRA@": ""}
	for k, v := range extra {
		defaults[k] = v
	}
	for _, k := range []string{"@EXTRA_JOBS@", "@NOTIFY_EXTRA@", "@SNAPSHOT@", "@WEBHOOK_TIMEOUT@"} {
		cfg = strings.ReplaceAll(cfg, k, defaults[k])
	}
	return cfg
}

const drillRules = `groups:
  - name: drill
    rules:
      - alert: DrillSignal
        expr: drill_signal == 1
`

// writeAgentFiles writes the config and rules into a new directory and
// returns the directory and the config path.
func writeAgentFiles(t *testing.T, cfg string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "seismo.yml")
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "drill.rules.yml"), []byte(drillRules), 0o600))
	return dir, p
}

// verdict checks what rc received against what tg showed: every id that
// was on must have been delivered firing, every id switched off after that
// must have been delivered resolved, and per id the deliveries, with
// consecutive repeats (at-least-once re-deliveries of the same status)
// collapsed, must read "firing" or "firing resolved". It returns the
// number lost and duplicated (a status sequence beyond that, such as a
// spurious resolve and re-fire) and figures for the report.
func verdict(t *testing.T, tg *target, rc *receiver) (lost, dup int, figures []string) {
	t.Helper()
	byID := map[string][]delivery{}
	for _, d := range rc.deliveries() {
		byID[d.id] = append(byID[d.id], d)
	}
	redelivered, refired := 0, 0
	for id, on := range tg.state() {
		ds := byID[id]
		var seq []string
		starts := map[time.Time]bool{}
		for _, d := range ds {
			if len(seq) > 0 && seq[len(seq)-1] == d.status {
				redelivered++
			} else {
				seq = append(seq, d.status)
			}
			if d.status == "firing" {
				starts[d.startsAt] = true
			}
		}
		if len(starts) > 1 {
			refired += len(starts) - 1
		}
		want := []string{"firing", "resolved"}
		if on {
			want = want[:1]
		}
		switch {
		case slices.Equal(seq, want):
		case len(seq) < len(want) && slices.Equal(seq, want[:len(seq)]):
			lost += len(want) - len(seq)
			t.Logf("id %s (on=%v): lost, got %v", id, on, seq)
		default:
			dup++
			t.Logf("id %s (on=%v): unexpected sequence %v", id, on, seq)
		}
	}
	figures = append(figures,
		fmt.Sprintf("%d deliveries", len(rc.deliveries())),
		fmt.Sprintf("%d at-least-once repeats", redelivered),
		fmt.Sprintf("%d re-fired with a new startsAt", refired))
	return lost, dup, figures
}

// settle runs until every id is delivered firing and every id that is off
// is delivered resolved, switching ids off once their firing arrived when
// offAfterFiring is set; it gives up after d.
func settle(tg *target, rc *receiver, offAfterFiring bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		done := true
		for id, on := range tg.state() {
			fired := rc.has(id, "firing")
			if !fired {
				done = false
				continue
			}
			if on && offAfterFiring {
				tg.set(id, false)
				on = false
			}
			if !on && !rc.has(id, "resolved") {
				done = false
			}
		}
		if done {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// settleOrLog is settle that logs what is still missing when it gives up;
// verdict then counts it as lost.
func settleOrLog(t *testing.T, tg *target, rc *receiver, offAfterFiring bool, d time.Duration, what string) {
	t.Helper()
	if settle(tg, rc, offAfterFiring, d) {
		return
	}
	var missing []string
	for id, on := range tg.state() {
		switch {
		case !rc.has(id, "firing"):
			missing = append(missing, id+" firing")
		case !on && !rc.has(id, "resolved"):
			missing = append(missing, id+" resolved")
		}
	}
	sort.Strings(missing)
	t.Logf("%s: not settled within %s, missing %v", what, d, missing)
}

// randDuration is uniform in [0, max).
func randDuration(max time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(max)))
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}
