package detect

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A simulated week of 10-second samples: diurnal load with deep nights and
// quieter weekends, multiplicative noise (autocorrelated for p99 latency,
// wider at night), a daily deploy blip, and (for the storm) a heavy client
// that is legitimately limited at every daily peak.
// TestShapeWeek runs each detector over a clean week and counts false pages,
// then over a week with a clear incident every ~12 hours and reports the
// detection delays. Run it with -v to see the figures.

const (
	shapeWeekSamples = 60480 // 7 days of 10 s
	shapeDaySamples  = 8640
	shapeIncidentLen = 60 // 10 min
)

// shapeLoad is the diurnal load in (0, 1]: 5 % at 03:00, 100 % at 15:00,
// weekends at 70 %.
func shapeLoad(i int) float64 {
	day := float64(i%shapeDaySamples) / shapeDaySamples
	x := (1 - math.Cos(2*math.Pi*(day-0.125))) / 2
	l := 0.05 + 0.95*math.Pow(x, 1.5)
	if d := i / shapeDaySamples; d == 5 || d == 6 {
		l *= 0.7
	}
	return l
}

// shapeDeploy reports whether sample i is a daily deploy blip (at 11:00).
func shapeDeploy(i int) bool { return i%shapeDaySamples == shapeDaySamples*11/24 }

func shapePoisson(rng *rand.Rand, lambda float64) float64 {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return math.Max(0, math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64()))
	}
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func shapeLogNormal(rng *rand.Rand, sigma float64) float64 {
	return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
}

// shapeWorld generates one detector's inputs at sample i; inc is the number
// of samples since the incident started, or -1 outside incidents.
type shapeWorld struct {
	kind   string
	config string
	// lag is how many samples after the incident start its detectable
	// onset is (a surge's saturation follows the traffic step).
	lag int
	// incLen is the incident's length in samples (shapeIncidentLen when 0).
	incLen int
	// maxDelay is the longest detection delay allowed, in samples after
	// lag (2 when 0).
	maxDelay int
	// newGen returns a fresh generator (some carry state from sample to
	// sample, such as autocorrelated noise).
	newGen func() func(rng *rand.Rand, i, inc int) Inputs
}

func shapeWorlds() []shapeWorld {
	return []shapeWorld{
		{kind: "decoupling", newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			ar := 0.0 // p99 latency noise is autocorrelated: AR(1), phi 0.8
			return func(rng *rand.Rand, i, inc int) Inputs {
				load := shapeLoad(i)
				ar = 0.8*ar + 0.6*rng.NormFloat64()
				lat := 0.2 * (1 + 0.5*load*load) * math.Exp((0.15+0.15*(1-load))*ar)
				cpu := (0.05 + 0.6*load) * (1 + 0.03*rng.NormFloat64())
				traffic := 200 * load * (1 + 0.03*rng.NormFloat64())
				if shapeDeploy(i) {
					lat *= 2.5
					cpu *= 1.3
				}
				if inc >= 0 {
					lat *= 8 // 0.22 s to 1.8 s, as in the web-store outage
				}
				return Inputs{"symptom": {{Value: lat}}, "resource": {{Value: cpu}}, "traffic": {{Value: traffic}}}
			}
		}},
		{kind: "storm", newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				const clients = 50
				load := shapeLoad(i)
				reqs := make([]Sample, clients)
				lim := make([]Sample, 0, clients)
				for c := range clients {
					key := "client-" + strconv.Itoa(c)
					r := 100 * load / float64(c+1) * (1 + 0.1*rng.NormFloat64())
					r = math.Max(r, 0.01)
					l := r * 0.002 * math.Abs(rng.NormFloat64())
					if c == 0 && load > 0.8 {
						l = 0.6 * r // the heavy client hits its quota at the daily peak
					}
					if inc >= 0 {
						l = r * (0.7 + 0.05*rng.NormFloat64())
					}
					reqs[c] = Sample{Key: key, Value: r}
					lim = append(lim, Sample{Key: key, Value: math.Min(l, r)})
				}
				return Inputs{"requests": reqs, "limited": lim}
			}
		}},
		{kind: "surge", lag: 3, newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				w := shapeSurgeWorld(rng, i)
				if inc >= 0 {
					w.req *= 5
					w.flight *= 5
					if inc >= 3 {
						w.lat *= 4
						w.errs = w.req * 0.3
					}
				}
				return w.inputs()
			}
		}},
		// The exchange's surge: 5x over four minutes on a service whose
		// capacity is 2x; past capacity, work piles up in the queue and in
		// flight at once, the p99 and 5xx follow.
		// Paged within 60 s of traffic passing capacity.
		{kind: "surge", config: "ramp", lag: 6, maxDelay: 6, newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				w := shapeSurgeWorld(rng, i)
				if inc >= 0 {
					rampSurge(&w, inc)
				}
				return w.inputs()
			}
		}},
		// The same surge with the worker pool known. Outside incidents the
		// pool has room for five times the current load's in-flight
		// requests (the daily proportional overload climbs to 2.9x of them
		// and stops); the incident's service has room for 2x, as above.
		// In-flight requests reach three quarters of the workers at 1.5x
		// traffic, before anything saturates: paged within 60 s of the
		// ramp's start.
		{kind: "surge", config: "ramp-workers", maxDelay: 6, newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				w := shapeSurgeWorld(rng, i)
				load := shapeLoad(i)
				normal := 1000 * load * 0.2 * (1 + 0.3*load) / 2 // expected in flight
				w.workers = 5 * normal
				if inc >= 0 {
					w.workers = 2 * normal
					rampSurge(&w, inc)
				}
				return w.inputs()
			}
		}},
		// A storm at half intensity in waves: the limiter's state is
		// cleared every 200 s, and each wave rises and ebbs over a minute
		// (a rate window), so its edges limit only some clients.
		{kind: "storm", config: "sawtooth", incLen: 120, newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				const clients = 20
				load := shapeLoad(i)
				reqs := make([]Sample, clients)
				lim := make([]Sample, clients)
				level := 0.0
				if inc >= 0 {
					ph := inc % 20 // 200 s period: 120 s limited, 80 s through
					switch {
					case ph < 6:
						level = float64(ph+1) / 6
					case ph < 12:
						level = 1
					case ph < 18:
						level = float64(18-ph) / 6
					}
				}
				for c := range clients {
					key := "client-" + strconv.Itoa(c)
					r := math.Max(0.01, 100*load/float64(c+1)*(1+0.1*rng.NormFloat64()))
					l := r * 0.002 * math.Abs(rng.NormFloat64())
					l = math.Max(l, r*0.425*level*(1+0.1*rng.NormFloat64()))
					reqs[c] = Sample{Key: key, Value: r}
					lim[c] = Sample{Key: key, Value: math.Min(l, r)}
				}
				return Inputs{"requests": reqs, "limited": lim}
			}
		}},
		{kind: "error_rate", config: "count", newGen: func() func(rng *rand.Rand, i, inc int) Inputs {
			return func(rng *rand.Rand, i, inc int) Inputs {
				load := shapeLoad(i)
				n := shapePoisson(rng, 2000*load) // requests per 10 s
				p := 0.005 * shapeLogNormal(rng, 0.3)
				if shapeDeploy(i) {
					p = 0.03
				}
				if inc >= 0 {
					p = 0.2
				}
				k := math.Min(n, shapePoisson(rng, n*p))
				return Inputs{"errors": {{Value: k}}, "requests": {{Value: n}}}
			}
		}},
	}
}

// shapeSurgeSample is one instant of the surge worlds' service.
type shapeSurgeSample struct {
	req, lat, queue, flight, errs float64
	workers                       float64 // 0: not fed
	health                        []Sample
}

func (w *shapeSurgeSample) inputs() Inputs {
	in := Inputs{"requests": {{Value: w.req}}, "latency": {{Value: w.lat}}, "queue": {{Value: w.queue}},
		"in_flight": {{Value: w.flight}}, "errors": {{Value: w.errs}}, "health": w.health}
	if w.workers > 0 {
		in["workers"] = []Sample{{Value: w.workers}}
	}
	return in
}

// shapeSurgeWorld is the surge worlds' normal service at sample i, with
// its daily look-alikes: a deploy blip at 11:00; at 09:00 ten minutes of
// proportional overload (traffic 2.5x within a minute on a service with
// room for it: in-flight rises with traffic, the p99 by 15 %); at 14:00
// ten minutes of one abusive client adding 3x the traffic in requests that
// are rate limited at once (cheap 429s: nothing queues or stays in flight).
// rampSurge applies, inc samples into a surge, a ramp to 5x traffic over
// 24 samples on a service with room for 2x: past that, requests queue
// and stay in flight, and from sample 12 latency and 5xx follow.
func rampSurge(w *shapeSurgeSample, inc int) {
	k := 1 + 4*math.Min(float64(inc)/24, 1)
	w.req *= k
	w.flight *= k
	if k > 2 {
		over := (k - 2) / k
		sat := math.Min(float64(inc-6)/6, 1)
		w.queue += 200 * over * sat
		w.flight += 200 * over * sat
		if inc >= 12 {
			w.lat *= 1 + 10*over
			w.errs = w.req * 0.6 * over
		}
	}
}

func shapeSurgeWorld(rng *rand.Rand, i int) shapeSurgeSample {
	load := shapeLoad(i)
	w := shapeSurgeSample{
		req:   1000 * load * (1 + 0.03*rng.NormFloat64()),
		lat:   0.2 * (1 + 0.3*load) * shapeLogNormal(rng, 0.08),
		queue: shapePoisson(rng, 2*load),
	}
	// Little's law: in flight = rate × mean time in the service.
	w.flight = w.req * w.lat / 2 * shapeLogNormal(rng, 0.05)
	w.errs = shapePoisson(rng, w.req*10*0.002) / 10
	w.health = make([]Sample, 8)
	for h := range w.health {
		w.health[h] = Sample{Key: "i" + strconv.Itoa(h), Value: 1}
	}
	if shapeDeploy(i) {
		w.lat *= 2.5
		w.flight *= 2.5
		w.health[7].Value = 0
	}
	day := i % shapeDaySamples
	if d := day - shapeDaySamples*9/24; d >= 0 && d < 60 {
		k := 1 + 1.5*math.Min(float64(d)/6, 1)
		w.req *= k
		w.lat *= 1 + 0.1*(k-1)
		w.flight *= k * (1 + 0.1*(k-1))
	}
	if d := day - shapeDaySamples*14/24; d >= 0 && d < 60 {
		w.req *= 4
	}
	return w
}

func (w shapeWorld) detector(t testing.TB) Composite {
	k, ok := Lookup(w.kind)
	require.True(t, ok)
	cfg := k.NewConfig()
	if w.config == "count" {
		cfg.(*ErrorRateConfig).Input = "count"
	}
	d, err := cfg.(CompositeConfig).New()
	require.NoError(t, err)
	return d
}

// shapeIncidentStart returns the start of the k-th incident: twelve, about
// 12 h apart, drifting through the day.
func shapeIncidentStart(k int) int { return shapeDaySamples + k*4303 }

type shapeWeekFigures struct {
	falsePages, infos int
	delays            []int
	missed            int
	incidentFalse     int
	// repages counts pages after the first within one incident: an alert
	// storm instead of one incident.
	repages int
}

func (w shapeWorld) simulate(t testing.TB, incidents bool) shapeWeekFigures {
	rng := rand.New(rand.NewPCG(42, uint64(len(w.kind))))
	d := w.detector(t)
	gen := w.newGen()
	var f shapeWeekFigures
	next, inc := 0, -1
	firstPage := -1
	prevPage, prevInfo := false, false
	incLen := w.incLen
	if incLen == 0 {
		incLen = shapeIncidentLen
	}
	for i := range shapeWeekSamples {
		if incidents && next < 12 && i == shapeIncidentStart(next) {
			inc, firstPage = 0, -1
		}
		genInc := inc
		if inc >= incLen {
			genInc = -1 // the incident is over; its window stays open below
		}
		r := d.Observe(int64(i)*10_000, gen(rng, i, genInc))
		page := r.State == StateAnomalous && !r.Informational
		info := r.State == StateAnomalous && r.Informational
		if info && !prevInfo {
			f.infos++
		}
		if page && !prevPage {
			switch {
			case inc >= 0 && firstPage < 0 && inc < incLen:
				firstPage = i
				f.delays = append(f.delays, inc-w.lag)
			case inc >= 0:
				f.repages++
			case incidents:
				f.incidentFalse++
			default:
				f.falsePages++
			}
		}
		prevPage, prevInfo = page, info
		if inc >= 0 {
			inc++
			// Keep the incident window open for a while after it ends, so a
			// page held through resolve_after is not counted as false.
			if inc == incLen+60 {
				if firstPage < 0 {
					f.missed++
				}
				inc = -1
				next++
			}
		}
	}
	return f
}

func TestShapeWeek(t *testing.T) {
	for _, w := range shapeWorlds() {
		name := w.kind
		if w.config != "" && w.config != "count" {
			name += "-" + w.config
		}
		t.Run(name, func(t *testing.T) {
			clean := w.simulate(t, false)
			t.Logf("%s: clean week of %d samples: %d false pages, %d informational episodes",
				name, shapeWeekSamples, clean.falsePages, clean.infos)
			require.Zero(t, clean.falsePages, "false pages over a clean week")

			hit := w.simulate(t, true)
			slices.Sort(hit.delays)
			t.Logf("%s: 12 incidents: delays in samples %v (max %d), missed %d, false pages between incidents %d, repeated pages within incidents %d",
				name, hit.delays, slices.Max(append([]int{-1}, hit.delays...)), hit.missed, hit.incidentFalse, hit.repages)
			require.Zero(t, hit.missed, "missed incidents")
			require.Zero(t, hit.repages, "one incident, one page")
			require.Zero(t, hit.incidentFalse, "false pages between incidents")
			require.Len(t, hit.delays, 12)
			maxDelay := w.maxDelay
			if maxDelay == 0 {
				maxDelay = 2
			}
			require.LessOrEqual(t, slices.Max(hit.delays), maxDelay, "detection delay in samples")
			require.GreaterOrEqual(t, slices.Min(hit.delays), 0, "paged before the onset")
		})
	}
}
