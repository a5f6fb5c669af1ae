// Package nab reads the Numenta Anomaly Benchmark corpus, runs seismo's
// detectors over it, scores the results exactly as the corpus README
// describes (windows, scaled sigmoid, profiles, threshold optimisation,
// normalisation) and writes NAB-format result files.
//
// It is the only place in detect/ that does file I/O.
package nab

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// timeLayout is the layout of NAB's data timestamps; window bounds add
// ".ffffff", which time.Parse accepts with this layout as well.
const timeLayout = "2006-01-02 15:04:05"

// timeLayouts are the other layouts parseTime accepts, tried in order
// after timeLayout: RFC 3339 with a "T" or a space (pandas writes
// "2014-01-01 00:05:00+00:00" for a zoned index), with or without a
// zone, and either without seconds. A layout without a zone reads UTC;
// a fraction of a second after the seconds is accepted by every layout
// that has seconds.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
}

// parseTime reads a timestamp of a data row or a window bound: NAB's
// layout (UTC, optional fraction of a second), one of timeLayouts, or a
// Unix time in seconds (whole or with a fraction, as scripts write
// time.time()) or, from 10^11 on (year 5138 in seconds), in milliseconds.
// Exports of other monitoring systems come in these forms; all name one
// instant.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, ok := parseNABTime(s); ok {
		return t, nil
	}
	if t, err := time.Parse(timeLayout, s); err == nil {
		return t, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		if n >= 1e11 {
			return time.UnixMilli(n).UTC(), nil
		}
		return time.Unix(n, 0).UTC(), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e15 && strings.Contains(s, ".") {
		if f >= 1e11 {
			f /= 1000
		}
		return time.UnixMilli(int64(math.Round(f * 1000))).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp (want %q, RFC 3339 or Unix seconds or milliseconds)", s, timeLayout)
}

// parseNABTime reads a timestamp in NAB's layout without a fraction
// ("2014-04-10 07:15:00"), as every data row of the corpus has it, a
// tenth of time.Parse's cost; ok is false for anything else, and for a
// date time.Parse would refuse (the 31st of April), which parseTime then
// hands to time.Parse for its error.
func parseNABTime(s string) (t time.Time, ok bool) {
	if len(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	var f [6]int
	for i, span := range [6][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}} {
		for _, c := range []byte(s[span[0]:span[1]]) {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			f[i] = 10*f[i] + int(c-'0')
		}
	}
	if f[1] < 1 || f[1] > 12 || f[2] < 1 || f[3] > 23 || f[4] > 59 || f[5] > 59 {
		return time.Time{}, false
	}
	t = time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, time.UTC)
	return t, t.Day() == f[2] // no day past the month's end
}

// Window is one labelled anomaly window as a range of row indices (both
// ends inclusive) in its file.
type Window struct {
	First, Last int
}

// Width is the number of rows in the window.
func (w Window) Width() int { return w.Last - w.First + 1 }

// File is one corpus series with its labels.
type File struct {
	// Name is the path relative to data/, e.g. "realKnownCause/nyc_taxi.csv".
	Name string
	// text holds each row's timestamp and value exactly as given, one
	// after the other, so that result files reproduce them byte for byte;
	// raw locates them, row by row (see RawTimestamp). One string per
	// field, as this kept them before, cost about 120 bytes a row at the
	// peak of a run, and a data set of 30 million rows needed 3.6 GB; a
	// row's text and its place in it take about 35.
	text []byte
	raw  []rawRow
	// Times are the row timestamps in Unix milliseconds (UTC).
	Times  []int64
	Values []float64
	// Missing counts rows whose value is empty or NaN (a missed scrape in a
	// real export): their Values entry is NaN, which detectors skip.
	Missing int
	// Windows are sorted by position and do not overlap.
	Windows []Window
}

// rawRow locates one row's fields in File.text: the timestamp starts at
// off, and the value follows it.
type rawRow struct {
	off     uint32
	ts, val uint16 // their lengths
}

// maxField is the longest timestamp or value a row may have, in bytes,
// and maxText the most text a file's rows may hold (see rawRow).
const (
	maxField = math.MaxUint16
	maxText  = math.MaxUint32
)

// RawTimestamp is row i's timestamp exactly as given.
func (f *File) RawTimestamp(i int) string { return string(f.rawTimestamp(i)) }

// RawValue is row i's value exactly as given.
func (f *File) RawValue(i int) string { return string(f.rawValue(i)) }

func (f *File) rawTimestamp(i int) []byte {
	r := f.raw[i]
	return f.text[r.off : r.off+uint32(r.ts)]
}

func (f *File) rawValue(i int) []byte {
	r := f.raw[i]
	at := r.off + uint32(r.ts)
	return f.text[at : at+uint32(r.val)]
}

// Rows is the number of data rows.
func (f *File) Rows() int { return len(f.Values) }

// Probation is the number of leading rows that are never scored:
// min(floor(0.15 * rows), 750).
func (f *File) Probation() int { return Probation(f.Rows()) }

// Probation returns the probation length for a file of n rows.
func Probation(n int) int { return min(n*15/100, 750) }

// Category is the directory part of Name ("realKnownCause").
func (f *File) Category() string { return filepath.Dir(f.Name) }

// Corpus is the whole benchmark: every data file with its windows.
type Corpus struct {
	Files []*File
	// Warnings name each label that Load had to repair (see
	// File.SetWindows), "file: what".
	Warnings []string
	// Unlisted names the .csv files under data/ that the windows file
	// does not list, which Load leaves out: a data set converted into
	// NAB's layout whose labels missed some of its files would otherwise
	// be scored on fewer files than it has, and say nothing.
	Unlisted []string
	// Sorted names each file whose rows are out of time order, and
	// whether Load sorted them (see File.sortByTime), "file: what".
	Sorted []string
}

// ShiftTimes moves every row's timestamp by ms. The windows are rows and
// stay; only where each sample falls within a detector's hours and days
// changes, as between data sets whose clocks are aligned differently.
func (c *Corpus) ShiftTimes(ms int64) {
	for _, f := range c.Files {
		for i := range f.Times {
			f.Times[i] += ms
		}
	}
}

// Rows is the total number of data rows in the corpus.
func (c *Corpus) Rows() int {
	n := 0
	for _, f := range c.Files {
		n += f.Rows()
	}
	return n
}

// Missing is the total number of rows without a value.
func (c *Corpus) Missing() int {
	n := 0
	for _, f := range c.Files {
		n += f.Missing
	}
	return n
}

// Windows is the total number of labelled windows.
func (c *Corpus) Windows() int {
	n := 0
	for _, f := range c.Files {
		n += len(f.Windows)
	}
	return n
}

// ErrNoCorpus is returned by Load when dir holds no NAB corpus.
var ErrNoCorpus = errors.New("no NAB corpus")

// Load reads the corpus under dir (which holds data/ and labels/). Every file
// listed in labels/combined_windows.json is loaded, in sorted order; a
// file written newest first has its rows put in time order.
func Load(dir string) (*Corpus, error) {
	labelsPath := filepath.Join(dir, "labels", "combined_windows.json")
	raw, err := os.ReadFile(labelsPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w in %q: %w", ErrNoCorpus, dir, err)
		}
		return nil, fmt.Errorf("read labels: %w", err)
	}
	var windows map[string][][2]string
	raw = bytes.TrimPrefix(raw, []byte("\ufeff")) // a byte-order mark, as some editors write
	if err := json.Unmarshal(raw, &windows); err != nil {
		return nil, fmt.Errorf("parse %q: %w", labelsPath, err)
	}
	names := make([]string, 0, len(windows))
	for n := range windows {
		names = append(names, n)
	}
	sort.Strings(names)

	c := &Corpus{Files: make([]*File, 0, len(names))}
	for _, name := range names {
		p := filepath.Join(dir, "data", filepath.FromSlash(name))
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("open data file: %w", err)
		}
		// At most one row a line: the slices are made that long once,
		// not grown (a large corpus's load was mostly that).
		f, err := readFile(name, bytes.NewReader(b), bytes.Count(b, []byte{'\n'}), len(b))
		if err != nil {
			return nil, fmt.Errorf("read %q: %w", p, err)
		}
		switch n, sorted := f.sortByTime(); {
		case sorted:
			c.Sorted = append(c.Sorted, fmt.Sprintf("%s: rows out of time order (%d of %d before the row above them); sorted by time", name, n, f.Rows()))
		case n > 0:
			c.Sorted = append(c.Sorted, fmt.Sprintf("%s: %d of %d rows before the row above them; kept in the file's order", name, n, f.Rows()))
		}
		warnings, err := f.SetWindows(windows[name])
		if err != nil {
			return nil, fmt.Errorf("labels for %q in %q: %w", name, labelsPath, err)
		}
		for _, w := range warnings {
			c.Warnings = append(c.Warnings, name+": "+w)
		}
		c.Files = append(c.Files, f)
	}
	c.Unlisted = unlisted(filepath.Join(dir, "data"), windows)
	return c, nil
}

// unlisted returns the .csv files under data, as the windows file names
// them ("category/file.csv"), that it does not list, sorted. A data
// directory that cannot be read lists none: Load has already read every
// file it needs from it.
func unlisted(data string, windows map[string][][2]string) []string {
	var out []string
	_ = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".csv") {
			return nil
		}
		rel, err := filepath.Rel(data, p)
		if err != nil {
			return nil
		}
		name := filepath.ToSlash(rel)
		if _, ok := windows[name]; !ok {
			out = append(out, name)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// sortByTime puts the rows of a file written newest first in time order,
// keeping the order of rows with one timestamp: a detector fed a series
// backwards judges its days and its records the wrong way round. It
// returns how many rows came before the row above them, and whether it
// sorted them: only where that is most of them. A few rows out of order
// stay as they are: NAB's machine_temperature_system_failure repeats an
// hour of timestamps, as an export in local time does at the end of
// summer time, and sorted, that hour's two runs of samples would
// alternate.
func (f *File) sortByTime() (out int, sorted bool) {
	for i := 1; i < len(f.Times); i++ {
		if f.Times[i] < f.Times[i-1] {
			out++
		}
	}
	if 2*out <= len(f.Times)-1 {
		return out, false
	}
	idx := make([]int, len(f.Times))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return f.Times[idx[a]] < f.Times[idx[b]] })
	ts, vs, raw := make([]int64, len(idx)), make([]float64, len(idx)), make([]rawRow, len(idx))
	for k, i := range idx {
		ts[k], vs[k], raw[k] = f.Times[i], f.Values[i], f.raw[i]
	}
	f.Times, f.Values, f.raw = ts, vs, raw
	return out, true
}

// ReadFile parses one data file (header "timestamp,value"; CRLF and a missing
// final newline are fine; further columns, such as a label column, are
// ignored). Rows are kept in order, duplicates included.
func ReadFile(name string, r io.Reader) (*File, error) {
	return readFile(name, r, 0, 0)
}

// readFile is ReadFile with room made for rows rows of size bytes in
// all.
func readFile(name string, r io.Reader, rows, size int) (*File, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if len(header) < 2 || strings.TrimSpace(strings.TrimPrefix(header[0], "\ufeff")) != "timestamp" || strings.TrimSpace(header[1]) != "value" {
		return nil, fmt.Errorf("header is %q, want \"timestamp,value\"", strings.Join(header, ","))
	}
	f := &File{Name: name,
		text:   make([]byte, 0, size),
		raw:    make([]rawRow, 0, rows),
		Times:  make([]int64, 0, rows),
		Values: make([]float64, 0, rows),
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		t, err := parseTime(rec[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: timestamp: %w", line, err)
		}
		v, err := parseValue(rec[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: value: %w", line, err)
		}
		if math.IsNaN(v) {
			f.Missing++
		}
		if len(rec[0]) > maxField || len(rec[1]) > maxField {
			return nil, fmt.Errorf("line %d: a timestamp or value longer than %d bytes", line, maxField)
		}
		if len(f.text)+len(rec[0])+len(rec[1]) > maxText {
			return nil, fmt.Errorf("line %d: more than %d bytes of timestamps and values in one file", line, int64(maxText))
		}
		f.raw = append(f.raw, rawRow{off: uint32(len(f.text)), ts: uint16(len(rec[0])), val: uint16(len(rec[1]))})
		f.text = append(append(f.text, rec[0]...), rec[1]...)
		f.Times = append(f.Times, t.UnixMilli())
		f.Values = append(f.Values, v)
	}
	return f, nil
}

// parseValue parses a data value; an empty value is a missing sample and
// reads as NaN, as does "NaN" itself.
func parseValue(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// SetWindows converts timestamp windows ([start, end], both inclusive) to
// row windows: the rows whose timestamps fall inside the bounds. Labels
// of real incidents are not always tidy, and one bad window must not stop
// a benchmark, so it repairs what it can and says so in the warnings it
// returns: a window that covers no row (it lies in a gap of the data, or
// outside it) is dropped, since no detection can be made in it; windows
// out of order are sorted; windows that overlap are merged into
// one, as NAB's labeller merges them. Only a bound that is not a
// timestamp, or ends before it starts, is an error.
func (f *File) SetWindows(bounds [][2]string) (warnings []string, err error) {
	f.Windows = f.Windows[:0]
	for i, b := range bounds {
		start, err := parseTime(b[0])
		if err != nil {
			return nil, fmt.Errorf("window %d start: %w", i, err)
		}
		end, err := parseTime(b[1])
		if err != nil {
			return nil, fmt.Errorf("window %d end: %w", i, err)
		}
		if end.Before(start) {
			return nil, fmt.Errorf("window %d [%s, %s] ends before it starts", i, b[0], b[1])
		}
		lo, hi := start.UnixMilli(), end.UnixMilli()
		w := Window{First: -1, Last: -1}
		for r, t := range f.Times {
			if t < lo || t > hi {
				continue
			}
			if w.First < 0 {
				w.First = r
			}
			w.Last = r
		}
		if w.First < 0 {
			warnings = append(warnings, fmt.Sprintf("window %d [%s, %s] covers no row; dropped", i, b[0], b[1]))
			continue
		}
		f.Windows = append(f.Windows, w)
	}
	if !sort.SliceIsSorted(f.Windows, func(i, j int) bool { return f.Windows[i].First < f.Windows[j].First }) {
		warnings = append(warnings, "windows out of order; sorted")
		sort.SliceStable(f.Windows, func(i, j int) bool { return f.Windows[i].First < f.Windows[j].First })
	}
	merged := f.Windows[:0]
	for _, w := range f.Windows {
		if n := len(merged); n > 0 && w.First <= merged[n-1].Last {
			warnings = append(warnings, fmt.Sprintf("window at rows %d-%d overlaps the one at rows %d-%d; merged",
				w.First, w.Last, merged[n-1].First, merged[n-1].Last))
			merged[n-1].Last = max(merged[n-1].Last, w.Last)
			continue
		}
		merged = append(merged, w)
	}
	f.Windows = merged
	return warnings, nil
}
