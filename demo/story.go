package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seismo-agent/seismo/demo/loadgen"
	"github.com/seismo-agent/seismo/internal/model"
	"github.com/seismo-agent/seismo/notify/webhook"
)

// PhaseKind says what a phase of the story is for.
type PhaseKind int

// Phase kinds. Alerts that start in a warm-up or normal phase are false
// alerts; alerts that start in an outage phase (or the recovery after it)
// detect that outage.
const (
	PhaseWarmUp PhaseKind = iota
	PhaseNormal
	PhaseOutage
	PhaseRecovery
)

func (k PhaseKind) String() string {
	switch k {
	case PhaseWarmUp:
		return "warm-up"
	case PhaseNormal:
		return "normal"
	case PhaseOutage:
		return "outage"
	case PhaseRecovery:
		return "recovery"
	}
	return "unknown"
}

// Outage names, as shown in the summary.
const (
	OutageSaturation = "saturation without CPU (pool-shrink)"
	OutageStorm      = "rate-limit storm (limiter-global)"
	OutageSurge      = "surge and saturation (5x load)"
)

// Phase is one step of the story.
type Phase struct {
	Name string
	Kind PhaseKind
	// Outage names the outage an outage or recovery phase belongs to.
	Outage string
	// Expect lists the alert names that detect the outage, best first.
	Expect   []string
	Duration time.Duration
	// Begin and End run when the phase starts and ends (injecting and
	// removing the fault); either may be nil.
	Begin, End func() error
}

// StoryOptions set the phase lengths of the default story.
type StoryOptions struct {
	// WarmUp lets the detectors learn normal traffic before anything counts.
	WarmUp time.Duration
	// Normal is a quiet phase after the warm-up and after each recovery,
	// where any alert is a false alert.
	Normal time.Duration
	// LookAlike, when positive, adds a normal phase of that length in which
	// one client sends most requests and alone gets 429s: concentrated
	// limiting, which must not be taken for a rate-limit storm.
	LookAlike time.Duration
	// Outage is how long each fault lasts; Recovery how long the story
	// waits after removing it.
	Outage, Recovery time.Duration
	// SurgeFactor and SurgeRamp shape the surge (default 5x within 20s).
	SurgeFactor float64
	SurgeRamp   time.Duration
}

// Length returns how long the default story takes with these options.
func (o StoryOptions) Length() time.Duration {
	d := o.WarmUp + o.Normal + 3*(o.Outage+o.Recovery+o.Normal)
	if o.LookAlike > 0 {
		d += o.LookAlike
	}
	return d
}

// DefaultPhases returns the story: warm-up and a normal phase, then each of
// the three outages, each followed by a recovery and a normal phase.
func DefaultPhases(svc *Service, gen *loadgen.Generator, o StoryOptions) []Phase {
	if o.SurgeFactor == 0 {
		o.SurgeFactor = 5
	}
	if o.SurgeRamp == 0 {
		o.SurgeRamp = 20 * time.Second
	}
	fault := func(f Fault, on bool) func() error { return func() error { return svc.SetFault(f, on) } }
	ps := []Phase{
		{Name: "warm-up: detectors learn normal traffic", Kind: PhaseWarmUp, Duration: o.WarmUp},
		{Name: "normal traffic", Kind: PhaseNormal, Duration: o.Normal},
	}
	if o.LookAlike > 0 {
		ps = append(ps, Phase{
			Name: "look-alike: one abusive client is rate limited, the others are not (no alert expected)",
			Kind: PhaseNormal, Duration: o.LookAlike,
			Begin: func() error { gen.SetHotShare(0.6); return nil },
			End:   func() error { gen.SetHotShare(0); return nil },
		})
	}
	outage := func(name, what string, expect []string, begin, end func() error) {
		ps = append(ps,
			Phase{Name: what, Kind: PhaseOutage, Outage: name, Expect: expect, Duration: o.Outage, Begin: begin, End: end},
			Phase{Name: "recovery: fault removed", Kind: PhaseRecovery, Outage: name, Duration: o.Recovery},
			Phase{Name: "normal traffic", Kind: PhaseNormal, Duration: o.Normal},
		)
	}
	outage(OutageSaturation, "outage 1: the worker pool shrinks to one thread; requests queue while CPU idles",
		[]string{"SaturationWithoutCPU"}, fault(FaultPoolShrink, true), fault(FaultPoolShrink, false))
	outage(OutageStorm, "outage 2: the rate limiter keys every client to one bucket, cleared every few seconds",
		[]string{"RateLimitStorm"}, fault(FaultLimiterGlobal, true), fault(FaultLimiterGlobal, false))
	outage(OutageSurge, fmt.Sprintf("outage 3: traffic surges %gx within %v; /healthz shares the saturated pool", o.SurgeFactor, o.SurgeRamp),
		[]string{"TrafficSurgeSaturation"},
		func() error { gen.Surge(o.SurgeFactor, o.SurgeRamp); return nil },
		func() error { gen.EndSurge(); return nil })
	return ps
}

// StoryConfig configures RunStory.
type StoryConfig struct {
	Phases []Phase
	// Events are the agent's notifications, e.g. from a Receiver.
	Events <-chan Event
	// Out receives the live narration and the summary.
	Out io.Writer
	// Status, when set, is printed every StatusEvery during the story
	// (e.g. load and service figures).
	Status      func() string
	StatusEvery time.Duration
	// EvalInterval, when set, also expresses detection delays in
	// evaluation intervals.
	EvalInterval time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
}

// OutageResult is how the agent did on one outage.
type OutageResult struct {
	Outage   string
	Expected []string
	// InjectedAt is the fault's start, relative to the start of the story.
	InjectedAt time.Duration
	// Detected is set when an alert started firing during the outage or its
	// recovery; DetectedAfter is the delay from injection to receipt.
	Detected      bool
	DetectedAfter time.Duration
	// Alert is the detecting alert: the first expected one that fired, or
	// else the first alert that fired.
	Alert string
	// FirstAlert and FirstAfter are the first alert of any name that fired
	// and its delay; they differ from Alert when a generic alert (5xx,
	// probe) came before the expected one.
	FirstAlert string
	FirstAfter time.Duration
	// Explanation is the detecting alert's explanation, when it had one.
	Explanation *model.Explanation
	// AlreadyFiring lists expected alerts that were firing when the fault
	// was injected (left over from an earlier phase): they cannot fire
	// again, so the outage may look undetected.
	AlreadyFiring []string
	// AlsoFired lists the other alerts that started during the outage.
	AlsoFired []string
	// RemovedAt is the fault's end, relative to the start of the story.
	RemovedAt time.Duration
	// Resolved is set when the detecting alert resolved after the fault was
	// removed and before the story ended; ResolvedAfter is measured from
	// the fault's removal.
	Resolved      bool
	ResolvedAfter time.Duration
	// Drafts counts the status-update drafts received during the outage and
	// its recovery.
	Drafts int
}

// FalseAlert is an alert that started during a warm-up or normal phase.
type FalseAlert struct {
	Name  string
	At    time.Duration
	Phase string
}

// Summary is the outcome of a story.
type Summary struct {
	Outages     []OutageResult
	FalseAlerts []FalseAlert
	// Informational lists alerts with severity "info", which tell rather
	// than page; they count neither as detections nor as false alerts.
	Informational []FalseAlert
	Wall          time.Duration
	// EvalInterval is StoryConfig.EvalInterval, for the table.
	EvalInterval time.Duration
}

// RunStory runs the phases in order, narrating the agent's alerts and drafts
// as they arrive, and returns the summary (also written to cfg.Out). It
// returns early with ctx's error when ctx ends, after removing any fault it
// injected.
func RunStory(ctx context.Context, cfg StoryConfig) (*Summary, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &story{cfg: cfg, start: cfg.Now(), firing: map[string]string{}, detecting: map[string]int{}}
	if cfg.Status != nil && cfg.StatusEvery > 0 {
		t := time.NewTicker(cfg.StatusEvery)
		defer t.Stop()
		s.status = t.C
	}
	for i, p := range cfg.Phases {
		if err := s.runPhase(ctx, i, p); err != nil {
			return s.summary(), err
		}
	}
	sum := s.summary()
	sum.WriteTable(cfg.Out)
	return sum, nil
}

type story struct {
	cfg    StoryConfig
	start  time.Time
	status <-chan time.Time
	phase  Phase
	// current is the outage being attributed (set from an outage phase to
	// the end of its recovery), nil otherwise.
	current *OutageResult
	// firing maps alert fingerprints to names of alerts now firing.
	firing map[string]string
	// detecting maps the fingerprint of each outage's detecting alert to
	// the outage's index in results.
	detecting map[string]int
	results   []OutageResult
	falses    []FalseAlert
	infos     []FalseAlert
}

func (s *story) since() time.Duration { return s.cfg.Now().Sub(s.start) }

func (s *story) printf(format string, args ...any) {
	fmt.Fprintf(s.cfg.Out, "[%7s] ", fmtDur(s.since()))
	fmt.Fprintf(s.cfg.Out, format, args...)
}

func (s *story) runPhase(ctx context.Context, i int, p Phase) error {
	s.phase = p
	fmt.Fprintf(s.cfg.Out, "\n== %s (%s, %v)\n", p.Name, p.Kind, p.Duration)
	if p.Kind == PhaseOutage {
		r := OutageResult{Outage: p.Outage, Expected: p.Expect, InjectedAt: s.since()}
		for _, name := range s.firing {
			if slices.Contains(p.Expect, name) && !slices.Contains(r.AlreadyFiring, name) {
				r.AlreadyFiring = append(r.AlreadyFiring, name)
			}
		}
		s.results = append(s.results, r)
		s.current = &s.results[len(s.results)-1]
	} else if p.Kind != PhaseRecovery {
		s.current = nil
	}
	if p.Begin != nil {
		if err := p.Begin(); err != nil {
			return fmt.Errorf("phase %d %q: %w", i, p.Name, err)
		}
	}
	end := func() error {
		if p.End == nil {
			return nil
		}
		if err := p.End(); err != nil {
			return fmt.Errorf("phase %d %q: %w", i, p.Name, err)
		}
		if p.Kind == PhaseOutage && s.current != nil {
			s.current.RemovedAt = s.since()
			s.printf("fault removed\n")
		}
		return nil
	}
	timer := time.NewTimer(p.Duration)
	defer timer.Stop()
	for {
		select {
		case ev := <-s.cfg.Events:
			s.handle(ev)
		case <-s.status:
			s.printf("%s\n", s.cfg.Status())
		case <-timer.C:
			return end()
		case <-ctx.Done():
			_ = end()
			return ctx.Err()
		}
	}
}

func (s *story) handle(ev Event) {
	if ev.Draft != nil {
		d := ev.Draft
		s.printf("DRAFT   %s · %s · %s\n", d.Phase, d.Component, d.Impact)
		s.indent(d.Title)
		s.indent(d.Text)
		if s.current != nil {
			s.current.Drafts++
		}
		return
	}
	a := ev.Alert
	if a == nil {
		return
	}
	name := a.Labels["alertname"]
	if a.Status == "resolved" {
		if _, ok := s.firing[a.Fingerprint]; !ok {
			return // a repeat
		}
		delete(s.firing, a.Fingerprint)
		s.printf("RESOLVED %s\n", name)
		if i, ok := s.detecting[a.Fingerprint]; ok {
			delete(s.detecting, a.Fingerprint)
			if c := &s.results[i]; c.RemovedAt > 0 {
				c.Resolved, c.ResolvedAfter = true, s.since()-c.RemovedAt
			}
		}
		return
	}
	if _, ok := s.firing[a.Fingerprint]; ok {
		return // a repeat of an alert already shown
	}
	s.firing[a.Fingerprint] = name
	s.printAlert(a)
	if a.Labels["severity"] == "info" {
		// Worth telling, not paging (e.g. one heavy client limited): neither
		// a detection nor a false page.
		s.infos = append(s.infos, FalseAlert{Name: name, At: s.since(), Phase: s.phase.Name})
		return
	}
	switch c := s.current; {
	case c == nil:
		s.falses = append(s.falses, FalseAlert{Name: name, At: s.since(), Phase: s.phase.Name})
	case !c.Detected:
		c.Detected, c.DetectedAfter, c.Alert = true, s.since()-c.InjectedAt, name
		c.FirstAlert, c.FirstAfter = name, c.DetectedAfter
		c.Explanation = explanation(a)
		s.detecting[a.Fingerprint] = len(s.results) - 1
	case slices.Contains(c.Expected, name) && !slices.Contains(c.Expected, c.Alert):
		// An expected alert outranks an earlier generic one.
		c.AlsoFired = append(c.AlsoFired, c.Alert)
		c.DetectedAfter, c.Alert = s.since()-c.InjectedAt, name
		c.Explanation = explanation(a)
		for fp, i := range s.detecting {
			if i == len(s.results)-1 {
				delete(s.detecting, fp)
			}
		}
		s.detecting[a.Fingerprint] = len(s.results) - 1
	case name != c.Alert && !slices.Contains(c.AlsoFired, name):
		c.AlsoFired = append(c.AlsoFired, name)
	}
}

func explanation(a *webhook.Alert) *model.Explanation {
	if a.Seismo == nil {
		return nil
	}
	return a.Seismo.Explanation
}

func (s *story) printAlert(a *webhook.Alert) {
	sev := a.Labels["severity"]
	line := fmt.Sprintf("FIRING  %s", a.Labels["alertname"])
	if sev != "" {
		line += " severity=" + sev
	}
	x := a.Seismo
	if x != nil && x.Detector != "" {
		line += fmt.Sprintf(" detector=%s score=%.2f", x.Detector, x.Score)
	}
	s.printf("%s\n", line)
	if sum := a.Annotations["summary"]; sum != "" {
		s.indent(sum)
	}
	if x == nil || x.Explanation == nil {
		return
	}
	ex := x.Explanation
	if ex.Summary != "" && !strings.Contains(a.Annotations["summary"], ex.Summary) {
		s.indent(ex.Summary)
	}
	for _, sig := range ex.Signals {
		s.indent(fmt.Sprintf("  %-9s %s (expected %s, band %s–%s)", sig.Name,
			fmtVal(sig.Current, sig.Unit), fmtVal(sig.Expected, sig.Unit), fmtVal(sig.Lower, sig.Unit), fmtVal(sig.Upper, sig.Unit)))
	}
	if b := ex.Breadth; b != nil {
		s.indent(fmt.Sprintf("  breadth   %d of %d %s values affected (%.0f%%), concentration %.2f", b.Affected, b.Active, b.Label, 100*b.AffectedShare, b.Concentration))
	}
	if ex.Cause != "" {
		s.indent("  cause: " + ex.Cause)
	}
}

func (s *story) indent(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(s.cfg.Out, "          %s\n", l)
	}
}

func (s *story) summary() *Summary {
	return &Summary{Outages: slices.Clone(s.results), FalseAlerts: slices.Clone(s.falses), Informational: slices.Clone(s.infos),
		Wall: s.since(), EvalInterval: s.cfg.EvalInterval}
}

// WriteTable writes the summary as a table.
func (sum *Summary) WriteTable(w io.Writer) {
	fmt.Fprintln(w, "\n== summary")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "outage\tinjected at\tfirst alert after\tdetected after\talert\talso fired\tresolved after fix\tdrafts")
	for _, r := range sum.Outages {
		det, alert, first := "not detected", "-", "-"
		if len(r.AlreadyFiring) > 0 {
			det = "already firing: " + strings.Join(r.AlreadyFiring, ", ")
		}
		if r.Detected {
			first = fmtDur(r.FirstAfter)
		}
		if r.Detected {
			det, alert = fmtDur(r.DetectedAfter), r.Alert
			if sum.EvalInterval > 0 {
				det += fmt.Sprintf(" (%.1f evals)", float64(r.DetectedAfter)/float64(sum.EvalInterval))
			}
			if !slices.Contains(r.Expected, r.Alert) {
				alert += fmt.Sprintf(" (expected %s)", strings.Join(r.Expected, "/"))
			}
		}
		res := "-"
		if r.Resolved {
			res = fmtDur(r.ResolvedAfter)
		}
		also := strings.Join(r.AlsoFired, ", ")
		if also == "" {
			also = "-"
		}
		fmt.Fprintf(tw, "%s\t+%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Outage, fmtDur(r.InjectedAt), first, det, alert, also, res, r.Drafts)
	}
	tw.Flush()
	fmt.Fprintf(w, "false alerts during warm-up and normal phases: %d\n", len(sum.FalseAlerts))
	for _, f := range sum.FalseAlerts {
		fmt.Fprintf(w, "  %s at +%s (%s)\n", f.Name, fmtDur(f.At), f.Phase)
	}
	if len(sum.Informational) > 0 {
		fmt.Fprintf(w, "informational alerts (severity info, not paging): %d\n", len(sum.Informational))
		for _, f := range sum.Informational {
			fmt.Fprintf(w, "  %s at +%s (%s)\n", f.Name, fmtDur(f.At), f.Phase)
		}
	}
	fmt.Fprintf(w, "wall time: %s\n", fmtDur(sum.Wall))
}

func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

func fmtVal(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.3gs", v)
	case "ratio":
		return fmt.Sprintf("%.1f%%", 100*v)
	case "":
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}
