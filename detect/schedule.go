package detect

import "math"

// Scheduled jobs
//
// A backup every night at 02:00, a cron job every four hours, a cache
// rebuild on the hour: on a busy metric each is a short rise that the
// likelihoods or the spike path call an anomaly, and it pages on every
// run. The time-of-day slices do not see it (a ten-minute job is a small
// share of its hour), the spike path's crossing rate does not mute a job
// that runs less than once per 1/spike_rate samples, and the likelihoods'
// Gaussian puts a job that runs every few hours at z ≈ 5 each time.
//
// schedule remembers when the last scheduleMemory excursions began (an
// excursion being a run of samples whose likelihood z is at least that of
// half the threshold, or that the spike path scores; those that would
// alert are kept longer, see begin), and an excursion
// that begins on a regular schedule is a scheduled job: the fourth of four
// starts spaced equally, to within one sampling step, at least Calm
// samples apart. From the sample on which it would alert, its
// likelihoods and spike path score nothing while it lasts; a record (a
// new extreme) still alerts. Three equal intervals, not two: with two,
// some excursion on a noisy series lines up with two earlier ones by
// chance often enough to mute real incidents (NAB −3.3: nyc_taxi and
// tweet volumes lost windows).
type schedule struct {
	at      [scheduleMemory]int64 // start times (the detector's local ms); 0 unused
	alerted uint32                // bit k: at[k]'s excursion would alert
	slot    uint8                 // at's latest start
	open    bool                  // an excursion is under way
	checked bool                  // whether it began on schedule has been decided
	muted   bool                  // it began on schedule
}

// scheduleMemory excursion starts are remembered: enough for four runs of
// a daily job among the noise's own excursions on a 1-minute series. A
// power of two, so that the ring's index is a mask.
const scheduleMemory = 32

// begin records an excursion starting at ts. It takes the oldest
// start's place, unless that excursion would alert and a later one
// would not: then the oldest of those goes, and the starts before it
// move up one place, so that the noise's own excursions do not push a
// job that pages every few days out of the ring.
func (s *schedule) begin(ts int64) {
	next := (s.slot + 1) % scheduleMemory
	if s.alerted&(1<<next) != 0 {
		s.freeOldest(next)
	}
	s.slot = next
	s.at[next] = ts
	s.alerted &^= 1 << next
	s.open, s.checked, s.muted = true, false, false
}

// freeOldest drops the oldest start after oldest's whose excursion would
// not alert and moves the starts from oldest's up to it one place later,
// so that oldest's place is free and time order is kept. If every
// excursion would alert, it does nothing: oldest's start goes.
func (s *schedule) freeOldest(oldest uint8) {
	e := oldest
	for k := uint8(1); k < scheduleMemory && s.alerted&(1<<e) != 0; k++ {
		e = (oldest + k) % scheduleMemory
	}
	if s.alerted&(1<<e) != 0 {
		return
	}
	for ; e != oldest; e = (e + scheduleMemory - 1) % scheduleMemory {
		p := (e + scheduleMemory - 1) % scheduleMemory
		s.at[e] = s.at[p]
		s.alerted = s.alerted&^(1<<e) | (s.alerted>>p&1)<<e
	}
}

// check decides, once per excursion, whether the excursion under way
// began on schedule: three earlier starts t1 > t2 > t3 with ts−t1,
// t1−t2 and t2−t3 equal within step, and ts−t1 at least minGap, ts
// being its start. Observe asks only once an excursion would alert, so
// the search runs for few of them.
func (s *schedule) check(step, minGap int64) {
	s.checked = true
	s.alerted |= 1 << s.slot
	s.muted = s.onSchedule(step, minGap)
}

func (s *schedule) onSchedule(step, minGap int64) bool {
	// The ring holds starts in time order: back(0) is the excursion's
	// own, back(1) the one before, and so on; 0 is unused. Each scan
	// below walks back only as far as the start it looks for.
	back := func(k int) int64 { return s.at[(int(s.slot)-k)&(scheduleMemory-1)] }
	ts := back(0)
	// Three periods must fit between ts and the oldest start.
	oldest := ts
	for k := scheduleMemory - 1; k >= 0 && oldest == ts; k-- {
		if t := back(k); t != 0 {
			oldest = t
		}
	}
	for i := 1; i < scheduleMemory; i++ {
		t1 := back(i)
		if t1 == 0 {
			break
		}
		period := ts - t1
		if 3*period > ts-oldest+3*step {
			break
		}
		if period < minGap {
			continue
		}
		for j := i + 1; j < scheduleMemory; j++ {
			t2 := back(j)
			if t2 == 0 || t2 < t1-period-step {
				break
			}
			if t2 > t1-period+step {
				continue
			}
			q := t1 - t2 // t2 is one period before t1; is t3 one before t2?
			for k := j + 1; k < scheduleMemory; k++ {
				t3 := back(k)
				if t3 == 0 || t3 < t2-q-step {
					break
				}
				if t3 <= t2-q+step {
					return true
				}
			}
		}
	}
	return false
}

func (s *schedule) encode(w *encoder) {
	for _, t := range s.at {
		w.i64(t)
	}
	w.u32(s.alerted)
	w.u8(s.slot)
	w.bool(s.open)
	w.bool(s.checked)
	w.bool(s.muted)
}

func (s *schedule) decode(r *decoder) {
	for i := range s.at {
		s.at[i] = r.i64()
	}
	s.alerted = r.u32()
	s.slot = r.u8()
	s.open = r.bool()
	s.checked = r.bool()
	s.muted = r.bool()
	if s.slot >= scheduleMemory && r.err == nil {
		r.err = errorf("schedule slot %d of %d", s.slot, scheduleMemory)
	}
}

// Daily steps
//
// A service whose day starts at 09:00 steps up then, every day; a
// nightly job triples a rate for ten minutes, or steps a disk's usage
// down, at the same minute each night. Where the step falls on a
// time-of-day slice's edge, the slices call it the pattern's (see
// Auto.patterned). Where it falls on a slice's last sample (a clock
// whose 5-minute samples fall at :55, a day that starts at 09:55 local
// time), the slice holds both sides of it, and the spike path paged it
// on most days: on NAB with its clock shifted by 55 minutes,
// art_daily_nojump paged 8 times at 09:55 and 18:55. And each run of a
// job was a crossing of the spike path's rate, so on a short series the
// path soon called bursts routine and missed an incident shaped like
// the job (TestAutoNightlyJobIsNoRoutine).
//
// dailyJumps remembers the last dailyJumpMemory jumps (changes from the
// previous sample of JumpZ of the changes' spreads or more) and when
// they came, whether or not they paged. A jump that repeats one a day or
// two days before, at the same time of day to within the sampling step
// and as large to within JumpZ of the changes' spreads, is the day's
// pattern: the spike path scores nothing for it, nor for the rest of
// its excursion while the series stays where the step landed (see
// near), and the excursion is no crossing. The likelihoods and records
// still judge it. A day or two, not one, so that the step after a day
// without it (the incident of art_daily_nojump) is the pattern again.
// The ring is short on purpose: on a series with jumps every hour
// (tweet volumes) it holds only the last few hours, and a jump of a day
// before is seldom there to be matched by chance.
type dailyJumps struct {
	at   [dailyJumpMemory]int64   // when each jump came (the detector's local ms); 0 unused
	by   [dailyJumpMemory]float64 // its change from the sample before
	slot uint8                    // the latest
	// Whether the spike path's excursion under way began with such a
	// jump, and the values it left and landed on.
	open         bool
	from, landed float64
}

// dailyJumpMemory jumps are remembered: two steps a day for two days and
// as many of the noise's own. A power of two, so that the ring's index is
// a mask.
const dailyJumpMemory = 8

// add records a jump of change d at ts.
func (j *dailyJumps) add(ts int64, d float64) {
	j.slot = (j.slot + 1) & (dailyJumpMemory - 1)
	j.at[j.slot], j.by[j.slot] = ts, d
}

// repeats reports whether a jump of change d at ts repeats one remembered
// from one or two days before (to within step) by less than tol.
func (j *dailyJumps) repeats(ts int64, d float64, step int64, tol float64) bool {
	for k, t := range j.at {
		if t == 0 || math.Abs(d-j.by[k]) >= tol {
			continue
		}
		for back := int64(1); back <= 2; back++ {
			if dt := ts - back*dayMs - t; dt >= -step && dt <= step {
				return true
			}
		}
	}
	return false
}

// near reports whether x is still where the day's step landed: within
// a jump (bound) of the value it landed on, or nearer to it than half
// the step. The latter is for noise that grows with the level: a step
// from 60 to 300 with 3 % noise lands among samples that differ by more
// than the night's changes make a jump (1-minute samples: 26 pages over
// ten seeds' twelve days with the bound alone, 4 with both).
func (j *dailyJumps) near(x, bound float64) bool {
	d := math.Abs(x - j.landed)
	return d < bound || 2*d < math.Abs(j.landed-j.from)
}

func (j *dailyJumps) encode(w *encoder) {
	for k := range j.at {
		w.i64(j.at[k])
		w.f64(j.by[k])
	}
	w.u8(j.slot)
	w.bool(j.open)
	w.f64(j.from)
	w.f64(j.landed)
}

func (j *dailyJumps) decode(r *decoder) {
	for k := range j.at {
		j.at[k] = r.i64()
		j.by[k] = r.f64()
	}
	j.slot = r.u8()
	j.open = r.bool()
	j.from = r.f64()
	j.landed = r.f64()
	if j.slot >= dailyJumpMemory && r.err == nil {
		r.err = errorf("daily jumps' slot %d of %d", j.slot, dailyJumpMemory)
	}
}
