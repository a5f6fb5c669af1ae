package nab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkAutoOnNAB times auto's Observe over the whole NAB corpus, one
// fresh detector per file as `seismo bench nab` runs it: real series, with
// their warm-ups, records, bursts and counts, where BenchmarkDetector
// (package detect) times one synthetic series in steady state. It reports
// ns/row, the figure `seismo bench nab` prints as detector time.
func BenchmarkAutoOnNAB(b *testing.B) {
	c, err := Load(corpusDir(b))
	require.NoError(b, err)
	newDetector, _ := kindFactory(b, "auto")
	scores := make([][]float64, len(c.Files))
	for i, f := range c.Files {
		scores[i] = make([]float64, f.Rows())
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, f := range c.Files {
			d, err := newDetector()
			if err != nil {
				b.Fatal(err)
			}
			ScoreSeries(d, f.Times, f.Values, scores[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.Rows()), "ns/row")
}
