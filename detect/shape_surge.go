package detect

import (
	"math"
	"strings"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

func init() {
	register(Kind{
		Name: "surge",
		Doc: "Fires when the request rate steps up by a factor within minutes and " +
			"saturation follows: latency, queue or time in flight up, 5xx share up, health " +
			"checks failing. A fast rise that has already filled the queue or the in-flight " +
			"requests pages before the rate reaches the factor, and so does a rise fast enough " +
			"to fill the workers within `lead` once in-flight requests reach `busy_share` of them.",
		Signals: []SignalSpec{
			{Name: "requests", Required: true, Doc: "request rate"},
			{Name: "latency", Doc: "a latency quantile in seconds, e.g. p99"},
			{Name: "queue", Doc: "queue length (requests waiting for a worker)"},
			{Name: "in_flight", Doc: "requests in flight, a gauge; judged per request " +
				"(in-flight / request rate is the mean time in the service, by Little's law), " +
				"so traffic that grows in proportion does not count"},
			{Name: "workers", Doc: "how many requests the service can work on at once (worker pool, " +
				"threads, connections), a gauge; with in_flight it tells how close a rising load is to saturation"},
			{Name: "errors", Doc: "5xx rate, in the same unit as requests"},
			{Name: "health", PerKey: true, Doc: "per instance health in [0, 1] (up, probe_success); " +
				"or a scalar fraction healthy, or a scalar count of healthy instances"},
		},
		NewConfig: func() Config { c := shapeSurgeDefaults(); return &c },
	})
}

// SurgeConfig configures the surge-with-saturation detector.
type SurgeConfig struct {
	// Factor is the request-rate multiple of the baseline that makes a surge.
	Factor float64 `yaml:"factor"`
	// MinRequests is the lowest request rate that can be a surge, so a
	// quiet night going from 2 to 7 req/s is not one.
	MinRequests float64 `yaml:"min_requests"`
	// Ramp is the longest rise from near normal (a tenth of the way to
	// Factor) to Factor that still counts as a surge; slower rises are
	// organic growth that the baseline follows.
	Ramp time.Duration `yaml:"ramp"`
	// Baseline is the time constant of every baseline.
	Baseline time.Duration `yaml:"baseline"`
	// WarmUp is the number of samples before the detector judges.
	WarmUp int `yaml:"warm_up"`
	// Sigmas is the z-score latency or queue must exceed to count as
	// saturated (together with LatencyRatio).
	Sigmas float64 `yaml:"sigmas"`
	// LatencyRatio is the multiple of its baseline latency or queue must
	// reach to count as saturated.
	LatencyRatio float64 `yaml:"latency_ratio"`
	// ErrorShare is the 5xx share of requests that counts as saturated
	// (when also ErrorShare/2 above its baseline).
	ErrorShare float64 `yaml:"error_share"`
	// HealthDrop is the fall of the healthy fraction below its baseline that
	// counts as instances failing (0.1 = ten percentage points).
	HealthDrop float64 `yaml:"health_drop"`
	// KeyLabel is the label that identifies an instance in the health signal.
	KeyLabel string `yaml:"key_label"`
	// Confirm is the number of consecutive samples of surge with saturation
	// before firing.
	Confirm int `yaml:"confirm"`
	// ResolveAfter is how long saturation must stay clear to resolve.
	ResolveAfter time.Duration `yaml:"resolve_after"`
	// RelearnAfter lets the frozen baselines learn again after a surge has
	// lasted this long.
	RelearnAfter time.Duration `yaml:"relearn_after"`
	// BusyShare is the share of the workers signal that in-flight requests
	// must reach before a climbing rate counts as heading to saturation.
	BusyShare float64 `yaml:"busy_share"`
	// Lead is how far ahead the in-flight requests' growth is projected:
	// a climb that would fill the workers within Lead is heading to
	// saturation.
	Lead time.Duration `yaml:"lead"`
}

func shapeSurgeDefaults() SurgeConfig {
	return SurgeConfig{
		Factor:       3,
		Ramp:         10 * time.Minute,
		Baseline:     30 * time.Minute,
		WarmUp:       30,
		Sigmas:       4,
		LatencyRatio: 2,
		ErrorShare:   0.05,
		HealthDrop:   0.1,
		KeyLabel:     "instance",
		Confirm:      2,
		ResolveAfter: 2 * time.Minute,
		RelearnAfter: 2 * time.Hour,
		BusyShare:    0.7,
		Lead:         time.Minute,
	}
}

// Validate reports every problem, named by YAML key.
func (c *SurgeConfig) Validate() error {
	var errs configutil.Errors
	shapeCheckCommon(&errs, c.Baseline, c.WarmUp, c.Sigmas, c.Confirm, c.ResolveAfter, c.RelearnAfter)
	if !(c.Factor > 1) {
		errs.Addf("factor", "must be greater than 1, got %v", c.Factor)
	}
	if !(c.MinRequests >= 0) {
		errs.Addf("min_requests", "must not be negative, got %v", c.MinRequests)
	}
	if c.Ramp <= 0 {
		errs.Addf("ramp", "must be positive, got %v", c.Ramp)
	}
	if !(c.LatencyRatio > 1) {
		errs.Addf("latency_ratio", "must be greater than 1, got %v", c.LatencyRatio)
	}
	if !(c.ErrorShare > 0 && c.ErrorShare <= 1) {
		errs.Addf("error_share", "must be in (0, 1], got %v", c.ErrorShare)
	}
	if !(c.HealthDrop > 0 && c.HealthDrop <= 1) {
		errs.Addf("health_drop", "must be in (0, 1], got %v", c.HealthDrop)
	}
	if c.KeyLabel == "" {
		errs.Addf("key_label", "must name the instance label, e.g. instance")
	}
	if !(c.BusyShare > 0 && c.BusyShare <= 1) {
		errs.Addf("busy_share", "must be in (0, 1], got %v", c.BusyShare)
	}
	if c.Lead <= 0 {
		errs.Addf("lead", "must be positive, got %v", c.Lead)
	}
	return errs.Err()
}

// New builds a Surge detector.
func (c *SurgeConfig) New() (Composite, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Surge{cfg: *c}, nil
}

// Log offsets of the surge's latency and queue baselines (see
// shapeLogFloor): a queue of 0 is common, a latency of 0 is not.
const (
	shapeLatOff   = 1e-9
	shapeQueueOff = 1
	// shapeSlopeFloor floors the standard deviation of the rate's rise
	// over two samples: a rise of 1 % of the baseline.
	shapeSlopeFloor = 0.01
)

// shapeNever marks a timestamp that has not happened.
const shapeNever = math.MinInt64

// Surge detects a traffic surge followed by saturation. A surge starts when
// the request rate reaches Factor × its baseline having been below a tenth
// of the way there at most Ramp earlier; it lasts while the rate stays above
// Factor/2 or saturation persists. A windowed rate trails a step by up to
// its window, while queue length and in-flight requests are gauges that
// show saturation at once; so a surge also starts early, at a quarter of
// the way to Factor, when the rate is climbing at least as fast as one that
// reaches Factor within Ramp and the queue or the time in flight is
// already saturated. With a workers signal, a surge starts earlier still,
// before anything saturates: when the rate climbs at a surge's pace (as
// fast as a rise to Factor within Ramp, and by Sigmas standard deviations)
// while in-flight requests have reached BusyShare of the workers and grow
// fast enough to fill them within Lead. A windowed rate lags the climb it
// measures, but the in-flight gauge does not, and only a climb that is
// heading past capacity fills the workers: proportional overload on a
// service with room stops short of them, and a slow diurnal ramp or cheap
// rejected requests do not climb them at all. During a surge every
// baseline is frozen,
// and the first time each saturation sign appears is recorded so the
// explanation can give the sequence with timings. A surge without saturation
// is informational.
type Surge struct {
	cfg SurgeConfig

	reqs, lat, queue, errShare, healthFrac, healthTotal shapeBaseline
	// flight is the log of the mean time in the service, in-flight
	// requests over the request rate (Little's law).
	flight shapeBaseline
	// busy is in-flight requests over workers, capped at 1 (a share; small
	// pools make it too noisy for a z-score, so only its usual level is
	// used).
	busy shapeBaseline
	// slope is the request rate's rise over two samples, in baselines.
	slope shapeBaseline
	// hist holds the two previous samples (most recent first) for the
	// rate's climb and the growth of in-flight requests; nHist counts them.
	histAt   [2]int64
	histReq  [2]float64
	histBusy [2]float64 // NaN where unknown
	nHist    int
	shapeLatch
	healthCount bool // scalar health values above 1 were seen: it is a count

	lowAt    int64 // last ts with requests near normal
	surging  bool
	paged    bool  // this surge has paged
	surgeAt  int64 // ts the rate first reached Factor in this surge
	riseMS   int64 // how long the rise took
	peak     float64
	latAt    int64
	queueAt  int64
	flightAt int64
	errAt    int64
	healthAt int64
	busyAt   int64

	carried int
	last    Result
}

var _ Composite = (*Surge)(nil)

// shapeSurgeObs is one instant's inputs and derived figures.
type shapeSurgeObs struct {
	req, lat, queue, errShare, healthy, total, frac float64
	inFlight, flight                                float64 // in-flight requests, and per request rate (s)
	okLat, okQueue, okFlight, okErr, okHealth       bool
	satLat, satQueue, satFlight, satErr, satHealth  bool
	// workers and busy (in-flight over workers); fill is the projected
	// time until in-flight requests fill the workers (ms, 0 when full).
	workers, busy, fill float64
	okBusy, satBusy     bool
	// rise is the rate's rise over the last two samples in baselines;
	// climb the same per minute, when climbing.
	rise, climb      float64
	okRise, climbing bool
}

// health reads the health signal: per-instance values in [0, 1], or a
// scalar fraction, or a scalar count.
func (s *Surge) health(h []Sample) (healthy, total float64, ok bool) {
	keyed := len(h) > 1 || (len(h) == 1 && h[0].Key != "")
	for _, x := range h {
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			continue
		}
		ok = true
		if keyed {
			healthy += math.Max(0, math.Min(1, x.Value))
			total++
			continue
		}
		if x.Value > 1 {
			s.healthCount = true
		}
		healthy = math.Max(0, x.Value)
	}
	if ok && !keyed {
		total = 1
		if s.healthCount {
			total = healthy
		}
	}
	return healthy, total, ok
}

// Observe judges one evaluation instant.
func (s *Surge) Observe(ts int64, in Inputs) Result {
	c := &s.cfg
	warm := s.reqs.n >= int64(c.WarmUp)
	var o shapeSurgeObs
	var okReq bool
	o.req, okReq = shapeScalar(in["requests"])
	if !okReq {
		s.last = shapeCarry(&s.last, &s.carried, warm)
		return s.last
	}
	s.carried = 0
	step := s.tick(ts)
	if s.reqs.n == 0 {
		s.lowAt, s.surgeAt, s.latAt, s.queueAt, s.errAt, s.healthAt = ts, shapeNever, shapeNever, shapeNever, shapeNever, shapeNever
		s.flightAt, s.busyAt = shapeNever, shapeNever
	}
	o.lat, o.okLat = shapeScalar(in["latency"])
	o.queue, o.okQueue = shapeScalar(in["queue"])
	o.inFlight, o.okFlight = shapeScalar(in["in_flight"])
	if o.okFlight {
		var okW bool
		o.workers, okW = shapeScalar(in["workers"])
		o.okBusy = okW && o.workers > 0
		if o.okBusy {
			o.busy = math.Max(0, o.inFlight) / o.workers
		}
	}
	if o.okFlight {
		o.okFlight = o.req > 0
		if o.okFlight {
			o.flight = math.Max(0, o.inFlight) / o.req
		}
	}
	var errs float64
	errs, o.okErr = shapeScalar(in["errors"])
	if o.okErr {
		o.errShare = 0
		if o.req > 0 {
			o.errShare = math.Min(1, math.Max(0, errs/o.req))
		}
	}
	o.healthy, o.total, o.okHealth = s.health(in["health"])
	if o.okHealth {
		// Instances that vanished from service discovery count as unhealthy.
		den := math.Max(o.total, math.Round(s.healthTotal.mean))
		o.frac = 1
		if den > 0 {
			o.frac = o.healthy / den
		}
		if s.healthCount {
			o.frac = o.healthy / math.Max(o.healthy, math.Max(1, s.healthTotal.mean))
		}
	}

	ratio := s.reqs.ratio(o.req)
	low := 1 + (c.Factor-1)/10
	if !warm || ratio < low {
		s.lowAt = ts
	}
	o.satLat = o.okLat && s.lat.n >= int64(c.WarmUp) &&
		shapeLogZ(&s.lat, o.lat, shapeLatOff) >= c.Sigmas && shapeLogRatio(&s.lat, o.lat, shapeLatOff) >= c.LatencyRatio
	o.satQueue = o.okQueue && s.queue.n >= int64(c.WarmUp) &&
		shapeLogZ(&s.queue, o.queue, shapeQueueOff) >= c.Sigmas && shapeLogRatio(&s.queue, o.queue, shapeQueueOff) >= c.LatencyRatio
	o.satFlight = o.okFlight && s.flight.n >= int64(c.WarmUp) &&
		shapeLogZ(&s.flight, o.flight, shapeLatOff) >= c.Sigmas && shapeLogRatio(&s.flight, o.flight, shapeLatOff) >= c.LatencyRatio
	o.satErr = o.okErr && s.errShare.n >= int64(c.WarmUp) &&
		o.errShare >= c.ErrorShare && o.errShare >= s.errShare.mean+c.ErrorShare/2
	o.satHealth = o.okHealth && s.healthFrac.n >= int64(c.WarmUp) && o.frac <= s.healthFrac.mean-c.HealthDrop
	s.heading(ts, &o, warm)
	sat := o.satLat || o.satQueue || o.satFlight || o.satErr || o.satHealth || o.satBusy

	// A surge: Factor reached within Ramp; or, early, a quarter of the way
	// there at least as fast (the same slope), with work already piling
	// up in the queue or in flight.
	early := 1 + (c.Factor-1)/4
	fast := float64(ts-s.lowAt) <= float64(c.Ramp.Milliseconds())*(early-low)/(c.Factor-low)
	if warm && !s.surging && o.req >= c.MinRequests &&
		((ratio >= c.Factor && ts-s.lowAt <= c.Ramp.Milliseconds()) ||
			(ratio >= early && fast && (o.satQueue || o.satFlight)) || (o.climbing && o.satBusy)) {
		s.surging, s.surgeAt, s.riseMS, s.peak, s.paged = true, ts, ts-s.lowAt, ratio, false
		s.latAt, s.queueAt, s.flightAt, s.errAt, s.healthAt = shapeNever, shapeNever, shapeNever, shapeNever, shapeNever
		s.busyAt = shapeNever
	}
	if s.surging {
		s.peak = math.Max(s.peak, ratio)
		mark := func(at *int64, on bool) {
			if on && *at == shapeNever {
				*at = ts
			}
		}
		mark(&s.latAt, o.satLat)
		mark(&s.queueAt, o.satQueue)
		mark(&s.flightAt, o.satFlight)
		mark(&s.errAt, o.satErr)
		mark(&s.healthAt, o.satHealth)
		mark(&s.busyAt, o.satBusy)
	}

	r := Result{Verdict: Verdict{
		Expected: s.reqs.mean, Lower: 0, Upper: c.Factor * s.reqs.mean, State: StateNormal,
	}}
	if ratio > 1 {
		r.Score = shapeScore((ratio - 1) / (c.Factor - 1) * c.Sigmas)
		r.Direction = DirUp
	} else if ratio < 1 {
		r.Direction = DirDown
	}
	if o.satLat {
		r.Score = math.Max(r.Score, shapeScore(shapeLogZ(&s.lat, o.lat, shapeLatOff)))
	}
	wasFiring := s.firing
	if !warm {
		r.State, r.Score = StateWarmingUp, 0
	} else if s.step(ts, s.surging && sat, c.Confirm, c.ResolveAfter) {
		r.State = StateAnomalous
		s.paged = true
		r.Explanation = s.explain(ts, &o, ratio, r.Score, false)
	} else if s.surging {
		if wasFiring {
			// A page just resolved: the next saturation in this surge gets
			// its own sequence of timings.
			s.latAt, s.queueAt, s.flightAt, s.errAt, s.healthAt = shapeNever, shapeNever, shapeNever, shapeNever, shapeNever
			s.busyAt = shapeNever
		}
		r.State = StateAnomalous
		r.Informational = true
		r.Explanation = s.explain(ts, &o, ratio, r.Score, true)
	}

	// A surge ends when traffic is back under Factor/2, no longer climbing,
	// and nothing is saturated any more.
	if s.surging && ratio < c.Factor/2 && !sat && !s.firing && !o.climbing {
		s.surging = false
	}
	if (!s.surging && s.learning(ts, c.RelearnAfter)) || (s.surging && ts-s.surgeAt >= c.RelearnAfter.Milliseconds()) {
		s.learn(step, &o)
	}
	s.histAt[1], s.histReq[1], s.histBusy[1] = s.histAt[0], s.histReq[0], s.histBusy[0]
	s.histAt[0], s.histReq[0], s.histBusy[0] = ts, o.req, math.NaN()
	if o.okBusy {
		s.histBusy[0] = o.busy
	}
	s.nHist = min(s.nHist+1, 2)
	s.last = r
	return r
}

// heading judges whether the request rate is climbing at a surge's pace
// and, with a workers signal, whether the workers are full or that climb
// is filling them: in-flight requests at BusyShare of them or more (where
// they usually are below it), and growing fast enough to fill them within
// Lead. Both are measured since the sample before last (the last one when
// only one is known): over two steps, noise in the gauges matters less.
func (s *Surge) heading(ts int64, o *shapeSurgeObs, warm bool) {
	c := &s.cfg
	if !warm || s.nHist == 0 {
		return
	}
	i := s.nHist - 1
	dt := float64(ts - s.histAt[i])
	if !(dt > 0) || s.reqs.mean <= 0 {
		return
	}
	// The rise over the span in baselines, judged against its own usual
	// variation (the rate's noise, not its diurnal swing) and against the
	// pace of a rise to Factor within Ramp.
	o.rise, o.okRise = (o.req-s.histReq[i])/s.reqs.mean, true
	pace := (c.Factor - 1) * dt / float64(c.Ramp.Milliseconds())
	o.climbing = s.slope.n >= int64(c.WarmUp) && o.rise >= pace &&
		s.slope.z(o.rise, 0, shapeSlopeFloor) >= c.Sigmas
	if o.climbing {
		o.climb = o.rise / dt * float64(time.Minute.Milliseconds())
	}
	prev := s.histBusy[i]
	// A pool that is usually busier than BusyShare is not judged by it:
	// its in-flight gauge may count what the workers do not (requests
	// waiting on asynchronous I/O).
	if !o.okBusy || math.IsNaN(prev) || s.busy.n < int64(c.WarmUp) || o.busy < c.BusyShare ||
		s.busy.mean >= c.BusyShare {
		return
	}
	// Workers full is saturation whether or not the rate still climbs (but
	// it starts a surge only with the climb: a shrunken pool is not one).
	if o.busy >= 1 {
		o.satBusy = true
		return
	}
	if !o.climbing {
		return
	}
	grow := (o.busy - prev) / dt // share of the workers per ms
	if grow > 0 && (1-o.busy)/grow <= float64(c.Lead.Milliseconds()) {
		o.satBusy, o.fill = true, (1-o.busy)/grow
	}
}

func (s *Surge) learn(step int64, o *shapeSurgeObs) {
	c := &s.cfg
	s.reqs.update(step, o.req, c.Baseline, c.Sigmas, shapeFloorRel, shapeFloorAbs, c.WarmUp)
	if o.okLat {
		s.lat.update(step, shapeLog(o.lat, shapeLatOff), c.Baseline, c.Sigmas, 0, shapeLogFloor, c.WarmUp)
	}
	if o.okQueue {
		s.queue.update(step, shapeLog(o.queue, shapeQueueOff), c.Baseline, c.Sigmas, 0, shapeLogFloor, c.WarmUp)
	}
	if o.okFlight {
		s.flight.update(step, shapeLog(o.flight, shapeLatOff), c.Baseline, c.Sigmas, 0, shapeLogFloor, c.WarmUp)
	}
	if o.okRise {
		s.slope.update(step, o.rise, c.Baseline, c.Sigmas, 0, shapeSlopeFloor, c.WarmUp)
	}
	if o.okBusy {
		// Capped at 1: beyond it the excess waits, and a spell with a
		// shrunken pool must not teach that the pool is usually full.
		s.busy.update(step, math.Min(o.busy, 1), c.Baseline, c.Sigmas, shapeFloorRel, shapeFloorAbs, c.WarmUp)
	}
	if o.okErr {
		s.errShare.update(step, o.errShare, c.Baseline, c.Sigmas, 0, shapeShareFloor, c.WarmUp)
	}
	if o.okHealth {
		s.healthFrac.update(step, o.frac, c.Baseline, 0, 0, 0, c.WarmUp)
		s.healthTotal.update(step, math.Max(o.total, o.healthy), c.Baseline, 0, 0, 0, c.WarmUp)
	}
}

func (s *Surge) explain(ts int64, o *shapeSurgeObs, ratio, score float64, info bool) *model.Explanation {
	c := &s.cfg
	x := &model.Explanation{
		Detector: "surge", Kind: "surge_saturation", Score: score, Direction: "up",
		Signals: []model.Signal{{
			Name: "requests", Unit: "req/s", Current: o.req, Expected: s.reqs.mean,
			Lower: 0, Upper: c.Factor * s.reqs.mean,
		}},
	}
	var b strings.Builder
	b.WriteString("traffic " + shapeNum(ratio) + "× baseline (" + shapeVal(o.req, "req/s") + ", normal " +
		shapeVal(s.reqs.mean, "req/s") + ")")
	if s.riseMS > 0 { // 0: the surge began (filling the workers) before the rate was a tenth of the way up
		b.WriteString(", reached within " + shapeDur(s.riseMS))
	}
	if s.peak > ratio*1.05 {
		b.WriteString(" and peaking at " + shapeNum(s.peak) + "×")
	}
	if o.climbing {
		b.WriteString(", climbing " + shapeNum(o.climb) + "× normal a minute")
	}
	// Signs active now, in the order they appeared, with their times since
	// the surge began; signs seen in this episode that have cleared are
	// named apart.
	var signs, cleared []string
	at := func(t int64) string { return "from +" + shapeDur(t-s.surgeAt) }
	if o.okLat {
		x.Signals = append(x.Signals, shapeLogSignal("latency", "s", o.lat, &s.lat, c.Sigmas, shapeLatOff))
		if o.satLat && s.latAt != shapeNever {
			signs = append(signs, "latency "+shapeVal(o.lat, "s")+" (normal "+shapeVal(shapeLogExpected(&s.lat, shapeLatOff), "s")+", "+at(s.latAt)+")")
		} else if s.latAt != shapeNever {
			cleared = append(cleared, "latency")
		}
	}
	if o.okQueue {
		x.Signals = append(x.Signals, shapeLogSignal("queue", "", o.queue, &s.queue, c.Sigmas, shapeQueueOff))
		if o.satQueue && s.queueAt != shapeNever {
			signs = append(signs, "queue "+shapeNum(o.queue)+" (normal "+shapeNum(shapeLogExpected(&s.queue, shapeQueueOff))+", "+at(s.queueAt)+")")
		} else if s.queueAt != shapeNever {
			cleared = append(cleared, "queue")
		}
	}
	if o.okFlight {
		x.Signals = append(x.Signals, shapeLogSignal("time_in_flight", "s", o.flight, &s.flight, c.Sigmas, shapeLatOff))
		if o.satFlight && s.flightAt != shapeNever {
			signs = append(signs, shapeNum(o.inFlight)+" requests in flight ("+shapeVal(o.flight, "s")+" per request, normal "+
				shapeVal(shapeLogExpected(&s.flight, shapeLatOff), "s")+", "+at(s.flightAt)+")")
		} else if s.flightAt != shapeNever {
			cleared = append(cleared, "in-flight requests")
		}
	}
	if o.okBusy {
		x.Signals = append(x.Signals, model.Signal{Name: "busy", Unit: "ratio", Current: o.busy,
			Expected: s.busy.mean, Lower: 0, Upper: c.BusyShare})
		if o.satBusy && s.busyAt != shapeNever {
			fill := "workers full ("
			if o.busy < 1 {
				fill = "workers " + shapeVal(o.busy, "ratio") + " busy, filling within " + shapeDur(int64(o.fill)) + " ("
			}
			signs = append(signs, fill+shapeNum(o.inFlight)+" in flight for "+shapeNum(o.workers)+", normal "+
				shapeVal(s.busy.mean, "ratio")+" busy, "+at(s.busyAt)+")")
		} else if s.busyAt != shapeNever {
			cleared = append(cleared, "workers filling")
		}
	}
	if o.okErr {
		x.Signals = append(x.Signals, model.Signal{Name: "errors", Unit: "ratio", Current: o.errShare,
			Expected: s.errShare.mean, Lower: 0, Upper: math.Max(c.ErrorShare, s.errShare.mean+c.ErrorShare/2)})
		if o.satErr && s.errAt != shapeNever {
			signs = append(signs, "5xx "+shapeVal(o.errShare, "ratio")+" ("+at(s.errAt)+")")
		} else if s.errAt != shapeNever {
			cleared = append(cleared, "5xx")
		}
	}
	if o.okHealth {
		x.Signals = append(x.Signals, model.Signal{Name: "health", Unit: "ratio", Current: o.frac,
			Expected: s.healthFrac.mean, Lower: s.healthFrac.mean - c.HealthDrop, Upper: 1})
		if !o.satHealth && s.healthAt != shapeNever {
			cleared = append(cleared, "health checks")
		} else if s.healthAt != shapeNever {
			if s.healthCount || o.total > 1 {
				total := math.Max(o.total, math.Round(s.healthTotal.mean))
				if s.healthCount {
					total = math.Max(o.healthy, math.Round(s.healthTotal.mean))
				}
				failing := math.Max(0, math.Round(total-o.healthy))
				signs = append(signs, "health checks failing on "+shapeNum(failing)+"/"+shapeNum(total)+" "+
					c.KeyLabel+"s ("+at(s.healthAt)+")")
			} else {
				signs = append(signs, "health checks passing "+shapeVal(o.frac, "ratio")+" (normal "+
					shapeVal(s.healthFrac.mean, "ratio")+", "+at(s.healthAt)+")")
			}
		}
	}
	if info {
		if s.paged {
			x.Cause = "a traffic surge that saturated the service and is still running"
			b.WriteString("; saturation has cleared but traffic is still high — a restart or redeploy under " +
				"this load can saturate it again")
		} else {
			x.Cause = "a traffic surge the service is absorbing so far"
			b.WriteString("; no saturation yet — watch latency, 5xx and health checks")
		}
		x.Summary = b.String()
		return x
	}
	x.Cause = "a traffic surge beyond capacity; saturated instances fail health checks and leave the load balancer"
	if o.satBusy && !(o.satLat || o.satQueue || o.satFlight || o.satErr || o.satHealth) {
		x.Cause = "a traffic surge heading past capacity: in-flight requests are filling the workers"
		if o.busy >= 1 {
			x.Cause = "a traffic surge has filled the workers: requests are starting to queue"
		}
	}
	if len(signs) > 0 {
		b.WriteString("; then ")
		b.WriteString(strings.Join(signs, ", "))
	}
	if len(cleared) > 0 {
		b.WriteString("; cleared: " + strings.Join(cleared, ", "))
	}
	if len(signs) == 0 {
		b.WriteString("; holding " + shapeDur(c.ResolveAfter.Milliseconds()) + " before resolving")
	}
	b.WriteString(" — saturated instances leaving the load balancer will cascade: add capacity or shed load, " +
		"and serve health checks outside the saturated workers")
	x.Summary = b.String()
	return x
}

func (c *SurgeConfig) fields() []configField {
	return []configField{
		{"factor", c.Factor}, {"min_requests", c.MinRequests}, {"ramp", shapeMs(c.Ramp)}, {"baseline", shapeMs(c.Baseline)},
		{"warm_up", float64(c.WarmUp)}, {"sigmas", c.Sigmas}, {"latency_ratio", c.LatencyRatio},
		{"error_share", c.ErrorShare}, {"health_drop", c.HealthDrop}, {"confirm", float64(c.Confirm)},
		{"resolve_after", shapeMs(c.ResolveAfter)}, {"relearn_after", shapeMs(c.RelearnAfter)},
		{"busy_share", c.BusyShare}, {"lead", shapeMs(c.Lead)},
	}
}

// MarshalBinary snapshots the detector state.
func (s *Surge) MarshalBinary() ([]byte, error) {
	w := newEncoder("surge", 512)
	encodeConfig(w, s.cfg.fields())
	for _, b := range []*shapeBaseline{&s.reqs, &s.lat, &s.queue, &s.errShare, &s.healthFrac, &s.healthTotal, &s.flight, &s.busy, &s.slope} {
		b.encode(w)
	}
	for i := range s.histAt {
		w.i64(s.histAt[i])
		w.f64(s.histReq[i])
		w.f64(s.histBusy[i])
	}
	w.i64(int64(s.nHist))
	s.shapeLatch.encode(w)
	w.bool(s.healthCount)
	w.i64(s.lowAt)
	w.bool(s.surging)
	w.bool(s.paged)
	w.i64(s.surgeAt)
	w.i64(s.riseMS)
	w.f64(s.peak)
	for _, t := range []int64{s.latAt, s.queueAt, s.flightAt, s.errAt, s.healthAt, s.busyAt} {
		w.i64(t)
	}
	w.i64(int64(s.carried))
	if err := shapePutResult(w, &s.last); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary restores a snapshot made by MarshalBinary with the same
// config; it wraps ErrSnapshot otherwise.
func (s *Surge) UnmarshalBinary(b []byte) error {
	r, err := newDecoder("surge", b)
	if err != nil {
		return err
	}
	checkConfig(r, s.cfg.fields())
	n := Surge{cfg: s.cfg}
	for _, b := range []*shapeBaseline{&n.reqs, &n.lat, &n.queue, &n.errShare, &n.healthFrac, &n.healthTotal, &n.flight, &n.busy, &n.slope} {
		b.decode(r)
	}
	for i := range n.histAt {
		n.histAt[i] = r.i64()
		n.histReq[i] = r.f64()
		n.histBusy[i] = r.f64()
	}
	n.nHist = int(min(max(r.i64(), 0), 2))
	n.shapeLatch.decode(r)
	n.healthCount = r.bool()
	n.lowAt = r.i64()
	n.surging = r.bool()
	n.paged = r.bool()
	n.surgeAt = r.i64()
	n.riseMS = r.i64()
	n.peak = r.f64()
	for _, t := range []*int64{&n.latAt, &n.queueAt, &n.flightAt, &n.errAt, &n.healthAt, &n.busyAt} {
		*t = r.i64()
	}
	n.carried = int(r.i64())
	n.last = shapeGetResult(r)
	if err := r.finish(); err != nil {
		return err
	}
	*s = n
	return nil
}
