package collectors

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/seismo-agent/seismo/store"
)

// Error reasons, the values of the reason label of
// seismo_collector_errors_total.
const (
	ReasonTimeout       = "timeout"
	ReasonHTTP          = "http"
	ReasonHTTPStatus    = "http_status"
	ReasonBodySizeLimit = "body_size_limit"
	ReasonSampleLimit   = "sample_limit"
	ReasonLabelLimit    = "label_limit"
	ReasonParse         = "parse"
	ReasonInvalidSeries = "invalid_series"
	ReasonCollect       = "collect"
)

var errorReasons = []string{ReasonTimeout, ReasonHTTP, ReasonHTTPStatus, ReasonBodySizeLimit, ReasonSampleLimit, ReasonLabelLimit, ReasonParse, ReasonInvalidSeries, ReasonCollect}

// Drop reasons, the values of the reason label of
// seismo_collector_samples_dropped_total: samples skipped while the
// collection as a whole succeeded.
const (
	DropDuplicate   = "duplicate"
	DropSeriesLimit = "series_limit"
)

var dropReasons = []string{DropDuplicate, DropSeriesLimit}

// collectError is a failed collection with the reason it is counted under.
type collectError struct {
	reason string
	err    error
}

func (e *collectError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *collectError) Unwrap() error { return e.err }

func failf(reason, format string, args ...any) error {
	return &collectError{reason: reason, err: fmt.Errorf(format, args...)}
}

// reasonOf returns the counted reason of err.
func reasonOf(err error) string {
	var ce *collectError
	if errors.As(err, &ce) {
		return ce.reason
	}
	return ReasonCollect
}

// result is what one collection produced.
type result struct {
	scraped int // samples exposed (before drops)
	dropped [2]int
}

// acceptHeader prefers OpenMetrics, then the text format, then protobuf,
// as Prometheus does with its default scrape_protocols.
const acceptHeader = `application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.2,*/*;q=0.1`

// scraper fetches and parses one target. Its buffers are reused from one
// scrape to the next; it is used by one goroutine.
type scraper struct {
	url          string
	client       *http.Client
	timeout      time.Duration
	bodyLimit    int64
	sampleLimit  int
	labelLimit   int
	honorLabels  bool
	targetLabels labels.Labels

	buf     bytes.Buffer
	gz      *gzip.Reader
	symbols *labels.SymbolTable
	lb      *labels.Builder
	lset    labels.Labels
}

func newScraper(url string, client *http.Client, sc *ScrapeConfig, timeout time.Duration, targetLabels labels.Labels) *scraper {
	limit := int64(sc.BodySizeLimit)
	if limit <= 0 {
		limit = DefaultBodySizeLimit
	}
	return &scraper{
		url:          url,
		client:       client,
		timeout:      timeout,
		bodyLimit:    limit,
		sampleLimit:  sc.SampleLimit,
		labelLimit:   sc.LabelLimit,
		honorLabels:  sc.HonorLabels,
		targetLabels: targetLabels,
		symbols:      labels.NewSymbolTable(),
		lb:           labels.NewBuilder(labels.EmptyLabels()),
	}
}

func (s *scraper) run(ctx context.Context, ts time.Time, app *store.Appender, cache *seriesCache) (result, error) {
	body, ct, err := s.fetch(ctx)
	if err != nil {
		return result{}, err
	}
	return s.appendBody(body, ct, ts.UnixMilli(), app, cache)
}

// fetch returns the uncompressed body, valid until the next fetch.
func (s *scraper) fetch(ctx context.Context) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, "", failf(ReasonHTTP, "%v", err)
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", "seismo")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.timeout.Seconds(), 'f', -1, 64))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, "", transportError(ctx, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, "", failf(ReasonHTTPStatus, "server returned HTTP status %s", resp.Status)
	}
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if s.gz == nil {
			s.gz, err = gzip.NewReader(resp.Body)
		} else {
			err = s.gz.Reset(resp.Body)
		}
		if err != nil {
			return nil, "", failf(ReasonParse, "gzip: %v", err)
		}
		r = s.gz
	}
	s.buf.Reset()
	n, err := s.buf.ReadFrom(io.LimitReader(r, s.bodyLimit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", transportError(ctx, err)
		}
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "", failf(ReasonParse, "read body: %v", err)
		}
		return nil, "", failf(ReasonHTTP, "read body: %v", err)
	}
	if n > s.bodyLimit {
		return nil, "", failf(ReasonBodySizeLimit, "body exceeds %d bytes", s.bodyLimit)
	}
	return s.buf.Bytes(), resp.Header.Get("Content-Type"), nil
}

func transportError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return failf(ReasonTimeout, "scrape timed out")
	}
	return failf(ReasonHTTP, "%v", err)
}

// appendBody parses an exposition and appends its float samples at t.
// Samples of native histograms are skipped (only classic buckets are
// stored); timestamps in the exposition are ignored, every sample gets the
// scrape time, so staleness handling stays exact.
func (s *scraper) appendBody(body []byte, contentType string, t int64, app *store.Appender, cache *seriesCache) (result, error) {
	var res result
	if err := statementNUL(body, contentType); err != nil {
		return res, err
	}
	p, err := textparse.New(body, contentType, s.symbols, textparse.ParserOptions{
		IgnoreNativeHistograms: true,
		FallbackContentType:    "text/plain",
	})
	if p == nil {
		return res, failf(ReasonParse, "%v", err)
	}
	for {
		et, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			return res, failf(ReasonParse, "%v", err)
		}
		if et == textparse.EntryType {
			// What the rules engine tells a counter by (see
			// store.SetType).
			name, typ := p.Type()
			app.SetType(name, string(typ))
			continue
		}
		if et != textparse.EntrySeries {
			continue
		}
		res.scraped++
		if s.sampleLimit > 0 && res.scraped > s.sampleLimit {
			return res, failf(ReasonSampleLimit, "more than sample_limit %d samples", s.sampleLimit)
		}
		raw, _, v := p.Series()
		e := cache.get(raw)
		if e == nil {
			p.Labels(&s.lset)
			lset, err := s.targetSeries(s.lset)
			if err != nil {
				return res, err
			}
			e = cache.add(raw, lset)
		}
		if err := cache.appendEntry(app, e, t, v); err != nil {
			switch {
			case errors.Is(err, errDuplicate):
				res.dropped[0]++
			case errors.Is(err, store.ErrSeriesLimit):
				res.dropped[1]++
			default:
				return res, failf(ReasonInvalidSeries, "%v", err)
			}
		}
	}
}

// statementNUL refuses a text exposition with a NUL byte where a statement
// starts. The text and OpenMetrics parsers read such a NUL as the end of the
// input, as Prometheus does, so everything after it would be dropped
// without an error and a target sending random bytes could count as up.
// A NUL inside a quoted label value is left to the parser; protobuf bodies
// are binary and not checked.
func statementNUL(body []byte, contentType string) error {
	if strings.Contains(contentType, "protobuf") {
		return nil
	}
	for off := 0; ; {
		i := bytes.IndexByte(body[off:], 0)
		if i < 0 {
			return nil
		}
		i += off
		start := bytes.LastIndexByte(body[:i], '\n') + 1
		if len(bytes.TrimLeft(body[start:i], " \t")) == 0 {
			line := bytes.Count(body[:i], []byte{'\n'}) + 1
			return failf(ReasonParse, "NUL byte at line %d (offset %d) where a statement starts; the rest of the body would be lost", line, i)
		}
		off = i + 1
	}
}

// targetSeries attaches the target labels to a scraped series as
// Prometheus does: on conflict the scraped value is kept as exported_<name>
// unless honor_labels keeps it in place. Empty label values are dropped.
func (s *scraper) targetSeries(lset labels.Labels) (labels.Labels, error) {
	if name, dup := lset.HasDuplicateLabelNames(); dup {
		return labels.EmptyLabels(), failf(ReasonInvalidSeries, "label %q appears twice in %s", name, lset.Get(labels.MetricName))
	}
	out := withTargetLabels(s.lb, lset, s.targetLabels, s.honorLabels)
	if !out.IsValid(model.UTF8Validation) {
		return labels.EmptyLabels(), failf(ReasonInvalidSeries, "invalid series %q", out.Get(labels.MetricName))
	}
	if s.labelLimit > 0 && out.Len() > s.labelLimit {
		return labels.EmptyLabels(), failf(ReasonLabelLimit, "series %s has %d labels, more than label_limit %d", out.Get(labels.MetricName), out.Len(), s.labelLimit)
	}
	return out, nil
}

func withTargetLabels(lb *labels.Builder, lset, target labels.Labels, honor bool) labels.Labels {
	lb.Reset(lset)
	lset.Range(func(l labels.Label) {
		if l.Value == "" {
			lb.Del(l.Name)
		}
	})
	target.Range(func(l labels.Label) {
		existing := lset.Get(l.Name)
		if honor {
			if existing == "" {
				lb.Set(l.Name, l.Value)
			}
			return
		}
		if existing != "" {
			lb.Set(model.ExportedLabelPrefix+l.Name, existing)
		}
		lb.Set(l.Name, l.Value)
	})
	return lb.Labels()
}
