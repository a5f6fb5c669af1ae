package web

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoutePrefix(t *testing.T) {
	s, base := start(t, Options{RoutePrefix: "/seismo/"})
	require.Equal(t, "/seismo", s.RoutePrefix())
	s.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "console") }))
	s.Handle("GET /api/v1/x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }))

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path     string
		code     int
		body     string
		location string
	}{
		{"/seismo/", 200, "console", ""},
		{"/seismo/api/v1/x", 200, "/api/v1/x", ""},
		{"/seismo/-/healthy", 200, "seismo is healthy.\n", ""},
		{"/-/healthy", 200, "seismo is healthy.\n", ""},
		{"/seismo", 302, "", "/seismo/"},
		{"/", 302, "", "/seismo/"},
		{"/api/v1/x", 404, "", ""},
		{"/seismox/api/v1/x", 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := noRedirect.Get(base + tt.path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.code, resp.StatusCode)
			if tt.body != "" {
				require.Equal(t, tt.body, string(b))
			}
			require.Equal(t, tt.location, resp.Header.Get("Location"))
		})
	}
}
