package detect

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The -update flag rewrites the golden files. Other golden tests in this
// package may define the same flag; define it only if nobody has yet, and
// read it through the flag set so either definition works.
var _ = func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
	return true
}()

func shapeUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// shapeSeriesFile is one parsed file of detect/testdata/shapes (the notation
// is described in testdata/shapes/README.md).
type shapeSeriesFile struct {
	name     string
	kind     string
	config   string // YAML flow map over the defaults, may be empty
	interval time.Duration
	signals  []shapeSeriesSignal
	onset    int // -1 when there is no incident
	expect   map[string]string
}

type shapeSeriesSignal struct {
	name   string
	keys   []string // nil for a scalar signal
	values []float64
}

func (f *shapeSeriesFile) length() int {
	n := 0
	for _, s := range f.signals {
		n = max(n, len(s.values))
	}
	return n
}

// inputs returns the detector inputs at sample i.
func (f *shapeSeriesFile) inputs(i int) Inputs {
	in := Inputs{}
	for _, s := range f.signals {
		if i >= len(s.values) || math.IsNaN(s.values[i]) {
			continue
		}
		if s.keys == nil {
			in[s.name] = append(in[s.name], Sample{Value: s.values[i]})
			continue
		}
		for _, k := range s.keys {
			in[s.name] = append(in[s.name], Sample{Key: k, Value: s.values[i]})
		}
	}
	return in
}

// shapeExpandValues expands "0.2x30 1+0.5x4 _x3 7" into values; "_" is a
// missing sample. A noise > 0 multiplies each value by 1+noise·N(0,1).
func shapeExpandValues(tokens []string, noise float64, rng *rand.Rand) ([]float64, error) {
	var out []float64
	for _, t := range tokens {
		base, count := t, 1
		if i := strings.LastIndex(t, "x"); i > 0 {
			n, err := strconv.Atoi(t[i+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad repeat in %q", t)
			}
			base, count = t[:i], n
		}
		if base == "_" {
			for range count {
				out = append(out, math.NaN())
			}
			continue
		}
		start, step := base, "0"
		if i := strings.LastIndexAny(base, "+-"); i > 0 && base[i-1] != 'e' {
			start, step = base[:i], base[i:]
		}
		a, err := strconv.ParseFloat(start, 64)
		if err != nil {
			return nil, fmt.Errorf("bad value %q", t)
		}
		b, err := strconv.ParseFloat(step, 64)
		if err != nil {
			return nil, fmt.Errorf("bad step %q", t)
		}
		for j := range count {
			v := a + float64(j)*b
			if noise > 0 {
				v *= 1 + noise*rng.NormFloat64()
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// shapeExpandKeys expands "c1..c20" into c1 … c20, and "a,b" into a, b.
func shapeExpandKeys(spec string) ([]string, error) {
	var keys []string
	for _, part := range strings.Split(spec, ",") {
		lo, hi, ok := strings.Cut(part, "..")
		if !ok {
			keys = append(keys, part)
			continue
		}
		prefix := strings.TrimRight(lo, "0123456789")
		from, err1 := strconv.Atoi(lo[len(prefix):])
		to, err2 := strconv.Atoi(strings.TrimPrefix(hi, prefix))
		if err1 != nil || err2 != nil || to < from {
			return nil, fmt.Errorf("bad key range %q", part)
		}
		for n := from; n <= to; n++ {
			keys = append(keys, prefix+strconv.Itoa(n))
		}
	}
	return keys, nil
}

func shapeParseSeriesFile(path string) (*shapeSeriesFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f := &shapeSeriesFile{
		name: strings.TrimSuffix(filepath.Base(path), ".series"), onset: -1,
		expect: map[string]string{}, interval: 10 * time.Second,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	noise := 0.0
	sc := bufio.NewScanner(fh)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.Index(text, "#"); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
		}
		switch fields[0] {
		case "detector":
			if len(fields) != 2 {
				return nil, bad("want: detector NAME")
			}
			f.kind = fields[1]
		case "config":
			f.config = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "config"))
		case "load":
			if len(fields) != 2 {
				return nil, bad("want: load INTERVAL")
			}
			if f.interval, err = time.ParseDuration(fields[1]); err != nil {
				return nil, bad("%v", err)
			}
		case "noise":
			if len(fields) != 2 {
				return nil, bad("want: noise FRACTION")
			}
			if noise, err = strconv.ParseFloat(fields[1], 64); err != nil {
				return nil, bad("%v", err)
			}
		case "onset":
			if len(fields) != 2 {
				return nil, bad("want: onset INDEX")
			}
			if f.onset, err = strconv.Atoi(fields[1]); err != nil {
				return nil, bad("%v", err)
			}
		case "expect":
			if len(fields) != 3 {
				return nil, bad("want: expect WHAT VALUE")
			}
			f.expect[fields[1]] = fields[2]
		default:
			s := shapeSeriesSignal{name: fields[0]}
			if name, rest, ok := strings.Cut(fields[0], "["); ok {
				s.name = name
				if s.keys, err = shapeExpandKeys(strings.TrimSuffix(rest, "]")); err != nil {
					return nil, bad("%v", err)
				}
			}
			if s.values, err = shapeExpandValues(fields[1:], noise, rng); err != nil {
				return nil, bad("%v", err)
			}
			f.signals = append(f.signals, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if f.kind == "" {
		return nil, fmt.Errorf("%s: no detector line", path)
	}
	return f, nil
}

// newDetector builds the file's detector from its kind's defaults overlaid
// strictly with the file's config map.
func (f *shapeSeriesFile) newDetector(t testing.TB) Composite {
	t.Helper()
	k, ok := Lookup(f.kind)
	require.True(t, ok, "unknown detector %q", f.kind)
	cfg := k.NewConfig()
	if f.config != "" {
		dec := yaml.NewDecoder(strings.NewReader(f.config))
		dec.KnownFields(true)
		require.NoError(t, dec.Decode(cfg))
	}
	cc, ok := cfg.(CompositeConfig)
	require.True(t, ok)
	d, err := cc.New()
	require.NoError(t, err)
	return d
}

func (f *shapeSeriesFile) run(t testing.TB) []Result {
	d := f.newDetector(t)
	out := make([]Result, f.length())
	for i := range out {
		out[i] = d.Observe(int64(i)*f.interval.Milliseconds(), f.inputs(i))
	}
	return out
}

// shapeEpisodes counts transitions into paging and informational anomalies
// and returns the first paging index (-1 if none).
func shapeEpisodes(rs []Result) (pages, infos, firstPage int) {
	firstPage = -1
	prevPage, prevInfo := false, false
	for i, r := range rs {
		page := r.State == StateAnomalous && !r.Informational
		info := r.State == StateAnomalous && r.Informational
		if page && !prevPage {
			pages++
			if firstPage < 0 {
				firstPage = i
			}
		}
		if info && !prevInfo {
			infos++
		}
		prevPage, prevInfo = page, info
	}
	return pages, infos, firstPage
}

// shapeGolden renders results as runs of equal (state, page/info, kind), with
// the summary at the start of every anomalous run.
func shapeGolden(f *shapeSeriesFile, rs []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s, %d samples of %v\n", f.name, f.kind, len(rs), f.interval)
	label := func(r Result) string {
		s := r.State.String()
		if r.State == StateAnomalous {
			if r.Informational {
				s += " info"
			} else {
				s += " page"
			}
			if r.Explanation != nil {
				s += " " + r.Explanation.Kind
			}
		}
		return s
	}
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && label(rs[j+1]) == label(rs[i]) {
			j++
		}
		fmt.Fprintf(&b, "%d-%d %s\n", i, j, label(rs[i]))
		for _, k := range []int{i, j} {
			x := rs[k].Explanation
			if x == nil || (k == j && i == j) {
				continue
			}
			fmt.Fprintf(&b, "  %d: %s\n", k, x.Summary)
			if x.Breadth != nil {
				fmt.Fprintf(&b, "  %d: breadth %s active=%d affected=%d share=%v hhi=%v top=%v\n", k,
					x.Breadth.Label, x.Breadth.Active, x.Breadth.Affected, x.Breadth.AffectedShare,
					x.Breadth.Concentration, x.Breadth.Top)
			}
		}
		i = j + 1
	}
	pages, infos, first := shapeEpisodes(rs)
	fmt.Fprintf(&b, "pages %d infos %d", pages, infos)
	if f.onset >= 0 && first >= 0 {
		fmt.Fprintf(&b, " delay %d", first-f.onset)
	}
	b.WriteString("\n")
	return b.String()
}

func shapeSeriesFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "shapes", "*.series"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sort.Strings(files)
	return files
}

// TestShapeSeries runs every series file, checks its expectations and
// compares the verdicts with the golden file (go test -run TestShapeSeries
// -update rewrites them).
func TestShapeSeries(t *testing.T) {
	for _, path := range shapeSeriesFiles(t) {
		f, err := shapeParseSeriesFile(path)
		require.NoError(t, err)
		t.Run(f.name, func(t *testing.T) {
			rs := f.run(t)
			pages, infos, first := shapeEpisodes(rs)
			if v, ok := f.expect["pages"]; ok {
				require.Equal(t, v, strconv.Itoa(pages), "paging episodes")
			}
			if v, ok := f.expect["infos"]; ok {
				require.Equal(t, v, strconv.Itoa(infos), "informational episodes")
			}
			if v, ok := f.expect["delay"]; ok {
				maxDelay, err := strconv.Atoi(v)
				require.NoError(t, err)
				require.GreaterOrEqual(t, f.onset, 0, "expect delay needs an onset line")
				require.GreaterOrEqual(t, first, f.onset, "paged before the onset (or never)")
				require.LessOrEqual(t, first-f.onset, maxDelay, "detection delay in samples")
			}
			if v, ok := f.expect["kind"]; ok {
				for i, r := range rs {
					if r.State == StateAnomalous {
						require.NotNil(t, r.Explanation, "sample %d", i)
						require.Equal(t, v, r.Explanation.Kind, "sample %d", i)
					}
				}
			}
			for i, r := range rs {
				if r.State == StateAnomalous {
					require.NotNil(t, r.Explanation, "sample %d has no explanation", i)
					x := r.Explanation
					require.NotEmpty(t, x.Summary)
					require.NotEmpty(t, x.Cause)
					require.Equal(t, f.kind, x.Detector)
					require.NotEmpty(t, x.Signals)
					require.GreaterOrEqual(t, x.Score, 0.0)
					require.LessOrEqual(t, x.Score, 1.0)
					_, err := json.Marshal(x) // notifications carry it as JSON: no NaN or Inf
					require.NoError(t, err, "sample %d", i)
				}
			}

			got := shapeGolden(f, rs)
			golden := filepath.Join("testdata", "shapes", f.name+".golden")
			if shapeUpdate() {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}

// TestShapeSnapshotRoundTrip cuts every series at several points, restores
// the snapshot into a fresh detector and requires the rest of the verdicts to
// equal those of an uninterrupted run.
func TestShapeSnapshotRoundTrip(t *testing.T) {
	for _, path := range shapeSeriesFiles(t) {
		f, err := shapeParseSeriesFile(path)
		require.NoError(t, err)
		t.Run(f.name, func(t *testing.T) {
			want := f.run(t)
			n := len(want)
			for _, cut := range []int{n / 3, n / 2, 2 * n / 3, n - 3} {
				a := f.newDetector(t)
				for i := 0; i < cut; i++ {
					a.Observe(int64(i)*f.interval.Milliseconds(), f.inputs(i))
				}
				snap, err := a.MarshalBinary()
				require.NoError(t, err)
				b := f.newDetector(t)
				require.NoError(t, b.UnmarshalBinary(snap))
				for i := cut; i < n; i++ {
					got := b.Observe(int64(i)*f.interval.Milliseconds(), f.inputs(i))
					require.Equal(t, want[i], got, "sample %d after restoring at %d", i, cut)
				}
			}
		})
	}
}
