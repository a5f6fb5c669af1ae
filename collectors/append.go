package collectors

import (
	"errors"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/seismo-agent/seismo/store"
)

// seriesCache maps what a target exposes (the raw series text of a scrape,
// or the label bytes of a collector's sample) to the stored series, so a
// steady target costs one map lookup per sample and no label building. It
// also remembers which series the last successful collection produced, to
// write staleness markers for the ones that disappear.
type seriesCache struct {
	entries map[string]*cacheEntry
	iter    uint64
	cur     []*cacheEntry // seen in this collection
	prev    []*cacheEntry // seen in the last successful collection
	keyBuf  []byte
}

type cacheEntry struct {
	ref  store.SeriesRef
	lset labels.Labels
	seen uint64 // iteration of the last collection that had it
}

func newSeriesCache() *seriesCache {
	return &seriesCache{entries: map[string]*cacheEntry{}}
}

// begin starts a collection.
func (c *seriesCache) begin() {
	c.iter++
	c.cur = c.cur[:0]
}

// errDuplicate marks a series exposed twice in one collection.
var errDuplicate = errors.New("duplicate series")

// get returns the entry for key, or nil when it has to be created with add.
func (c *seriesCache) get(key []byte) *cacheEntry {
	return c.entries[string(key)]
}

func (c *seriesCache) add(key []byte, lset labels.Labels) *cacheEntry {
	e := &cacheEntry{lset: lset}
	c.entries[string(key)] = e
	return e
}

// appendEntry appends v for e unless e was already seen in this collection.
func (c *seriesCache) appendEntry(app *store.Appender, e *cacheEntry, t int64, v float64) error {
	if e.seen == c.iter {
		return errDuplicate
	}
	e.seen = c.iter
	c.cur = append(c.cur, e)
	ref, err := app.Append(e.ref, e.lset, t, v)
	if err != nil {
		return err
	}
	e.ref = ref
	return nil
}

// commitStaleness writes markers at t for the series of the last successful
// collection that this one did not produce, or for all of them when ok is
// false (the target failed), and forgets series unseen for a while.
func (c *seriesCache) commitStaleness(app *store.Appender, t int64, ok bool) {
	stale := math.Float64frombits(value.StaleNaN)
	for _, e := range c.prev {
		if !ok || e.seen != c.iter {
			e.ref, _ = app.Append(e.ref, e.lset, t, stale)
		}
	}
	clear(c.prev)
	if ok {
		c.prev, c.cur = c.cur, c.prev[:0]
	} else {
		c.prev = c.prev[:0]
		c.cur = c.cur[:0]
	}
	// Drop entries no longer exposed once they outnumber the live ones, so
	// a target with churning series cannot grow the cache without bound.
	if len(c.entries) > 2*len(c.prev)+64 {
		for k, e := range c.entries {
			if e.seen+1 < c.iter {
				delete(c.entries, k)
			}
		}
	}
}

// staleAll writes markers for every series of the last successful
// collection (the target went away).
func (c *seriesCache) staleAll(app *store.Appender, t int64) {
	c.iter++
	c.commitStaleness(app, t, false)
}
