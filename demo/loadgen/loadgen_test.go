package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDoer answers every request with respond and records what it saw.
type fakeDoer struct {
	respond func(req *http.Request) (int, error)

	mu      sync.Mutex
	clients map[string]int
	paths   map[string]int
}

func (d *fakeDoer) Do(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	if d.clients == nil {
		d.clients, d.paths = map[string]int{}, map[string]int{}
	}
	d.clients[req.Header.Get(ClientHeader)]++
	d.paths[req.Method+" "+req.URL.Path]++
	d.mu.Unlock()
	code := http.StatusOK
	if d.respond != nil {
		c, err := d.respond(req)
		if err != nil {
			return nil, err
		}
		code = c
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

func TestRun(t *testing.T) {
	byPath := func(req *http.Request) (int, error) {
		switch req.URL.Path {
		case "/limited":
			return http.StatusTooManyRequests, nil
		case "/broken":
			return http.StatusServiceUnavailable, nil
		case "/gone":
			return http.StatusNotFound, nil
		case "/down":
			return 0, errors.New("connection refused")
		}
		return http.StatusOK, nil
	}
	equalMix := []Route{{Path: "/ok", Weight: 1}, {Path: "/limited", Weight: 1}, {Path: "/broken", Weight: 1}, {Path: "/gone", Weight: 1}, {Path: "/down", Weight: 1}}
	tests := []struct {
		name    string
		opts    Options
		surgeAt time.Duration // when > 0, call Surge(5, 0) this long after the start
		check   func(t *testing.T, r Report, d *fakeDoer)
	}{
		{
			name: "flat rate for a duration",
			opts: Options{Curve: Curve{Base: 100}, Duration: 10 * time.Second},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.InDelta(t, 1000, r.Sent, 2)
				require.Equal(t, r.Sent, r.OK)
				require.Zero(t, r.Skipped)
			},
		},
		{
			name: "request bound stops the run",
			opts: Options{Curve: Curve{Base: 100}, MaxRequests: 120, Duration: time.Hour},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.EqualValues(t, 120, r.Sent)
			},
		},
		{
			name: "statuses are classified",
			opts: Options{Curve: Curve{Base: 100}, Duration: 10 * time.Second, Routes: equalMix},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.Equal(t, r.Sent, r.OK+r.Limited+r.ServerErrors+r.OtherStatus+r.Failed)
				for name, n := range map[string]int64{"ok": r.OK, "429": r.Limited, "5xx": r.ServerErrors, "other": r.OtherStatus, "failed": r.Failed} {
					require.InDelta(t, r.Sent/5, n, float64(r.Sent)/10, name)
				}
			},
		},
		{
			name: "every client and route takes part",
			opts: Options{Curve: Curve{Base: 200}, Duration: 10 * time.Second},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.Len(t, d.clients, 50)
				require.Equal(t, ClientID(0), "client-00")
				require.Contains(t, d.clients, ClientID(49))
				require.InDelta(t, 0.4*float64(r.Sent), d.paths["GET /catalog"], 0.05*float64(r.Sent))
				require.InDelta(t, 0.4*float64(r.Sent), d.paths["GET /search"], 0.05*float64(r.Sent))
				require.InDelta(t, 0.2*float64(r.Sent), d.paths["POST /checkout"], 0.05*float64(r.Sent))
			},
		},
		{
			name: "a hot client sends its share",
			opts: Options{Curve: Curve{Base: 100}, Duration: 10 * time.Second, HotShare: 0.5},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.InDelta(t, 0.5*float64(r.Sent)+0.5*float64(r.Sent)/50, d.clients[ClientID(0)], 0.05*float64(r.Sent))
				require.InDelta(t, 0.5*float64(r.Sent)/50, d.clients[ClientID(1)], 0.02*float64(r.Sent))
			},
		},
		{
			name: "scheduled surge multiplies the rate",
			opts: Options{Curve: Curve{Base: 10, Surge: Surge{Start: 5 * time.Second, Factor: 5}}, Duration: 10 * time.Second},
			check: func(t *testing.T, r Report, d *fakeDoer) {
				require.InDelta(t, 50+250, r.Sent, 3)
			},
		},
		{
			name:    "surge started during the run",
			opts:    Options{Curve: Curve{Base: 10}, Duration: 10 * time.Second},
			surgeAt: 5 * time.Second,
			check: func(t *testing.T, r Report, d *fakeDoer) {
				// The request already scheduled at the old rate delays the
				// surge by up to one old interval (0.1 s, 5 requests).
				require.InDelta(t, 50+250, r.Sent, 6)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &fakeDoer{respond: byPath}
				opts := tt.opts
				opts.Target = "http://127.0.0.1:1"
				opts.Client = d
				g, err := New(opts)
				require.NoError(t, err)
				done := make(chan Report, 1)
				go func() {
					r, err := g.Run(t.Context())
					require.NoError(t, err)
					done <- r
				}()
				if tt.surgeAt > 0 {
					time.Sleep(tt.surgeAt) // virtual time inside the bubble
					require.Equal(t, 1.0, g.SurgeFactor())
					g.Surge(5, 0)
					require.InDelta(t, 50, g.Rate(), 1e-9)
					require.Equal(t, 5.0, g.SurgeFactor())
				}
				r := <-done
				require.Equal(t, r, g.Report())
				tt.check(t, r, d)
			})
		})
	}
}

func TestRunSkipsWhenTooManyInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		d := &fakeDoer{respond: func(req *http.Request) (int, error) {
			select {
			case <-release:
				return http.StatusOK, nil
			case <-req.Context().Done():
				return 0, req.Context().Err()
			}
		}}
		g, err := New(Options{Target: "http://127.0.0.1:1", Client: d, Curve: Curve{Base: 100}, Duration: time.Second, MaxInFlight: 10, Timeout: time.Hour})
		require.NoError(t, err)
		done := make(chan Report, 1)
		go func() {
			r, _ := g.Run(t.Context())
			done <- r
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		close(release)
		r := <-done
		require.EqualValues(t, 10, r.Sent)
		require.EqualValues(t, 10, r.OK)
		require.InDelta(t, 89, r.Skipped, 2)
	})
}

func TestRunStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		g, err := New(Options{Target: "http://127.0.0.1:1", Client: &fakeDoer{}, Curve: Curve{Base: 10}, Duration: time.Hour})
		require.NoError(t, err)
		done := make(chan Report, 1)
		go func() {
			r, err := g.Run(ctx)
			require.NoError(t, err)
			done <- r
		}()
		time.Sleep(10 * time.Second)
		cancel()
		r := <-done
		require.InDelta(t, 100, r.Sent, 1)
		_, err = g.Run(t.Context())
		require.Error(t, err, "a second Run")
	})
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"no bound", Options{Target: "http://127.0.0.1:1"}, []string{"duration, max_requests"}},
		{"bad target", Options{Target: "127.0.0.1:1", Duration: time.Second}, []string{"target"}},
		{"everything wrong", Options{Target: "ftp://x", Clients: -1, MaxInFlight: -1, HotShare: 2, Curve: Curve{Amplitude: 1.5}, Routes: []Route{{Path: "x", Weight: -1}}},
			[]string{"target", "clients", "curve", "duration", "max_in_flight", "hot_share", "routes[0]", "total weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
