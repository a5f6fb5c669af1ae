// Package detect holds seismo's streaming statistics and anomaly detectors.
//
// Everything here is pure: no goroutines, no I/O, no clock reads, no logging.
// Time is an input (Unix milliseconds); every update is O(1) work (O(clients)
// for the per-client detectors) and bounded memory; every detector can be
// snapshotted to bytes and restored.
package detect

import "github.com/seismo-agent/seismo/internal/model"

// State is a detector's state after a sample.
type State uint8

// Detector states.
const (
	// StateWarmingUp means the baseline has too little history to judge.
	StateWarmingUp State = iota
	StateNormal
	StateAnomalous
)

func (s State) String() string {
	switch s {
	case StateWarmingUp:
		return "warming_up"
	case StateNormal:
		return "normal"
	case StateAnomalous:
		return "anomalous"
	}
	return "unknown"
}

// Direction says which way a value departed from its expectation.
type Direction int8

// Directions.
const (
	DirNone Direction = 0
	DirUp   Direction = 1
	DirDown Direction = -1
)

func (d Direction) String() string {
	switch d {
	case DirUp:
		return "up"
	case DirDown:
		return "down"
	}
	return ""
}

// Evidence says what made a verdict score: which of a detector's
// judgements found the sample unusual. An alert's explanation names it,
// since a value can be unusual without leaving the normal band (a run of
// samples that together are unlikely, or changes far larger than usual).
type Evidence uint8

// Evidence kinds. Detectors that judge one way name that way: ewma, mad
// and zscore a spike, cusum the level, seasonal the time of day once it
// judges a bucket.
const (
	EvidenceNone Evidence = iota
	// EvidenceLevel: the recent samples together lie unusually far from
	// the series' level.
	EvidenceLevel
	// EvidenceTimeOfDay: unusual for this time of day, against the
	// time-of-day slices or the day's profile.
	EvidenceTimeOfDay
	// EvidenceChanges: the series moves from sample to sample far more
	// than usual.
	EvidenceChanges
	// EvidenceSpike: the sample lies far outside the spread of the
	// recent samples.
	EvidenceSpike
	// EvidenceRecord: beyond the highest or lowest value seen.
	EvidenceRecord
	// EvidenceZero: a record at 0 (or below) on a series that keeps well
	// away from 0, as a restart or missing data written as 0 reads.
	EvidenceZero
	// EvidenceFrozen: the value has stopped moving, repeated for longer
	// than the series' runs of repeats have lasted, as an exporter that
	// hangs leaves it.
	EvidenceFrozen
)

func (e Evidence) String() string {
	switch e {
	case EvidenceLevel:
		return "level"
	case EvidenceTimeOfDay:
		return "time_of_day"
	case EvidenceChanges:
		return "changes"
	case EvidenceSpike:
		return "spike"
	case EvidenceRecord:
		return "record"
	case EvidenceZero:
		return "zero"
	case EvidenceFrozen:
		return "frozen"
	}
	return ""
}

// Verdict is a detector's judgement of one sample.
type Verdict struct {
	// Score is the anomaly score in [0, 1]; calibrated so that a fixed
	// threshold means the same thing on every series.
	Score float64
	// Expected is the baseline value; Lower and Upper bound the normal band.
	Expected     float64
	Lower, Upper float64
	Direction    Direction
	State        State
	// Evidence is what made Score more than 0: EvidenceNone when it is
	// 0. auto works it out for every score of half its threshold or
	// more, and leaves a likelihood's smaller scores without it.
	Evidence Evidence
	// Episode is true while an alert's episode is open: the detector
	// alerted (Score at or above its threshold) and the series has not
	// been calm long enough since to end the incident. Within it State
	// may turn normal and anomalous again as the incident comes in
	// waves, but the detector raises no new alert: it is one incident,
	// and a rule keeps its alert firing until the episode ends. Only
	// detectors that keep episodes (auto) set it.
	Episode bool
	// Shifted is true while the series has stayed beyond every estimate
	// of normal it had before an earlier sample (auto: the level's three
	// spreads, and the hour's where its slice is known), on one side: a
	// lasting move, which becomes the series' new normal (a new regime)
	// once it has held for a day. A rule keeps an alert on such a move
	// firing while it lasts (rules, "One incident, one page"). A run
	// auto follows on the time of day alone, within the level's spreads,
	// is not Shifted: it becomes a new regime after three days, and no
	// alert is held on it. Only auto sets it.
	Shifted bool
	// Lingering is true while the series stays away from the normal it
	// had when its latest episode alerted: more than a ninth of its
	// recent samples two of that normal's spreads or more from it, for
	// a day at most (auto; see linger in detect). A rule keeps the alert
	// firing while it holds: a change that lasts, whether or not it is a
	// clean step, is one incident. Only auto sets it.
	Lingering bool
}

// Detector is a univariate streaming detector. It is not safe for concurrent
// use; the caller owns one instance per series.
type Detector interface {
	// Observe feeds one sample (ts in Unix milliseconds, non-decreasing) and
	// returns the verdict for it. NaN and ±Inf values are skipped (the
	// previous verdict's baseline is returned with StateWarmingUp or
	// StateNormal); gaps and irregular intervals are allowed.
	Observe(ts int64, v float64) Verdict
	// MarshalBinary snapshots the full state in a stable, versioned encoding.
	MarshalBinary() ([]byte, error)
	// UnmarshalBinary restores a snapshot made by the same detector type and
	// config; it returns an error for a foreign or corrupt snapshot.
	UnmarshalBinary([]byte) error
}

// Sample is one value of a signal at an evaluation instant. Key identifies
// the series within the signal (the value of the breakdown label, such as a
// client ID) and is "" for a scalar signal.
type Sample struct {
	Key   string
	Value float64
}

// Inputs are a composite detector's signals at one instant, by signal name.
type Inputs map[string][]Sample

// Result is a composite detector's judgement at one instant.
type Result struct {
	Verdict
	// Informational marks an anomaly worth telling but not paging for, such
	// as a single heavy client being rate-limited.
	Informational bool
	Explanation   *model.Explanation
}

// Composite is a detector over several named signals evaluated together
// (decoupling, rate-limit storm, surge). It is not safe for concurrent use.
type Composite interface {
	Observe(ts int64, in Inputs) Result
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}
