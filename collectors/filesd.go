package collectors

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"gopkg.in/yaml.v3"
)

// fileSD reads Prometheus file_sd files: a JSON or YAML list of
// {targets: [...], labels: {...}}. A file that cannot be read or parsed
// keeps its last good content, as in Prometheus.
type fileSD struct {
	patterns []string
	refresh  time.Duration
	logger   *slog.Logger
	last     map[string][]StaticConfig // per file
}

func newFileSD(cfgs []FileSDConfig, logger *slog.Logger) *fileSD {
	d := &fileSD{refresh: DefaultRefresh, logger: logger, last: map[string][]StaticConfig{}}
	for i, c := range cfgs {
		d.patterns = append(d.patterns, c.Files...)
		if c.RefreshInterval > 0 && (i == 0 || c.RefreshInterval < d.refresh) {
			d.refresh = c.RefreshInterval
		}
	}
	return d
}

// read returns the groups of every matching file, in file order.
func (d *fileSD) read() []StaticConfig {
	seen := map[string]bool{}
	var files []string
	for _, p := range d.patterns {
		m, _ := filepath.Glob(p) // patterns are validated
		for _, f := range m {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	for f := range d.last {
		if !seen[f] {
			delete(d.last, f) // a deleted file removes its targets
		}
	}
	var out []StaticConfig
	for _, f := range files {
		groups, err := readSDFile(f)
		if err != nil {
			d.logger.Warn("file_sd: keeping the last good targets", "file", f, "err", err)
			groups = d.last[f]
		} else {
			d.last[f] = groups
		}
		out = append(out, groups...)
	}
	return out
}

func readSDFile(f string) ([]StaticConfig, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	var groups []StaticConfig
	switch filepath.Ext(f) {
	case ".json":
		err = json.Unmarshal(b, &groups)
	default:
		err = yaml.Unmarshal(b, &groups)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", f, err)
	}
	for i, g := range groups {
		for _, t := range g.Targets {
			if err := validateHostPort(t); err != nil {
				return nil, fmt.Errorf("%s: group %d: %w", f, i, err)
			}
		}
		if err := validateLabels(g.Labels); err != nil {
			return nil, fmt.Errorf("%s: group %d: labels: %w", f, i, err)
		}
	}
	return groups, nil
}

// run calls update with the discovered groups at start and whenever they
// change: on file system events in the files' directories and every
// refresh interval (watches can miss events on some file systems).
func (d *fileSD) run(ctx context.Context, update func([]StaticConfig)) {
	// Watch before the first read, so no change falls between the two.
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		d.logger.Warn("file_sd: cannot watch files, polling only", "err", err)
	} else {
		defer w.Close()
		dirs := map[string]bool{}
		for _, p := range d.patterns {
			dirs[filepath.Dir(p)] = true
		}
		for dir := range dirs {
			// Watch the directory: editors replace files instead of writing them.
			if err := w.Add(dir); err != nil {
				d.logger.Warn("file_sd: cannot watch directory, polling only", "dir", dir, "err", err)
			}
		}
		events, errs = w.Events, w.Errors
	}
	current := d.read()
	update(current)
	t := time.NewTicker(d.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case err := <-errs:
			d.logger.Warn("file_sd: watch error", "err", err)
			continue
		case <-t.C:
		}
		next := d.read()
		if !reflect.DeepEqual(next, current) {
			current = next
			update(current)
		}
	}
}
