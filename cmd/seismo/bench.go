package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"golang.org/x/term"

	"github.com/seismo-agent/seismo/detect"
	"github.com/seismo-agent/seismo/detect/nab"
)

func registerBench(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "bench", "Run benchmarks.").
		Command("nab", "Run a detector over the NAB corpus, write NAB-format results and print NAB scores.")
	var o benchNABOptions
	cmd.Flag("data", "NAB corpus directory (holds data/ and labels/).").Required().ExistingDirVar(&o.data)
	cmd.Flag("out", "Write NAB-format result files under this directory (<out>/<detector>/<category>/<detector>_<file>.csv).").StringVar(&o.out)
	cmd.Flag("detector", "Detector type to run, as rule files name it.").Default("auto").StringVar(&o.detector)
	cmd.Flag("threshold", "The detector's alert threshold, as a rule's detector block sets it: the detector runs with it, and the fixed-threshold score is taken at it (default: the detector's own).").Float64Var(&o.threshold)
	cmd.Flag("report", "Also print standard scores per category, at the optimised and the fixed threshold.").BoolVar(&o.report)
	cmd.Flag("files", "Also print, per file, its score at the alert threshold (the detector's own, or --threshold), the windows it missed and when its false alarms came.").BoolVar(&o.files)
	cmd.Flag("cross-validate", "Also print cross-validated scores: the threshold tuned on all categories but one (or on half of them) and scored on the held-out ones.").BoolVar(&o.crossValidate)
	cmd.Flag("shifts", "Also run the corpus with its clock shifted by 1/N of an hour, N-1 more times, and print the standard score's mean and range: how much of it rests on where the data falls within the detector's hours.").Default("1").IntVar(&o.shifts)
	cmd.Flag("probe", "Also run the corpus with its values (or times) changed and the windows as they were, and print the standard score: "+probeHelp()+". Repeatable.").PlaceHolder("KIND[=F]").StringsVar(&o.probes)
	cmd.Action(cli.action(func(ctx context.Context) error {
		o.progress = isTerminal(cli.stderr)
		return benchNAB(ctx, cli.stdout, cli.stderr, o)
	}))
}

type benchNABOptions struct {
	data, out, detector string
	threshold           float64 // 0: the detector's default
	progress            bool
	report              bool
	files               bool
	crossValidate       bool
	shifts              int      // runs at clocks shifted by 1/shifts of an hour; 1: none
	probes              []string // --probe values, as given (see nab.ParseProbe)
}

// probeHelp lists the probes for --probe's help.
func probeHelp() string {
	forms := make([]string, len(nab.ProbeKinds))
	for i, k := range nab.ProbeKinds {
		forms[i] = k.Form + " (" + k.Doc + ")"
	}
	return strings.Join(forms, "; ")
}

// benchNAB runs one detector over the corpus in a fresh instance per file and
// prints the three NAB profiles (threshold optimised), the standard profile
// at the fixed alert threshold, and timings.
func benchNAB(ctx context.Context, stdout, stderr io.Writer, o benchNABOptions) error {
	wallStart := time.Now()
	probes := make([]nab.Probe, len(o.probes))
	for i, s := range o.probes {
		p, err := nab.ParseProbe(s)
		if err != nil {
			return fmt.Errorf("--probe: %w", err)
		}
		probes[i] = p
	}
	corpus, err := nab.Load(o.data)
	if err != nil {
		return err
	}
	for _, w := range corpus.Warnings {
		fmt.Fprintf(stderr, "labels: %s\n", w)
	}
	for _, w := range corpus.Sorted {
		fmt.Fprintf(stderr, "data: %s\n", w)
	}
	for _, name := range corpus.Unlisted {
		fmt.Fprintf(stderr, "data: %s: not in labels/combined_windows.json; left out\n", name)
	}
	cfg, err := nab.KindConfig(o.detector)
	if err != nil {
		return err
	}
	if o.threshold != 0 {
		if err := nab.SetThreshold(cfg, o.threshold); err != nil {
			return fmt.Errorf("--threshold: detector %q: %w", o.detector, err)
		}
	}
	newDetector, threshold, err := nab.Factory(cfg)
	if err != nil {
		return fmt.Errorf("detector %q: %w", o.detector, err)
	}
	var progress func(done, total int)
	if o.progress {
		progress = func(done, total int) {
			fmt.Fprintf(stderr, "\r%d/%d files", done, total)
			if done == total {
				fmt.Fprint(stderr, "\r\033[K")
			}
		}
	}
	scores, detectorTime, err := nab.Run(corpus, newDetector, progress)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.out != "" {
		if err := nab.WriteResults(o.out, o.detector, corpus, scores); err != nil {
			return err
		}
	}
	report := nab.Evaluate(corpus, scores, threshold)
	wall := time.Since(wallStart)

	fmt.Fprintf(stdout, "NAB: detector %q over %d files, %d rows (%d missing values), %d windows",
		o.detector, len(corpus.Files), report.Rows, corpus.Missing(), corpus.Windows())
	if n := len(corpus.Warnings); n > 0 {
		fmt.Fprintf(stdout, " (%d label repairs, listed on stderr)", n)
	}
	switch n := len(corpus.Unlisted); {
	case n == 1:
		fmt.Fprint(stdout, " (1 data file not in the windows file left out, named on stderr)")
	case n > 1:
		fmt.Fprintf(stdout, " (%d data files not in the windows file left out, named on stderr)", n)
	}
	switch n := len(corpus.Sorted); {
	case n == 1:
		fmt.Fprint(stdout, " (1 file with rows out of time order, listed on stderr)")
	case n > 1:
		fmt.Fprintf(stdout, " (%d files with rows out of time order, listed on stderr)", n)
	}
	fmt.Fprint(stdout, "\n")
	if n := rowNumbered(corpus); n > 0 {
		fmt.Fprintf(stdout, "%d of %d files are timestamped by row number (a second apart from 1970): auto has no time of day for them, unless it finds a daily cycle in their samples\n", n, len(corpus.Files))
	}
	fmt.Fprint(stdout, "\n")
	fmt.Fprintf(stdout, "%-20s %7s  %-10s %4s %4s %5s\n", "profile", "score", "threshold", "TP", "FN", "FP")
	for _, r := range report.Optimized {
		fmt.Fprintf(stdout, "%-20s %7.2f  %-10.6g %4d %4d %5d\n", r.Profile.Name, r.Normalized, r.Threshold, r.TP, r.FN, r.FP)
	}
	f := report.Fixed
	fmt.Fprintf(stdout, "%-20s %7.2f  %-10.6g %4d %4d %5d  (fixed alert threshold)\n\n", "standard", f.Normalized, f.Threshold, f.TP, f.FN, f.FP)

	if o.report {
		printCategories(stdout, nab.ByCategory(corpus, scores, report.Optimized[0].Threshold, threshold))
	}
	if o.files {
		printFiles(stdout, corpus, scores, threshold)
	}
	if o.crossValidate {
		cands := []nab.Candidate{{Name: o.detector, Scores: scores}}
		printFolds(stdout, "leave one category out", nab.CrossValidate(corpus, cands, corpus.LeaveOneOut(), nab.Standard))
		printFolds(stdout, "halves", nab.CrossValidate(corpus, cands, corpus.Halves(), nab.Standard))
	}

	if o.shifts > 1 {
		if err := printShifts(ctx, stdout, corpus, newDetector, threshold, report, o.shifts); err != nil {
			return err
		}
	}
	if len(probes) > 0 {
		if err := printProbes(ctx, stdout, corpus, newDetector, threshold, report, probes); err != nil {
			return err
		}
	}

	if corpus.IsNAB() {
		std := report.Optimized[0].Normalized
		rank := 1
		for _, e := range nab.Scoreboard {
			if e.Standard > std {
				rank++
			}
		}
		best := nab.Scoreboard[0]
		fmt.Fprintf(stdout, "published scoreboard: rank %d of %d by standard score (best: %s %.1f / %.1f / %.1f)\n",
			rank, len(nab.Scoreboard)+1, best.Name, best.Standard, best.LowFP, best.LowFN)
	} else {
		// The published scores are NAB's; on other data compare with
		// another detector run on the same corpus (--detector zscore).
		fmt.Fprintln(stdout, "published scoreboard: not compared (its scores are for the NAB corpus, and this corpus is not it)")
	}
	fmt.Fprintf(stdout, "detector time %v (%.0f ns/row), wall time %v\n",
		detectorTime.Round(time.Millisecond), float64(detectorTime.Nanoseconds())/float64(report.Rows), wall.Round(time.Millisecond))
	if o.out != "" {
		fmt.Fprintf(stdout, "results in %s\n", o.out)
	}
	return nil
}

// printCategories prints the standard profile per category.
func printCategories(w io.Writer, cats []nab.CategoryScore) {
	fmt.Fprintf(w, "per category (standard profile; optimised = the corpus-wide optimised threshold)\n")
	fmt.Fprintf(w, "%-22s %5s %7s %7s  %9s %4s %4s %5s  %9s %4s %4s %5s\n",
		"category", "files", "windows", "missing", "optimised", "TP", "FN", "FP", "fixed", "TP", "FN", "FP")
	for _, c := range cats {
		o, f := c.Optimized, c.Fixed
		fmt.Fprintf(w, "%-22s %5d %7d %7d  %9s %4d %4d %5d  %9s %4d %4d %5d\n",
			c.Category, c.Files, c.Windows, c.Missing, categoryScore(o, c.Windows), o.TP, o.FN, o.FP,
			categoryScore(f, c.Windows), f.TP, f.FN, f.FP)
	}
	fmt.Fprintln(w)
}

// printFiles prints, per file, the standard profile at the alert
// threshold, the windows with no detection and the timestamps of the
// false alarms (the first five): what the alerts would have done, so that
// a user scoring their own export sees where a detector fails on it.
func printFiles(w io.Writer, c *nab.Corpus, scores [][]float64, threshold float64) {
	width := len("file")
	for _, f := range c.Files {
		width = max(width, len(f.Name))
	}
	fmt.Fprintf(w, "per file (standard profile at the alert threshold %.6g)\n", threshold)
	fmt.Fprintf(w, "%-*s %7s %7s %8s %4s %4s %5s\n", width, "file", "rows", "windows", "raw", "TP", "FN", "FP")
	for i, f := range c.Files {
		o := nab.Score([]nab.Series{{Windows: f.Windows, Scores: scores[i]}}, nab.Standard, threshold)
		fmt.Fprintf(w, "%-*s %7d %7d %8.3f %4d %4d %5d\n", width, f.Name, f.Rows(), len(f.Windows), o.Raw, o.TP, o.FN, o.FP)
		var missed, alarms []string
		for _, win := range f.Windows {
			hit := false
			for r := win.First; r <= win.Last && !hit; r++ {
				hit = scores[i][r] >= threshold
			}
			if !hit {
				missed = append(missed, f.RawTimestamp(win.First)+" to "+f.RawTimestamp(win.Last))
			}
		}
		n := 0
		for r := f.Probation(); r < f.Rows(); r++ {
			if scores[i][r] < threshold || inWindow(f.Windows, r) {
				continue
			}
			if n++; n <= 5 {
				alarms = append(alarms, f.RawTimestamp(r))
			}
		}
		for _, m := range missed {
			fmt.Fprintf(w, "    missed window %s\n", m)
		}
		if n > 0 {
			more := ""
			if n > len(alarms) {
				more = fmt.Sprintf(" (and %d more)", n-len(alarms))
			}
			fmt.Fprintf(w, "    false alarms at %s%s\n", strings.Join(alarms, ", "), more)
		}
	}
	fmt.Fprintln(w)
}

// inWindow reports whether row r lies in one of ws.
func inWindow(ws []nab.Window, r int) bool {
	for _, win := range ws {
		if r >= win.First && r <= win.Last {
			return true
		}
	}
	return false
}

// printFolds prints cross-validation results: per fold, the threshold tuned
// on the other categories and the score of the held-out ones with it.
func printFolds(w io.Writer, title string, folds []nab.FoldResult) {
	fmt.Fprintf(w, "cross-validation, %s (standard profile, threshold tuned on the rest)\n", title)
	fmt.Fprintf(w, "%-22s %10s %6s  %9s %4s %4s %5s\n", "held out", "threshold", "tuned", "held-out", "TP", "FN", "FP")
	for _, f := range folds {
		windows := f.Trial.TP + f.Trial.FN
		fmt.Fprintf(w, "%-22s %10.6g %6.2f  %9s %4d %4d %5d\n",
			strings.Join(f.Test, "+"), f.Tune.Threshold, f.Tune.Normalized, categoryScore(f.Trial, windows), f.Trial.TP, f.Trial.FN, f.Trial.FP)
	}
	fmt.Fprintln(w)
}

// categoryScore formats a normalised score, or the raw one where there is
// no window to normalise by (only false positives count there).
func categoryScore(o nab.Outcome, windows int) string {
	if windows == 0 {
		return fmt.Sprintf("raw %.2f", o.Raw)
	}
	return fmt.Sprintf("%.2f", o.Normalized)
}

// isTerminal reports whether w is a terminal, where progress is worth
// drawing.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// rowNumbered counts the files whose timestamps are row numbers, as auto
// tells them (detect.RowNumbers): by the first timestamp and the interval
// auto measures in its warm-up (detect.WarmUpInterval).
func rowNumbered(c *nab.Corpus) int {
	n := 0
	warm := detect.DefaultAutoConfig().WarmUp
	for _, f := range c.Files {
		if len(f.Times) < 2 {
			continue
		}
		if detect.RowNumbers(f.Times[0], detect.WarmUpInterval(f.Times, warm)) {
			n++
		}
	}
	return n
}

// printShifts runs the corpus again with every timestamp shifted by k/n of
// an hour (k = 1 to n-1; windows are rows and stay), and prints the
// standard profile, optimised and at the alert threshold, for each and
// their mean and range with the unshifted run (report). The values are the
// same; only where each sample falls within the detector's hour slices
// and days changes, as it does between two data sets whose clocks are
// aligned differently. A detector tuned on one alignment scores that one
// best.
// printProbes runs the corpus once per probe, its values changed and
// its windows as they were (see nab.Probe), and prints the standard
// score of each next to the corpus as loaded: how much of the score
// holds on metrics that differ from these in unit, offset or glitches.
func printProbes(ctx context.Context, w io.Writer, c *nab.Corpus, newDetector func() (detect.Detector, error), threshold float64, report nab.Report, probes []nab.Probe) error {
	fmt.Fprintf(w, "probes: the values (or times) changed, the windows as they were (standard profile, optimised / at the alert threshold)\n")
	fmt.Fprintf(w, "%-14s %7.2f  %7.2f\n", "as loaded", report.Optimized[0].Normalized, report.Fixed.Normalized)
	for _, p := range probes {
		if err := ctx.Err(); err != nil {
			return err
		}
		restore := p.Apply(c)
		scores, _, err := nab.Run(c, newDetector, nil)
		restore()
		if err != nil {
			return err
		}
		r := nab.Evaluate(c, scores, threshold)
		fmt.Fprintf(w, "%-14s %7.2f  %7.2f\n", p, r.Optimized[0].Normalized, r.Fixed.Normalized)
	}
	fmt.Fprintln(w)
	return nil
}

func printShifts(ctx context.Context, w io.Writer, c *nab.Corpus, newDetector func() (detect.Detector, error), threshold float64, report nab.Report, n int) error {
	step := time.Hour.Milliseconds() / int64(n)
	opt := []float64{report.Optimized[0].Normalized}
	fixed := []float64{report.Fixed.Normalized}
	defer c.ShiftTimes(-int64(n-1) * step) // the corpus as loaded again
	for k := 1; k < n; k++ {
		c.ShiftTimes(step)
		if err := ctx.Err(); err != nil {
			return err
		}
		scores, _, err := nab.Run(c, newDetector, nil)
		if err != nil {
			return err
		}
		r := nab.Evaluate(c, scores, threshold)
		opt = append(opt, r.Optimized[0].Normalized)
		fixed = append(fixed, r.Fixed.Normalized)
	}
	fmt.Fprintf(w, "clock shifted by 1/%d of an hour at a time (standard profile, optimised / at the alert threshold)\n", n)
	for k := range opt {
		fmt.Fprintf(w, "%8s  %7.2f  %7.2f\n", time.Duration(int64(k)*step)*time.Millisecond, opt[k], fixed[k])
	}
	stats := func(v []float64) (mean, lo, hi float64) {
		lo, hi = v[0], v[0]
		for _, x := range v {
			mean += x / float64(len(v))
			lo, hi = min(lo, x), max(hi, x)
		}
		return mean, lo, hi
	}
	m, lo, hi := stats(opt)
	fm, flo, fhi := stats(fixed)
	fmt.Fprintf(w, "mean      %7.2f  %7.2f  (range %.2f to %.2f; at the alert threshold %.2f to %.2f)\n\n", m, fm, lo, hi, flo, fhi)
	return nil
}
