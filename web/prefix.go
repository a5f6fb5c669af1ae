package web

import (
	"net/http"
	"strings"
)

// RoutePrefix is the path every endpoint is served under, without a
// trailing slash; "" for the root. Pages use it to build their links.
func (s *Server) RoutePrefix() string { return strings.TrimRight(s.opts.RoutePrefix, "/") }

// withPrefix serves h under prefix: /prefix/x reaches the handler of /x.
// The prefix alone and the root redirect to prefix + "/", where the console
// lives; /-/healthy and /-/ready also answer at the root, so health checks
// need not know the prefix. Everything else outside the prefix is 404.
func (s *Server) withPrefix(prefix string, h http.Handler) http.Handler {
	inner := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, prefix+"/"):
			inner.ServeHTTP(w, r)
		case p == prefix || p == "/":
			http.Redirect(w, r, prefix+"/", http.StatusFound)
		case p == "/-/healthy" || p == "/-/ready":
			h.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
