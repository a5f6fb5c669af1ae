package nab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// A Probe changes a corpus's values the way metrics a detector was not
// tuned on differ from it, and leaves the windows as they are: the same
// incidents in another unit, with a constant added, mirrored, with one
// wild value, or with a lasting change of scale part-way. `seismo bench
// nab --probe` scores a detector on the corpus so changed, next to the
// corpus as loaded (docs/detectors.md, "A floor at the series' own
// scale", "One wild value" and Next steps).
type Probe struct {
	// Kind is one of ProbeKinds.
	Kind string
	// Factor is the kind's number (see ProbeKinds); 0 for mirror.
	Factor float64
}

// ProbeKinds describes each kind of probe, as its flag value is written.
var ProbeKinds = []struct{ Name, Form, Doc string }{
	{"offset", "offset=F", "add F times each file's range, highest less lowest, to every value: a gauge with a constant, as bytes of a disk or a temperature in kelvin"},
	{"scale", "scale=F", "multiply every value by F: the same metric in another unit, 1e-9 for nanoseconds written in seconds"},
	{"mirror", "mirror", "replace every value v by highest + lowest - v: an idle share for a busy one"},
	{"wild", "wild=F", "set one value to F times the file's largest magnitude: a misread counter or a unit slip, at the first row from a third of the file on outside any window"},
	{"step", "step=F", "multiply every value from the first row at a third of the file outside any window by F: a lasting change of scale, as a launch or a changed unit makes"},
	{"zero", "zero=N", "set the values of N rows in a row to 0 from the first row at a third of the file outside any window: a restart, or missing data written as 0"},
	{"gaps", "gaps=F", "blank F of the rows outside the windows (0 < F < 0.5), in runs of 1 to 64 rows, as many runs of each length: missed scrapes, and outages of a target or of the agent"},
	{"jitter", "jitter=F", "move each row's time by up to F times the file's usual interval either way (0 < F < 0.5), in whole seconds as the corpus writes them, the values as they were: timestamps taken when a scrape ran rather than when it was due"},
}

// ParseProbe reads a probe as the flag writes it: "mirror", or a kind,
// "=" and a number ("offset=100", "scale=1e-9", "wild=10", "step=2",
// "zero=3").
func ParseProbe(s string) (Probe, error) {
	kind, num, hasNum := strings.Cut(strings.TrimSpace(s), "=")
	known := false
	for _, k := range ProbeKinds {
		known = known || k.Name == kind
	}
	if !known {
		names := make([]string, len(ProbeKinds))
		for i, k := range ProbeKinds {
			names[i] = k.Form
		}
		return Probe{}, fmt.Errorf("probe %q: unknown kind %q (want one of %s)", s, kind, strings.Join(names, ", "))
	}
	if kind == "mirror" {
		if hasNum {
			return Probe{}, fmt.Errorf("probe %q: mirror takes no number", s)
		}
		return Probe{Kind: kind}, nil
	}
	if !hasNum {
		return Probe{}, fmt.Errorf("probe %q: %s needs a number (%s=F)", s, kind, kind)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return Probe{}, fmt.Errorf("probe %q: %q is no finite number", s, num)
	}
	if (kind == "scale" || kind == "step" || kind == "wild") && f == 0 {
		return Probe{}, fmt.Errorf("probe %q: a factor of 0 leaves nothing to detect", s)
	}
	if kind == "zero" && (f < 1 || f != math.Trunc(f)) {
		return Probe{}, fmt.Errorf("probe %q: zero takes a whole number of rows, 1 or more", s)
	}
	if kind == "gaps" && !(f > 0 && f < 0.5) {
		return Probe{}, fmt.Errorf("probe %q: gaps takes a share of the rows above 0 and below 0.5", s)
	}
	if kind == "jitter" && !(f > 0 && f < 0.5) {
		return Probe{}, fmt.Errorf("probe %q: jitter takes a share of the interval above 0 and below 0.5", s)
	}
	return Probe{Kind: kind, Factor: f}, nil
}

// String is the probe as the flag writes it.
func (p Probe) String() string {
	if p.Kind == "mirror" {
		return p.Kind
	}
	return p.Kind + "=" + strconv.FormatFloat(p.Factor, 'g', -1, 64)
}

// Apply changes the values (or, for jitter, the times) of every file of
// c (missing values stay missing) and returns the function that puts
// them back.
func (p Probe) Apply(c *Corpus) (restore func()) {
	saved := make([][]float64, len(c.Files))
	times := make([][]int64, len(c.Files))
	for i, f := range c.Files {
		saved[i] = append([]float64(nil), f.Values...)
		times[i] = append([]int64(nil), f.Times...)
		switch p.Kind {
		case "jitter":
			f.jitter(p.Factor, uint64(i))
			continue
		case "gaps":
			f.gaps(p.Factor, uint64(i))
			continue
		}
		p.apply(f)
	}
	return func() {
		for i, f := range c.Files {
			copy(f.Values, saved[i])
			copy(f.Times, times[i])
		}
	}
}

// jitter moves each row's time by up to share of the file's median
// interval either way, by a fixed pseudo-random amount per file (seed)
// and row, in whole seconds, keeping the times increasing.
func (f *File) jitter(share float64, seed uint64) {
	if len(f.Times) < 2 {
		return
	}
	gaps := make([]int64, len(f.Times)-1)
	for i := range gaps {
		gaps[i] = f.Times[i+1] - f.Times[i]
	}
	slices.Sort(gaps)
	iv := float64(gaps[len(gaps)/2])
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range f.Times {
		u := rng.Float64()*2 - 1 // in [-1, 1)
		// Whole seconds, as the corpus's format writes times.
		f.Times[i] += 1000 * int64(math.Round(u*share*iv/1000))
		if i > 0 && f.Times[i] <= f.Times[i-1] {
			f.Times[i] = f.Times[i-1] + 1000
		}
	}
}

// gaps blanks share of the rows outside the windows (their values made
// NaN, as a missed scrape reads), in runs of 1, 2, 4, … 64 rows drawn
// with equal chance, each run starting at a pseudo-random row (seed)
// and cut short at a window or a blank row. A run that starts in a
// window or on a blank row is drawn again, up to a bound.
func (f *File) gaps(share float64, seed uint64) {
	free := 0
	for r := range f.Rows() {
		if !math.IsNaN(f.Values[r]) && !f.inWindow(r) {
			free++
		}
	}
	want := int(share * float64(free))
	rng := rand.New(rand.NewPCG(seed, 2))
	for tries := 0; want > 0 && tries < 100*f.Rows(); tries++ {
		at := rng.IntN(f.Rows())
		n := 1 << rng.IntN(7) // 1 to 64
		for r := at; r < min(at+n, f.Rows()) && want > 0; r++ {
			if math.IsNaN(f.Values[r]) || f.inWindow(r) {
				break
			}
			f.Values[r] = math.NaN()
			want--
		}
	}
}

// inWindow reports whether row r lies in one of the file's windows.
func (f *File) inWindow(r int) bool {
	for _, w := range f.Windows {
		if r >= w.First && r <= w.Last {
			return true
		}
	}
	return false
}

func (p Probe) apply(f *File) {
	lo, hi, mag := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range f.Values {
		if !math.IsNaN(v) {
			lo, hi, mag = min(lo, v), max(hi, v), max(mag, math.Abs(v))
		}
	}
	if lo > hi { // no value at all
		return
	}
	for i, v := range f.Values {
		if math.IsNaN(v) {
			continue
		}
		switch p.Kind {
		case "offset":
			f.Values[i] = v + p.Factor*(hi-lo)
		case "scale":
			f.Values[i] = v * p.Factor
		case "mirror":
			f.Values[i] = hi + lo - v
		}
	}
	switch p.Kind {
	case "wild":
		if at := f.quietRow(); at >= 0 {
			f.Values[at] = p.Factor * max(mag, 1)
		}
	case "step":
		if at := f.quietRow(); at >= 0 {
			for i := at; i < len(f.Values); i++ {
				f.Values[i] *= p.Factor
			}
		}
	case "zero":
		if at := f.quietRow(); at >= 0 {
			for i := at; i < min(at+int(p.Factor), len(f.Values)); i++ {
				if !math.IsNaN(f.Values[i]) {
					f.Values[i] = 0
				}
			}
		}
	}
}

// quietRow is the first row from a third of the file on that lies in no
// window and has a value, or -1: where the wild, step and zero probes change
// the file, after NAB's probation (15 %) and clear of the incidents
// themselves.
func (f *File) quietRow() int {
	for r := f.Rows() / 3; r < f.Rows(); r++ {
		if math.IsNaN(f.Values[r]) {
			continue
		}
		if !f.inWindow(r) {
			return r
		}
	}
	return -1
}
