package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// API serves /api/v1/query, /api/v1/query_range, /api/v1/labels,
// /api/v1/label/{name}/values and /api/v1/series over a Local source,
// answering in the Prometheus HTTP API's JSON so curl, promtool and Grafana
// can look at what the agent sees.
//
// Its limits: the Local's engine bounds each query's time and samples
// (LocalOptions.Timeout and MaxSamples: build a Local for the API apart
// from the one rules use), MaxPoints bounds a range query's resolution, and
// a client's timeout parameter can shorten, never lengthen, the engine's.
type API struct {
	local  *Local
	now    func() time.Time
	parser parser.Parser
	// MaxPoints bounds the points per series of a range query
	// ((end-start)/step); more is refused with 400 before evaluation.
	// NewAPI sets DefaultMaxPoints.
	MaxPoints int
}

// DefaultMaxPoints is Prometheus' bound on a range query's resolution.
const DefaultMaxPoints = 11000

// NewAPI returns the handlers over l; now is the default evaluation time
// (nil: time.Now).
func NewAPI(l *Local, now func() time.Time) *API {
	if now == nil {
		now = time.Now
	}
	return &API{local: l, now: now, parser: parser.NewParser(parser.Options{}), MaxPoints: DefaultMaxPoints}
}

type apiResponse struct {
	Status    string   `json:"status"`
	Data      any      `json:"data,omitempty"`
	ErrorType string   `json:"errorType,omitempty"`
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Infos     []string `json:"infos,omitempty"`
}

type queryData struct {
	ResultType parser.ValueType `json:"resultType"`
	Result     parser.Value     `json:"result"`
}

// queryParam parses the request's form and returns its "query" parameter.
// On a bad form or a missing query it answers 400 itself and returns false.
func queryParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !parseForm(w, r) {
		return "", false
	}
	q := r.Form.Get("query")
	if q == "" {
		writeError(w, http.StatusBadRequest, "bad_data", errors.New("missing query parameter"))
		return "", false
	}
	return q, true
}

// QueryHandler serves GET and POST /api/v1/query?query=&time=&timeout=.
func (a *API) QueryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, ok := queryParam(w, r)
		if !ok {
			return
		}
		ts := a.now()
		if t := r.Form.Get("time"); t != "" {
			var err error
			if ts, err = parseTime(t); err != nil {
				writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid parameter \"time\": %w", err))
				return
			}
		}
		ctx, cancel, err := withTimeout(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", err)
			return
		}
		defer cancel()
		v, warns, err := a.local.Query(ctx, q, ts)
		writeResult(w, v, warns, err)
	})
}

// QueryRangeHandler serves GET and POST
// /api/v1/query_range?query=&start=&end=&step=&timeout=.
func (a *API) QueryRangeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, ok := queryParam(w, r)
		if !ok {
			return
		}
		start, err := parseTime(r.Form.Get("start"))
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid parameter \"start\": %w", err))
			return
		}
		end, err := parseTime(r.Form.Get("end"))
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid parameter \"end\": %w", err))
			return
		}
		if end.Before(start) {
			writeError(w, http.StatusBadRequest, "bad_data", errors.New("end timestamp must not be before start time"))
			return
		}
		step, err := parseDuration(r.Form.Get("step"))
		if err != nil || step <= 0 {
			writeError(w, http.StatusBadRequest, "bad_data", errors.New("invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer"))
			return
		}
		if end.Sub(start)/step > time.Duration(a.MaxPoints) {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)", a.MaxPoints))
			return
		}
		ctx, cancel, err := withTimeout(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", err)
			return
		}
		defer cancel()
		v, warns, err := a.local.QueryRange(ctx, q, start, end, step)
		writeResult(w, v, warns, err)
	})
}

func withTimeout(r *http.Request) (context.Context, context.CancelFunc, error) {
	t := r.Form.Get("timeout")
	if t == "" {
		ctx, cancel := context.WithCancel(r.Context())
		return ctx, cancel, nil
	}
	d, err := parseDuration(t)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid parameter \"timeout\": %w", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	return ctx, cancel, nil
}

func writeResult(w http.ResponseWriter, v parser.Value, warns annotations.Annotations, err error) {
	if err != nil {
		code, typ := classify(err)
		writeError(w, code, typ, err)
		return
	}
	warnings, infos := warns.AsStrings("", 10, 10)
	bp := bufferPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBuffer {
			bufferPool.Put(bp)
		}
	}()
	if b, ok := appendResult((*bp)[:0], v, warnings, infos); ok {
		*bp = b
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(b)
		return
	}
	resp := apiResponse{Status: "success", Data: queryData{ResultType: v.Type(), Result: v}, Warnings: warnings, Infos: infos}
	if v, ok := v.(promql.Vector); ok && v == nil {
		resp.Data = queryData{ResultType: parser.ValueTypeVector, Result: promql.Vector{}}
	}
	if m, ok := v.(promql.Matrix); ok && m == nil {
		resp.Data = queryData{ResultType: parser.ValueTypeMatrix, Result: promql.Matrix{}}
	}
	writeJSON(w, http.StatusOK, resp)
}

func classify(err error) (int, string) {
	var pe parser.ParseErrors
	var pe1 *parser.ParseErr
	switch {
	case errors.As(err, &pe), errors.As(err, &pe1):
		return http.StatusBadRequest, "bad_data"
	case errors.As(err, new(promql.ErrQueryTimeout)), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "timeout"
	case errors.As(err, new(promql.ErrQueryCanceled)), errors.Is(err, context.Canceled):
		return 499, "canceled"
	case errors.As(err, new(promql.ErrStorage)):
		return http.StatusInternalServerError, "internal"
	}
	return http.StatusUnprocessableEntity, "execution"
}

func writeError(w http.ResponseWriter, code int, typ string, err error) {
	writeJSON(w, code, apiResponse{Status: "error", ErrorType: typ, Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"status":"error","errorType":"internal","error":"cannot encode result"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// parseTime accepts Unix seconds (with fraction) or RFC 3339, as
// Prometheus does.
func parseTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1000))*int64(time.Millisecond)).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("cannot parse %q to a valid timestamp", s)
}

// parseDuration accepts seconds (with fraction) or a Prometheus duration
// ("15s", "1m30s").
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	return 0, fmt.Errorf("cannot parse %q to a valid duration", s)
}

// LabelsHandler serves /api/v1/labels?match[]=&start=&end=: the label
// names of the selected series (all series without match[]).
func (a *API) LabelsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.labelQuery(w, r, func(ctx context.Context, q storage.Querier, ms []*labels.Matcher) ([]string, error) {
			names, _, err := q.LabelNames(ctx, nil, ms...)
			return names, err
		})
	})
}

// LabelValuesHandler serves /api/v1/label/{name}/values?match[]=: the
// values of label name (mount it with a {name} path wildcard).
func (a *API) LabelValuesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if name == "" {
			writeError(w, http.StatusBadRequest, "bad_data", errors.New("missing label name"))
			return
		}
		a.labelQuery(w, r, func(ctx context.Context, q storage.Querier, ms []*labels.Matcher) ([]string, error) {
			vals, _, err := q.LabelValues(ctx, name, nil, ms...)
			return vals, err
		})
	})
}

// MetadataHandler serves /api/v1/metadata?metric=&limit=: each metric
// family's type as the scrapes into the store found it, in Prometheus'
// form ({"name": [{"type": "counter", "help": "", "unit": ""}]}), so
// that Grafana, or another agent's rules (Remote.MetricTypes), can read
// it. Help texts and units are not kept.
func (a *API) MetadataHandler() http.Handler {
	type entry struct {
		Type string `json:"type"`
		Help string `json:"help"`
		Unit string `json:"unit"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !parseForm(w, r) {
			return
		}
		limit := -1
		if s := r.Form.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid parameter \"limit\": %w", err))
				return
			}
			limit = n
		}
		types, err := a.local.MetricTypes(r.Context())
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err)
			return
		}
		var names []string
		if m := r.Form.Get("metric"); m == "" {
			names = slices.Sorted(maps.Keys(types))
		} else if _, ok := types[m]; ok {
			names = []string{m}
		}
		if limit >= 0 && len(names) > limit {
			names = names[:limit]
		}
		data := make(map[string][]entry, len(names))
		for _, n := range names {
			data[n] = []entry{{Type: types[n]}}
		}
		writeJSON(w, http.StatusOK, apiResponse{Status: "success", Data: data})
	})
}

// SeriesHandler serves /api/v1/series?match[]=&start=&end=: the label sets
// of the selected series.
func (a *API) SeriesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sets, q, mint, maxt, ok := a.selectors(w, r)
		if !ok {
			return
		}
		if len(sets) == 0 {
			writeError(w, http.StatusBadRequest, "bad_data", errors.New("no match[] parameter provided"))
			return
		}
		querier, err := q.Querier(mint, maxt)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err)
			return
		}
		defer querier.Close()
		seen := map[string]bool{}
		out := []labels.Labels{}
		for _, ms := range sets {
			ss := querier.Select(r.Context(), false, &storage.SelectHints{Start: mint, End: maxt, Func: "series"}, ms...)
			for ss.Next() {
				l := ss.At().Labels()
				if k := l.String(); !seen[k] {
					seen[k] = true
					out = append(out, l)
				}
			}
			if err := ss.Err(); err != nil {
				writeError(w, http.StatusInternalServerError, "internal", err)
				return
			}
		}
		slices.SortFunc(out, labels.Compare)
		writeJSON(w, http.StatusOK, apiResponse{Status: "success", Data: out})
	})
}

// parseForm parses the request's form, answering 413 for a body over the
// server's cap and 400 for a bad form itself.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	err := r.ParseForm()
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "bad_data", fmt.Errorf("request body over %d bytes", tooLarge.Limit))
	default:
		writeError(w, http.StatusBadRequest, "bad_data", err)
	}
	return false
}

// selectors parses match[], start and end.
func (a *API) selectors(w http.ResponseWriter, r *http.Request) ([][]*labels.Matcher, storage.Queryable, int64, int64, bool) {
	if !parseForm(w, r) {
		return nil, nil, 0, 0, false
	}
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"start", &mint}, {"end", &maxt}} {
		if s := r.Form.Get(p.name); s != "" {
			t, err := parseTime(s)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid parameter %q: %w", p.name, err))
				return nil, nil, 0, 0, false
			}
			*p.dst = t.UnixMilli()
		}
	}
	var sets [][]*labels.Matcher
	for _, s := range r.Form["match[]"] {
		ms, err := a.parser.ParseMetricSelector(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", err)
			return nil, nil, 0, 0, false
		}
		sets = append(sets, ms)
	}
	return sets, a.local.q, mint, maxt, true
}

func (a *API) labelQuery(w http.ResponseWriter, r *http.Request, get func(context.Context, storage.Querier, []*labels.Matcher) ([]string, error)) {
	sets, q, mint, maxt, ok := a.selectors(w, r)
	if !ok {
		return
	}
	querier, err := q.Querier(mint, maxt)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err)
		return
	}
	defer querier.Close()
	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	seen := map[string]bool{}
	out := []string{}
	for _, ms := range sets {
		vals, err := get(r.Context(), querier, ms)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err)
			return
		}
		for _, v := range vals {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	writeJSON(w, http.StatusOK, apiResponse{Status: "success", Data: out})
}
