package notify_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/stretchr/testify/require"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/notify"
	"github.com/seismo-agent/seismo/notify/webhook"
)

const childEnv = "SEISMO_NOTIFY_TEST_CHILD"

// webhookDispatcher builds a dispatcher delivering to a real webhook,
// grouping by alertname with no group_wait.
func webhookDispatcher(dir, url string) (*notify.Dispatcher, error) {
	d, err := notify.New(notify.Options{Logger: slog.New(slog.DiscardHandler), Metrics: metrics.NewSet(), DataDir: dir})
	if err != nil {
		return nil, err
	}
	rc := notify.DefaultRoute()
	rc.Receiver, rc.GroupWait = "hook", 0
	route, err := notify.CompileRoute(rc)
	if err != nil {
		return nil, err
	}
	wc := webhook.DefaultConfig()
	wc.URL = configutil.Secret(url)
	n := webhook.New(wc, nil, "", nil)
	err = d.ApplyConfig(&notify.Config{
		Route:         route,
		Receivers:     map[string][]notify.Integration{"hook": {{Type: "webhook", Notifier: n, SendResolved: true, Secrets: n.Secrets()}}},
		QueueCapacity: 100,
		Backoff:       notify.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond},
	})
	return d, err
}

// runChild is the agent that gets killed: it queues notifications for
// alerts A0..An-1 while the receiver is down, says READY and waits for
// SIGKILL.
func runChild() int {
	n, _ := strconv.Atoi(os.Getenv("SEISMO_CHILD_N"))
	d, err := webhookDispatcher(os.Getenv("SEISMO_CHILD_DIR"), os.Getenv("SEISMO_CHILD_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = d.Run(context.Background()) }()
	for i := range n {
		d.Notify(context.Background(), firing(fmt.Sprintf("A%d", i), "x", time.Now()))
		for d.Pending() < i+1 {
			time.Sleep(time.Millisecond) // the child is a real process with a real clock
		}
	}
	fmt.Println("READY")
	select {}
}

// TestKillReplay kills the agent with SIGKILL while notifications wait in the
// outbox; a new agent on the same data directory delivers each exactly once,
// in order.
func TestKillReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	const n = 5
	var (
		up   atomic.Bool
		mu   sync.Mutex
		got  []string
		recv = make(chan struct{}, 100)
	)
	var conns atomic.Int64 // the server's open connections
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m webhook.Message
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, m.GroupLabels["alertname"]+"="+m.Status)
		mu.Unlock()
		recv <- struct{}{}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "SEISMO_CHILD_DIR="+dir, "SEISMO_CHILD_URL="+srv.URL, "SEISMO_CHILD_N="+strconv.Itoa(n))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "READY\n", line)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no clean shutdown
	_ = cmd.Wait()
	// A retry the child sent just before it died may still be in the
	// server's hands: it must be answered as the receiver was then, down,
	// or it would count as a delivery of A0 besides the new agent's. The
	// dead child's connections close once their handlers have returned.
	require.Eventually(t, func() bool { return conns.Load() == 0 }, 10*time.Second, time.Millisecond)

	up.Store(true)
	d, err := webhookDispatcher(dir, srv.URL)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, n, d.Pending())
	stop := run(t, d)
	defer stop()
	for i := range n {
		select {
		case <-recv:
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of %d notifications arrived after the restart", i, n)
		}
	}
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("A%d=firing", i)
	}
	// The last entry is removed once its response is read.
	require.Eventually(t, func() bool { return d.Pending() == 0 }, 10*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, got)
}
