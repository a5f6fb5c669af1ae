package rules

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/seismo-agent/seismo/store"
)

// LoadStats describes data loaded for a replay.
type LoadStats struct {
	Samples    int
	Series     int
	Start, End time.Time
}

func (s *LoadStats) see(ts int64) {
	t := time.UnixMilli(ts).UTC()
	if s.Start.IsZero() || t.Before(s.Start) {
		s.Start = t
	}
	if t.After(s.End) {
		s.End = t
	}
}

// LoadOpenMetrics appends OpenMetrics text with timestamps (the format
// `promtool tsdb create-blocks-from openmetrics` reads) to st. Samples
// without a timestamp are an error: a recording needs its times.
func LoadOpenMetrics(st *store.Store, b []byte) (LoadStats, error) {
	var stats LoadStats
	if !bytes.HasSuffix(bytes.TrimSpace(b), []byte("# EOF")) {
		b = append(append([]byte{}, b...), []byte("\n# EOF\n")...)
	}
	p, err := textparse.New(b, "application/openmetrics-text", labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return stats, err
	}
	app := st.Appender()
	refs := map[uint64]store.SeriesRef{}
	var lset labels.Labels
	line := 0
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stats, fmt.Errorf("openmetrics: %w", err)
		}
		line++
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		if ts == nil {
			return stats, fmt.Errorf("openmetrics: sample %d has no timestamp", line)
		}
		p.Labels(&lset)
		h := lset.Hash()
		ref, known := refs[h]
		l := lset
		if !known {
			l = lset.Copy() // the store keeps it; the parser reuses lset
		}
		ref, err = app.Append(ref, l, *ts, v)
		if err != nil {
			return stats, fmt.Errorf("openmetrics: %s: %w", lset, err)
		}
		if !known {
			stats.Series++
		}
		refs[h] = ref
		stats.see(*ts)
		if len(refs) > 0 && line%4096 == 0 {
			stats.Samples += app.Commit()
		}
	}
	stats.Samples += app.Commit()
	return stats, nil
}

// LoadCSV appends a CSV recording to st: a header `time,<series>,...` where
// each series is written as in PromQL (`http_requests_total{code="200"}`;
// quote the column, doubling inner quotes, when it has several labels),
// then one row per instant; time is RFC 3339 or Unix seconds; an empty cell
// is a missing sample.
func LoadCSV(st *store.Store, r io.Reader) (LoadStats, error) {
	var stats LoadStats
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.LazyQuotes = true // series headers hold quotes: up{job="x"}
	header, err := cr.Read()
	if err != nil {
		return stats, fmt.Errorf("csv header: %w", err)
	}
	if len(header) < 2 {
		return stats, errors.New("csv header: want time and at least one series column")
	}
	series := make([]labels.Labels, len(header)-1)
	for i, h := range header[1:] {
		l, err := promqlParser.ParseMetric(strings.TrimSpace(h))
		if err != nil {
			return stats, fmt.Errorf("csv header column %d %q: %w", i+2, h, err)
		}
		series[i] = l
	}
	stats.Series = len(series)
	app := st.Appender()
	refs := make([]store.SeriesRef, len(series))
	row := 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		row++
		if err != nil {
			return stats, fmt.Errorf("csv row %d: %w", row, err)
		}
		ts, err := parseTime(rec[0])
		if err != nil {
			return stats, fmt.Errorf("csv row %d: time: %w", row, err)
		}
		stats.see(ts.UnixMilli())
		for i, cell := range rec[1:] {
			cell = strings.TrimSpace(cell)
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return stats, fmt.Errorf("csv row %d column %d: %w", row, i+2, err)
			}
			refs[i], err = app.Append(refs[i], series[i], ts.UnixMilli(), v)
			if err != nil {
				return stats, fmt.Errorf("csv row %d column %d: %w", row, i+2, err)
			}
		}
		if row%1024 == 0 {
			stats.Samples += app.Commit()
		}
	}
	stats.Samples += app.Commit()
	return stats, nil
}

// Unix seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const minUnixSeconds, maxUnixSeconds = -62135596800, 253402300799

// parseTime accepts RFC 3339 or Unix seconds (with a fraction).
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, fmt.Errorf("want RFC 3339 or Unix seconds, got %q", s)
	}
	// The years RFC 3339 can write (1 to 9999): a time outside them could
	// not be written back, and beyond it the milliseconds overflow.
	if f < minUnixSeconds || f > maxUnixSeconds {
		return time.Time{}, fmt.Errorf("time %q out of range (years 1 to 9999)", s)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}
