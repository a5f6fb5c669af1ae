package collectors

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TargetStatus is one target's state as Prometheus' /targets page shows it.
type TargetStatus struct {
	Job      string        `json:"job"`
	Instance string        `json:"instance"`
	Labels   labels.Labels `json:"labels"`
	Interval time.Duration `json:"interval"`
	// Health is "up", "down", or "unknown" before the first collection.
	Health string `json:"health"`
	// LastScrape is the timestamp of the last collection; zero before the
	// first one.
	LastScrape time.Time `json:"lastScrape"`
	// LastDuration is how long the last collection took.
	LastDuration time.Duration `json:"lastScrapeDuration"`
	LastError    string        `json:"lastError,omitempty"`
}

// targetStatus is a loop's last collection, read by Targets while the loop
// writes it.
type targetStatus struct {
	mu       sync.Mutex
	last     time.Time
	duration time.Duration
	err      string
}

func (s *targetStatus) set(ts time.Time, seconds float64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.duration, s.err = ts, time.Duration(seconds*float64(time.Second)), ""
	if err != nil {
		s.err = err.Error()
	}
}

// Targets returns the state of every running target of every job, sorted
// by job and instance. It is safe to call while the scheduler runs.
func (s *Scheduler) Targets() []TargetStatus {
	s.mu.Lock()
	jobs := make([]*job, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	s.mu.Unlock()
	var out []TargetStatus
	for _, j := range jobs {
		j.mu.Lock()
		for _, l := range j.loops {
			l.status.mu.Lock()
			ts := TargetStatus{
				Job: l.job, Instance: l.instance, Labels: l.labels, Interval: l.interval,
				Health: "unknown", LastScrape: l.status.last, LastDuration: l.status.duration, LastError: l.status.err,
			}
			l.status.mu.Unlock()
			if !ts.LastScrape.IsZero() {
				ts.Health = "up"
				if ts.LastError != "" {
					ts.Health = "down"
				}
			}
			out = append(out, ts)
		}
		j.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b TargetStatus) int {
		if c := strings.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		return strings.Compare(a.Instance, b.Instance)
	})
	return out
}
