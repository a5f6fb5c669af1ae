package detect

import (
	"math"
	"strconv"
	"time"

	"github.com/seismo-agent/seismo/internal/configutil"
	"github.com/seismo-agent/seismo/internal/model"
)

func init() {
	register(Kind{
		Name: "storm",
		Doc: "Fires when the share of rate-limited requests jumps across most clients at " +
			"once (the limiter itself misbehaving); a jump concentrated on one or two " +
			"clients is reported as information, not a page.",
		Signals: []SignalSpec{
			{Name: "requests", Required: true, PerKey: true, Doc: "request rate per client, including limited requests"},
			{Name: "limited", Required: true, PerKey: true, Doc: "rate-limited (HTTP 429) request rate per client"},
		},
		NewConfig: func() Config { c := shapeStormDefaults(); return &c },
	})
}

// StormConfig configures the rate-limit storm detector.
type StormConfig struct {
	// KeyLabel is the label that identifies a client in both signals
	// ("client", "route", "tenant"). The rules engine breaks the signals
	// down by it.
	KeyLabel string `yaml:"key_label"`
	// Baseline is the time constant of the limited-share baseline.
	Baseline time.Duration `yaml:"baseline"`
	// WarmUp is the number of samples before the detector judges.
	WarmUp int `yaml:"warm_up"`
	// Sigmas is the z-score of the overall limited share over its
	// baseline needed to call a jump.
	Sigmas float64 `yaml:"sigmas"`
	// MinShare is the minimum absolute rise of the overall limited share
	// (0.1 = ten percentage points) for a jump.
	MinShare float64 `yaml:"min_share"`
	// ClientShare is the share of a client's own requests that must be
	// limited for the client to count as affected.
	ClientShare float64 `yaml:"client_share"`
	// MinClientRequests is the request rate above which a client counts as
	// active.
	MinClientRequests float64 `yaml:"min_client_requests"`
	// Breadth is the fraction of active clients that must be affected for a
	// jump to page as a storm.
	Breadth float64 `yaml:"breadth"`
	// ConcentratedClients is the largest number of affected clients that
	// counts as legitimate limiting of heavy clients (informational).
	ConcentratedClients int `yaml:"concentrated_clients"`
	// Confirm is the number of consecutive samples with a jump before firing.
	Confirm int `yaml:"confirm"`
	// ResolveAfter is how long the share must stay normal to resolve; it
	// bridges the bursts of a cache-reset sawtooth.
	ResolveAfter time.Duration `yaml:"resolve_after"`
	// RelearnAfter lets the frozen baseline learn again after an anomaly
	// has lasted this long.
	RelearnAfter time.Duration `yaml:"relearn_after"`
}

func shapeStormDefaults() StormConfig {
	return StormConfig{
		KeyLabel:            "client",
		Baseline:            30 * time.Minute,
		WarmUp:              30,
		Sigmas:              4,
		MinShare:            0.1,
		ClientShare:         0.2,
		Breadth:             0.5,
		ConcentratedClients: 2,
		Confirm:             2,
		ResolveAfter:        5 * time.Minute,
		RelearnAfter:        2 * time.Hour,
	}
}

// Validate reports every problem, named by YAML key.
func (c *StormConfig) Validate() error {
	var errs configutil.Errors
	shapeCheckCommon(&errs, c.Baseline, c.WarmUp, c.Sigmas, c.Confirm, c.ResolveAfter, c.RelearnAfter)
	if c.KeyLabel == "" {
		errs.Addf("key_label", "must name the client label, e.g. client")
	}
	if !(c.MinShare > 0 && c.MinShare <= 1) {
		errs.Addf("min_share", "must be in (0, 1], got %v", c.MinShare)
	}
	if !(c.ClientShare > 0 && c.ClientShare <= 1) {
		errs.Addf("client_share", "must be in (0, 1], got %v", c.ClientShare)
	}
	if !(c.MinClientRequests >= 0) {
		errs.Addf("min_client_requests", "must not be negative, got %v", c.MinClientRequests)
	}
	if !(c.Breadth > 0 && c.Breadth <= 1) {
		errs.Addf("breadth", "must be in (0, 1], got %v", c.Breadth)
	}
	if c.ConcentratedClients < 0 {
		errs.Addf("concentrated_clients", "must not be negative, got %d", c.ConcentratedClients)
	}
	return errs.Err()
}

// New builds a Storm detector.
func (c *StormConfig) New() (Composite, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Storm{cfg: *c, scratch: map[string]float64{}}, nil
}

// Storm detects rate-limit storms. Each sample it computes the overall
// limited share, the number of active and affected clients and the
// Herfindahl index of limited requests over clients (O(clients), no
// per-client state). A jump in the share over its baseline pages when it is
// broad (Breadth of active clients affected) and is informational when at
// most ConcentratedClients are affected. Its memory is O(1) between samples
// apart from a reusable scratch map.
type Storm struct {
	cfg StormConfig

	share, reqs shapeBaseline
	shapeLatch
	broad bool // classification of the last jump sample
	// paged remembers that this episode has paged as a broad storm: the
	// edges of its waves, where only some clients are limited yet, do not
	// turn it back into information until the episode resolves.
	paged    bool
	jump     shapeStormStats
	jumpAt   int64 // ts of the last jump sample
	jumpTop  [3]shapeKeyed
	dips     int64 // times the share recovered briefly during this episode
	wasCond  bool
	carried  int
	last     Result
	scratch  map[string]float64 // limited by key when the signals are not aligned
	shapeTop [3]shapeKeyed
}

type shapeKeyed struct {
	key string
	v   float64
}

var _ Composite = (*Storm)(nil)

// shapeShareFloor is the absolute floor on the share's standard deviation:
// a limiter that normally rejects nothing must not page on one 429.
const shapeShareFloor = 0.005

// shapeStormStats are one instant's figures.
type shapeStormStats struct {
	req, lim, hhi    float64
	active, affected int
	keyed            bool // some sample has a key: breadth is known
}

func (s *Storm) stats(reqs, lim []Sample) shapeStormStats {
	c := &s.cfg
	var st shapeStormStats
	// Join limited to requests by key: index-wise when both vectors list
	// the same keys in the same order, by a merge when both are sorted by
	// key (limited often lists only the clients that were ever limited),
	// else through the scratch map.
	aligned := len(lim) == len(reqs)
	for i := 0; aligned && i < len(reqs); i++ {
		aligned = reqs[i].Key == lim[i].Key
	}
	merge := !aligned && shapeSortedKeys(reqs) && shapeSortedKeys(lim)
	if !aligned && !merge {
		clear(s.scratch)
		for _, x := range lim {
			if x.Value > 0 && !math.IsInf(x.Value, 0) {
				s.scratch[x.Key] += x.Value
			}
		}
	}
	s.shapeTop = [3]shapeKeyed{}
	var sumSq float64
	j := 0 // merge position in lim
	for i, x := range reqs {
		r := x.Value
		if !(r > 0) || math.IsInf(r, 0) {
			continue
		}
		var l float64
		switch {
		case aligned:
			l = lim[i].Value
		case merge:
			for j < len(lim) && lim[j].Key < x.Key {
				j++
			}
			for k := j; k < len(lim) && lim[k].Key == x.Key; k++ {
				if v := lim[k].Value; v > 0 && !math.IsInf(v, 0) {
					l += v
				}
			}
		default:
			l = s.scratch[x.Key]
		}
		if !(l > 0) || math.IsInf(l, 0) {
			l = 0
		}
		l = math.Min(l, r)
		st.keyed = st.keyed || x.Key != ""
		st.req += r
		st.lim += l
		sumSq += l * l
		if r > c.MinClientRequests {
			st.active++
			if l/r >= c.ClientShare {
				st.affected++
			}
		}
		if l > s.shapeTop[2].v {
			t := &s.shapeTop
			switch {
			case l > t[0].v:
				t[0], t[1], t[2] = shapeKeyed{x.Key, l}, t[0], t[1]
			case l > t[1].v:
				t[1], t[2] = shapeKeyed{x.Key, l}, t[1]
			default:
				t[2] = shapeKeyed{x.Key, l}
			}
		}
	}
	if st.lim > 0 {
		st.hhi = sumSq / (st.lim * st.lim)
	}
	return st
}

func shapeSortedKeys(v []Sample) bool {
	for i := 1; i < len(v); i++ {
		if v[i].Key < v[i-1].Key {
			return false
		}
	}
	return true
}

// Observe judges one evaluation instant.
func (s *Storm) Observe(ts int64, in Inputs) Result {
	c := &s.cfg
	warm := s.share.n >= int64(c.WarmUp)
	st := s.stats(in["requests"], in["limited"])
	if st.req <= 0 {
		// No traffic: nothing to judge. An absent limited signal is no
		// 429s at all (PromQL returns nothing for a counter never
		// incremented), so it is not treated as missing.
		s.last = shapeCarry(&s.last, &s.carried, warm)
		return s.last
	}
	s.carried = 0
	step := s.tick(ts)
	share := st.lim / st.req
	sd := s.share.sd(0, shapeShareFloor)
	z := (share - s.share.mean) / sd
	cond := warm && z >= c.Sigmas && share-s.share.mean >= c.MinShare
	if cond {
		concentrated := st.affected <= c.ConcentratedClients && st.active > c.ConcentratedClients
		broad := !concentrated && float64(st.affected) >= c.Breadth*float64(st.active)
		// Within an episode that paged, a narrower sample (a wave rising
		// or ebbing) is the same storm: keep describing its broad peak.
		if broad || !s.paged {
			s.broad = broad
			s.jump, s.jumpAt, s.jumpTop = st, ts, s.shapeTop
		}
	}

	// The verdict's band is in the unit of the first signal, requests (the
	// rules engine charts that signal against it); the score and direction
	// are the limited share's, whose figures are in the explanation.
	rsd := s.reqs.sd(shapeFloorRel, shapeFloorAbs)
	r := Result{Verdict: Verdict{
		Score: shapeScore(z), Expected: s.reqs.mean,
		Lower: math.Max(0, s.reqs.mean-c.Sigmas*rsd), Upper: s.reqs.mean + c.Sigmas*rsd,
		State: StateNormal,
	}}
	switch {
	case z > 0:
		r.Direction = DirUp
	case z < 0:
		r.Direction = DirDown
	}
	wasFiring := s.firing
	if !warm {
		r.State, r.Score = StateWarmingUp, 0
	} else if s.step(ts, cond, c.Confirm, c.ResolveAfter) {
		if !wasFiring {
			s.dips = 0
		} else if s.wasCond && !cond {
			s.dips++
		}
		r.State = StateAnomalous
		r.Informational = !s.broad
		s.paged = s.paged || s.broad
		r.Explanation = s.explain(ts, &st, r.Score)
	} else {
		s.paged = false
	}
	s.wasCond = cond
	if s.learning(ts, c.RelearnAfter) {
		s.share.update(step, share, c.Baseline, c.Sigmas, 0, shapeShareFloor, c.WarmUp)
		s.reqs.update(step, st.req, c.Baseline, c.Sigmas, shapeFloorRel, shapeFloorAbs, c.WarmUp)
	}
	s.last = r
	return r
}

func (s *Storm) explain(ts int64, now *shapeStormStats, score float64) *model.Explanation {
	c := &s.cfg
	// While holding through a lull, describe the last sample that had the
	// jump, and say that it eased.
	st := &s.jump
	share := st.lim / st.req
	sd := s.share.sd(0, shapeShareFloor)
	b := &model.Breadth{
		Label: c.KeyLabel, Active: st.active, Affected: st.affected,
		Concentration: shapeRound3(st.hhi),
	}
	if st.active > 0 {
		b.AffectedShare = shapeRound3(float64(st.affected) / float64(st.active))
	}
	for _, t := range s.jumpTop {
		if t.v > 0 {
			b.Top = append(b.Top, t.key)
		}
	}
	x := &model.Explanation{
		Detector: "storm", Score: score, Direction: "up", Breadth: b,
		Signals: []model.Signal{
			{Name: "limited_share", Unit: "ratio", Current: now.lim / now.req, Expected: s.share.mean,
				Lower: math.Max(0, s.share.mean-c.Sigmas*sd), Upper: s.share.mean + c.Sigmas*sd},
			shapeSignal("requests", "req/s", now.req, &s.reqs, c.Sigmas, shapeFloorRel, shapeFloorAbs),
			{Name: "limited", Unit: "req/s", Current: now.lim, Expected: s.share.mean * s.reqs.mean},
		},
	}
	head := "429 share " + shapeVal(share, "ratio") + " (normal " + shapeVal(s.share.mean, "ratio") +
		" " + shapeSpread(sd, "ratio") + ")"
	who := strconv.Itoa(st.affected) + " of " + strconv.Itoa(st.active) + " " + c.KeyLabel + "s limited"
	eased := ""
	if s.jumpAt != ts {
		eased = "; eased to " + shapeVal(now.lim/now.req, "ratio") + " " + shapeDur(ts-s.jumpAt) +
			" ago, holding " + shapeDur(c.ResolveAfter.Milliseconds()) + " before resolving"
	}
	top := ""
	if len(b.Top) > 0 && st.lim > 0 {
		top = "; top " + c.KeyLabel + " " + b.Top[0] + " has " + shapeVal(s.jumpTop[0].v/st.lim, "ratio") + " of the 429s"
	}
	switch {
	case !st.keyed:
		// Without a breakdown breadth is unknown; the jump pages as broad.
		x.Breadth = nil
		x.Kind = "rate_limit_storm"
		x.Cause = "the rate limiter is rejecting a large share of all requests"
		x.Summary = head + " for " + shapeDur(ts-s.since) + eased + " (no per-" + c.KeyLabel +
			" breakdown: aggregate the signals by " + c.KeyLabel + " to tell a storm from one heavy " +
			c.KeyLabel + "): check the limiter's keys and config since the last deploy"
		return x
	case !s.broad && st.affected <= c.ConcentratedClients:
		x.Kind = "concentrated_limiting"
		x.Cause = "legitimate limiting of a heavy " + c.KeyLabel
		x.Summary = head + ", concentrated: " + who + top + " (concentration " + shapeNum(b.Concentration) +
			")" + eased + ": " + x.Cause + ", not a misbehaving limiter — no page"
		return x
	case !s.broad:
		x.Kind = "rate_limit_storm"
		x.Cause = "the rate limiter is rejecting a subset of " + c.KeyLabel + "s (one shard, route or region?)"
		x.Summary = head + ", partial: " + who + " (" + shapeVal(b.AffectedShare, "ratio") + ", below the " +
			shapeVal(c.Breadth, "ratio") + " that pages" + top + ")" + eased + ": " + x.Cause + " — no page yet"
		return x
	}
	x.Kind = "rate_limit_storm"
	x.Cause = "the rate limiter is rejecting most " + c.KeyLabel + "s regardless of their traffic"
	x.Summary = head + " across " + who + " (" + shapeVal(b.AffectedShare, "ratio") +
		", concentration " + shapeNum(b.Concentration) + ") for " + shapeDur(ts-s.since) + eased
	if s.dips > 0 {
		x.Summary += ", with " + strconv.FormatInt(s.dips, 10) + " brief recoveries (sawtooth: a limiter cache being reset?)"
	}
	x.Summary += ": the limiter itself is misbehaving, not one heavy " + c.KeyLabel +
		" — check the limiter's keys and config since the last deploy"
	return x
}

func (c *StormConfig) fields() []configField {
	return []configField{
		{"baseline", shapeMs(c.Baseline)}, {"warm_up", float64(c.WarmUp)}, {"sigmas", c.Sigmas},
		{"min_share", c.MinShare}, {"client_share", c.ClientShare}, {"min_client_requests", c.MinClientRequests},
		{"breadth", c.Breadth}, {"concentrated_clients", float64(c.ConcentratedClients)},
		{"confirm", float64(c.Confirm)}, {"resolve_after", shapeMs(c.ResolveAfter)},
		{"relearn_after", shapeMs(c.RelearnAfter)},
	}
}

// MarshalBinary snapshots the detector state.
func (s *Storm) MarshalBinary() ([]byte, error) {
	w := newEncoder("storm", 384)
	encodeConfig(w, s.cfg.fields())
	s.share.encode(w)
	s.reqs.encode(w)
	s.shapeLatch.encode(w)
	w.bool(s.broad)
	w.bool(s.paged)
	for _, v := range []float64{s.jump.req, s.jump.lim, s.jump.hhi} {
		w.f64(v)
	}
	w.i64(int64(s.jump.active))
	w.i64(int64(s.jump.affected))
	w.bool(s.jump.keyed)
	w.i64(s.jumpAt)
	for _, t := range s.jumpTop {
		shapePutStr(w, t.key)
		w.f64(t.v)
	}
	w.i64(s.dips)
	w.bool(s.wasCond)
	w.i64(int64(s.carried))
	if err := shapePutResult(w, &s.last); err != nil {
		return nil, err
	}
	return w.b, nil
}

// UnmarshalBinary restores a snapshot made by MarshalBinary with the same
// config; it wraps ErrSnapshot otherwise.
func (s *Storm) UnmarshalBinary(b []byte) error {
	r, err := newDecoder("storm", b)
	if err != nil {
		return err
	}
	checkConfig(r, s.cfg.fields())
	n := Storm{cfg: s.cfg, scratch: map[string]float64{}}
	n.share.decode(r)
	n.reqs.decode(r)
	n.shapeLatch.decode(r)
	n.broad = r.bool()
	n.paged = r.bool()
	n.jump.req, n.jump.lim, n.jump.hhi = r.f64(), r.f64(), r.f64()
	n.jump.active = int(r.i64())
	n.jump.affected = int(r.i64())
	n.jump.keyed = r.bool()
	n.jumpAt = r.i64()
	for i := range n.jumpTop {
		n.jumpTop[i].key = shapeGetStr(r)
		n.jumpTop[i].v = r.f64()
	}
	n.dips = r.i64()
	n.wasCond = r.bool()
	n.carried = int(r.i64())
	n.last = shapeGetResult(r)
	if err := r.finish(); err != nil {
		return err
	}
	*s = n
	return nil
}
