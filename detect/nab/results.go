package nab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WriteResults writes NAB-format result files for one detector:
// <out>/<name>/<category>/<name>_<file>.csv with header
// "timestamp,value,anomaly_score" and one row per data row, in order.
// The name must not contain "_" or "." (NAB splits file names on them).
func WriteResults(out, name string, c *Corpus, scores [][]float64) error {
	if name == "" || strings.ContainsAny(name, "_./\\") {
		return fmt.Errorf("detector name %q: must be non-empty without '_', '.' or path separators", name)
	}
	for i, f := range c.Files {
		dir := filepath.Join(out, name, f.Category())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create result directory: %w", err)
		}
		p := filepath.Join(dir, name+"_"+filepath.Base(f.Name))
		if err := writeResultFile(p, f, scores[i]); err != nil {
			return fmt.Errorf("write %q: %w", p, err)
		}
	}
	return nil
}

func writeResultFile(p string, f *File, scores []float64) (err error) {
	fh, err := os.Create(p)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(fh)
	w.WriteString("timestamp,value,anomaly_score\n")
	buf := make([]byte, 0, 32)
	for i := range f.raw {
		w.Write(f.rawTimestamp(i))
		w.WriteByte(',')
		w.Write(f.rawValue(i))
		w.WriteByte(',')
		w.Write(strconv.AppendFloat(buf[:0], clean(scores[i]), 'g', -1, 64))
		w.WriteByte('\n')
	}
	return w.Flush()
}
