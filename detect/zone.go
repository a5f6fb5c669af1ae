package detect

import (
	"math"
	"time"
	_ "time/tzdata" // time_zone works where the system has no zone database

	"github.com/seismo-agent/seismo/internal/configutil"
)

// zoneClock turns Unix milliseconds into a time zone's wall-clock
// milliseconds, so that a detector's days (or weeks) are the zone's: a day
// when clocks change is an hour shorter or longer, and an hour repeats.
// The zone's offset is cached for the span it holds (ZoneBounds), so a
// sample costs one comparison. The zero value is UTC.
type zoneClock struct {
	loc                *time.Location // nil for UTC
	from, till, offset int64          // offset (ms) holds over [from, till)
}

// newZoneClock returns the clock of a zone that checkTimeZone accepted;
// an empty or unknown name is UTC.
func newZoneClock(name string) zoneClock {
	if name == "" {
		return zoneClock{}
	}
	loc, err := time.LoadLocation(name)
	if err != nil || loc == time.UTC {
		return zoneClock{}
	}
	return zoneClock{loc: loc}
}

// local returns ts moved by the zone's offset from UTC at ts.
func (z *zoneClock) local(ts int64) int64 {
	if z.loc == nil {
		return ts
	}
	if ts < z.from || ts >= z.till {
		t := time.UnixMilli(ts).In(z.loc)
		_, off := t.Zone()
		z.offset = int64(off) * 1000
		// The span this offset holds for; a zero bound is none.
		from, till := t.ZoneBounds()
		z.from, z.till = math.MinInt64, math.MaxInt64
		if !from.IsZero() {
			z.from = from.UnixMilli()
		}
		if !till.IsZero() {
			z.till = till.UnixMilli()
		}
	}
	return ts + z.offset
}

// checkTimeZone validates a time_zone field.
func checkTimeZone(errs *configutil.Errors, name string) {
	if name == "" {
		return
	}
	if _, err := time.LoadLocation(name); err != nil {
		errs.Addf("time_zone", "must be an IANA time zone such as Europe/Berlin, or empty for UTC: %v", err)
	}
}
