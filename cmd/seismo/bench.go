package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"golang.org/x/term"

	"github.com/seismo-agent/seismo/detect/nab"
)

func registerBench(app *kingpin.Application, cli *cliEnv) {
	cmd := cli.command(app, "bench", "Run benchmarks.").
		Command("nab", "Run a detector over the NAB corpus, write NAB-format results and print NAB scores.")
	var o benchNABOptions
	cmd.Flag("data", "NAB corpus directory (holds data/ and labels/).").Required().ExistingDirVar(&o.data)
	cmd.Flag("out", "Write NAB-format result files under this directory (<out>/<detector>/<category>/<detector>_<file>.csv).").StringVar(&o.out)
	cmd.Flag("detector", "Detector type to run, as rule files name it.").Default("auto").StringVar(&o.detector)
	cmd.Flag("threshold", "Alert threshold for the fixed-threshold score (default: the detector's own).").Float64Var(&o.threshold)
	cmd.Action(cli.action(func(ctx context.Context) error {
		o.progress = isTerminal(cli.stderr)
		return benchNAB(ctx, cli.stdout, cli.stderr, o)
	}))
}

type benchNABOptions struct {
	data, out, detector string
	threshold           float64 // 0: the detector's default
	progress            bool
}

// benchNAB runs one detector over the corpus in a fresh instance per file and
// prints the three NAB profiles (threshold optimised), the standard profile
// at the fixed alert threshold, and timings.
func benchNAB(ctx context.Context, stdout, stderr io.Writer, o benchNABOptions) error {
	wallStart := time.Now()
	corpus, err := nab.Load(o.data)
	if err != nil {
		return err
	}
	cfg, err := nab.KindConfig(o.detector)
	if err != nil {
		return err
	}
	newDetector, threshold, err := nab.Factory(cfg)
	if err != nil {
		return fmt.Errorf("detector %q: %w", o.detector, err)
	}
	if o.threshold != 0 {
		threshold = o.threshold
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

	fmt.Fprintf(stdout, "NAB: detector %q over %d files, %d rows, %d windows\n\n",
		o.detector, len(corpus.Files), report.Rows, corpus.Windows())
	fmt.Fprintf(stdout, "%-20s %7s  %-10s %4s %4s %5s\n", "profile", "score", "threshold", "TP", "FN", "FP")
	for _, r := range report.Optimized {
		fmt.Fprintf(stdout, "%-20s %7.2f  %-10.6g %4d %4d %5d\n", r.Profile.Name, r.Normalized, r.Threshold, r.TP, r.FN, r.FP)
	}
	f := report.Fixed
	fmt.Fprintf(stdout, "%-20s %7.2f  %-10.6g %4d %4d %5d  (fixed alert threshold)\n\n", "standard", f.Normalized, f.Threshold, f.TP, f.FN, f.FP)

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
	fmt.Fprintf(stdout, "detector time %v (%.0f ns/row), wall time %v\n",
		detectorTime.Round(time.Millisecond), float64(detectorTime.Nanoseconds())/float64(report.Rows), wall.Round(time.Millisecond))
	if o.out != "" {
		fmt.Fprintf(stdout, "results in %s\n", o.out)
	}
	return nil
}

// isTerminal reports whether w is a terminal, where progress is worth
// drawing.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
