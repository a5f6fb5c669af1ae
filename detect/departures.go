package detect

import "math"

// Departures from a value the metric repeats
//
// Many of a server's metrics sit on one value nearly all the time and
// leave it for a sample now and then: a swap-in or retransmit counter at
// 0 with a few every hours, a count of worker processes that dips by one
// while a worker restarts. auto's likelihoods fit a Gaussian to the
// recent average of their surprise, and on such a metric that average is
// two-humped: 0 nearly always, and a fixed height after each blip. A
// Gaussian fitted to that puts every blip 8 to 20 of its deviations out,
// however often blips come, so each one pages.
//
// departures keeps what the Gaussian cannot: how often the metric has
// left its value by this much. While nearly all samples repeat the one
// before (same ≥ 0.9, over the level's half-life; a metric is taken to
// sit on one value until it shows otherwise, which one that does not
// repeat shows within 23 samples, inside the warm-up), an excursion of
// the likelihoods (z at or above the score of half the threshold, the
// hysteresis bound) is a departure; its size is how far it has taken the
// metric from the value it repeats, summed over its samples, so that a
// departure that lasts outgrows the blips before it. The last
// departureMemory departures are kept with their sizes, each weighed by
// its age as the likelihoods' long run weighs samples (LongHalfLife).
// Where c, the weight of past departures as large as this one (at least
// half its size, departureAlike), exceeds 1, the tail probability of
// the excursion is at least (c−1)/N, N being the long run's weight of
// samples: departures this large come that often. A single earlier one
// proves nothing (a second outage like the first still pages), which is
// the 1 taken off.
//
// A departure more than twice as large as all but one remembered keeps
// its Gaussian tail,
// and so does everything on a metric that does not sit on one value
// (NAB's tweet volumes, whose recurring bursts are labelled anomalies).
// NAB's art_increase_spike_density is such a metric: its regular pairs
// of spikes no longer page, and the burst of extra spikes still does.
type departures struct {
	same  float64 // share of recent samples equal to the one before
	value float64 // the value last repeated
	ring  [departureMemory]departure
	slot  uint8 // ring's latest departure
	open  bool  // a departure is under way
}

// departure is one excursion's size and when it was last added to.
type departure struct {
	size float32 // Σ |x − value| over its samples; negative when unused
	at   uint32  // the sample count at its latest sample, wrapping
}

const (
	// departureMemory departures are remembered: on a counter that
	// blips every few hours at 1-minute resolution, about two days of
	// them.
	departureMemory = 16
	// A past departure is as large as this one if it is at least half
	// its size: a counter's blips vary (a few swap-ins, then twice as
	// many), and a departure is news when it is more than twice the
	// size of all but one of those remembered.
	departureAlike = 2
)

func newDepartures() departures {
	d := departures{same: 1}
	for i := range d.ring {
		d.ring[i].size = -1
	}
	return d
}

// judge is called for a sample whose likelihood z is at or above the
// bound on a metric that sits on one value: it adds dev, the sample's
// distance from that value, to the departure under way (starting one
// if none is) and returns z, lowered to the z of the departures' tail
// probability where that is the higher probability. n is the sample
// count and alpha the likelihoods' long-run alpha, by which departures
// age.
func (d *departures) judge(z, dev float64, n uint64, alpha float64) float64 {
	decay := 1 - alpha
	logDecay := math.Log(decay)
	if !d.open {
		d.slot = (d.slot + 1) % departureMemory
		d.ring[d.slot] = departure{}
		d.open = true
	}
	cur := &d.ring[d.slot]
	cur.size += float32(dev)
	cur.at = uint32(n)
	c := 0.0
	for i, r := range d.ring {
		if i != int(d.slot) && departureAlike*r.size >= cur.size {
			c += math.Exp(float64(uint32(n)-r.at) * logDecay)
		}
	}
	if c <= 1 {
		return z
	}
	// The long run's weight of samples: Σ decay^k for k < n.
	total := (1 - math.Exp(float64(n)*logDecay)) / (1 - decay)
	if p := (c - 1) / total; p > NormalTail(z) {
		return NormalTailZ(p)
	}
	return z
}

func (d *departures) encode(w *encoder) {
	w.f64(d.same)
	w.f64(d.value)
	for _, r := range d.ring {
		w.f32(r.size)
		w.u32(r.at)
	}
	w.u8(d.slot)
	w.bool(d.open)
}

func (d *departures) decode(r *decoder) {
	d.same = r.f64()
	d.value = r.f64()
	for i := range d.ring {
		d.ring[i].size = r.f32()
		d.ring[i].at = r.u32()
	}
	d.slot = r.u8()
	d.open = r.bool()
	if d.slot >= departureMemory && r.err == nil {
		r.err = errorf("departure slot %d of %d", d.slot, departureMemory)
	}
}
