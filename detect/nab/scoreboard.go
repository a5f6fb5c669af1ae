package nab

import "slices"

// Entry is one published NAB result (normalised standard, low-FP, low-FN).
type Entry struct {
	Name                   string
	Standard, LowFP, LowFN float64
}

// Scoreboard is the published NAB scoreboard as given in the corpus README,
// best first.
var Scoreboard = []Entry{
	{"ARTime", 74.9, 65.1, 80.4},
	{"Numenta HTM", 70.5, 62.6, 75.2},
	{"CAD OSE", 69.9, 67.0, 73.2},
	{"earthgecko Skyline", 58.2, 46.2, 63.9},
	{"KNN CAD", 58.0, 43.4, 64.8},
	{"Relative Entropy", 54.6, 47.6, 58.8},
	{"Random Cut Forest", 51.7, 38.4, 59.7},
	{"Twitter ADVec", 47.1, 33.6, 53.5},
	{"Windowed Gaussian", 39.6, 20.9, 47.4},
	{"Etsy Skyline", 35.7, 27.1, 44.5},
	{"Bayesian Changepoint", 17.7, 3.2, 32.2},
	{"Random", 11.0, 1.2, 19.5},
	{"Null", 0, 0, 0},
}

// The published scores are for one corpus: NAB's 58 files, 365,558 rows
// and 116 windows in its seven categories.
const (
	nabFiles   = 58
	nabRows    = 365558
	nabWindows = 116
)

var nabCategories = []string{"artificialNoAnomaly", "artificialWithAnomaly", "realAWSCloudwatch", "realAdExchange", "realKnownCause", "realTraffic", "realTweets"}

// IsNAB reports whether c is the NAB corpus itself, the only one the
// Scoreboard's scores can be compared with: its files, rows, windows
// and categories as published. A user's own corpus in NAB's layout, or
// NAB with a file added, removed or relabelled, is not: a rank among
// the published detectors would mean nothing there.
func (c *Corpus) IsNAB() bool {
	return len(c.Files) == nabFiles && c.Rows() == nabRows && c.Windows() == nabWindows &&
		slices.Equal(c.Categories(), nabCategories)
}
