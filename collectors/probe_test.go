package collectors

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProbeCollector(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		hang    bool
		method  string
		valid   []int
		success float64
		code    float64
	}{
		{name: "2xx is success", status: 204, success: 1, code: 204},
		{name: "5xx fails", status: 503, success: 0, code: 503},
		{name: "explicit valid codes", status: 429, valid: []int{200, 429}, success: 1, code: 429},
		{name: "2xx outside valid codes fails", status: 200, valid: []int{204}, success: 0, code: 200},
		{name: "HEAD method", status: 200, method: http.MethodHead, success: 1, code: 200},
		{name: "timeout reports no status", hang: true, success: 0, code: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.hang {
					<-r.Context().Done()
					return
				}
				want := tc.method
				if want == "" {
					want = http.MethodGet
				}
				if r.Method != want {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			// A clock that advances 250ms per reading makes the duration exact.
			var tick time.Time
			now := func() time.Time { tick = tick.Add(250 * time.Millisecond); return tick }
			p := NewProbeCollector(srv.URL+"/healthz", tc.method, tc.valid, srv.Client(), now)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			got, err := p.Collect(ctx, time.Unix(0, 0))
			require.NoError(t, err)
			m := sampleMap(got)
			require.Equal(t, tc.success, m[`{__name__="probe_success"}`])
			require.Equal(t, tc.code, m[`{__name__="probe_http_status_code"}`])
			require.Equal(t, 0.25, m[`{__name__="probe_duration_seconds"}`])
		})
	}
}
