package rules

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce groups the several events an editor's save produces.
const watchDebounce = time.Second

// watch reloads the rules when a file in a rule file's directory changes.
// It watches directories, not files, because editors replace files.
func (m *Manager) watch(ctx context.Context) {
	var once sync.Once
	ready := func() { once.Do(func() { close(m.watchReady) }) }
	defer ready()
	m.mu.Lock()
	enabled := m.cfg.WatchFiles
	m.mu.Unlock()
	if !enabled {
		ready()
		<-ctx.Done()
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		m.logger.Warn("cannot watch rule files", "err", err)
		ready()
		<-ctx.Done()
		return
	}
	defer w.Close()
	watched := map[string]bool{}
	rewatch := func() {
		m.mu.Lock()
		cfg := m.cfg
		m.mu.Unlock()
		for _, f := range cfg.Files {
			d := filepath.Dir(f)
			if watched[d] {
				continue
			}
			if err := w.Add(d); err != nil {
				m.logger.Warn("cannot watch rule directory", "dir", d, "err", err)
				continue
			}
			watched[d] = true
		}
	}
	rewatch()
	ready()
	var fire <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !m.isRuleFile(ev.Name) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(watchDebounce)
			} else {
				timer.Reset(watchDebounce)
			}
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			m.logger.Warn("rule file watch", "err", err)
		case <-fire:
			fire = nil
			m.mu.Lock()
			cfg := m.cfg
			m.mu.Unlock()
			m.logger.Info("rule file changed, reloading")
			err := m.ApplyConfig(cfg) // logs and sets the metric itself
			rewatch()
			if m.afterWatchReload != nil {
				m.afterWatchReload(err)
			}
		}
	}
}

func (m *Manager) isRuleFile(name string) bool {
	m.mu.Lock()
	files := m.cfg.Files
	m.mu.Unlock()
	for _, pat := range files {
		if ok, _ := filepath.Match(pat, name); ok || pat == name {
			return true
		}
	}
	return false
}
