package detect

import (
	"fmt"
	"math"
	"sync"
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
	loc, err := loadZone(name)
	if err != nil || loc == time.UTC {
		return zoneClock{}
	}
	return zoneClock{loc: loc}
}

// zones caches loaded time zones by name: a rule builds a detector per
// series (and validates its config each time), and time.LoadLocation
// reads and parses the zone's file on every call.
var zones sync.Map // name → *time.Location

func loadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
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

// CheckTimeZone reports why name is no time_zone: not empty (UTC) and not
// an IANA zone. The agent's rules.time_zone is checked by it too.
func CheckTimeZone(name string) error {
	if name == "" {
		return nil
	}
	if _, err := loadZone(name); err != nil {
		return fmt.Errorf("must be an IANA time zone such as Europe/Berlin, or empty for UTC: %w", err)
	}
	return nil
}

// checkTimeZone adds CheckTimeZone's error for a time_zone field.
func checkTimeZone(errs *configutil.Errors, name string) {
	if err := CheckTimeZone(name); err != nil {
		errs.Addf("time_zone", "%v", err)
	}
}
