package detect

// locScale is what the ewma and mad detectors share: they score a sample
// by its distance from a baseline's location in units of its scale, and
// differ only in the baseline (EWMA or Robust) and their kind tag. Each
// detector keeps its baseline as a concrete field and its own short
// Observe, so the per-sample path is inlined whole; only snapshots go
// through the snapshotter interface.
type locScale struct {
	kind      string
	fields    []configField // the config, checked on restore
	warmUp    uint64
	threshold float64
	band      float64
	// The values' range, for the floor under the scale (see valueRange).
	rng  valueRange
	last Verdict
}

func newLocScale(kind string, warmUp int, threshold, band float64, fields []configField) locScale {
	return locScale{kind: kind, fields: fields, warmUp: uint64(warmUp), threshold: threshold, band: band, rng: newValueRange()}
}

// snapshotter is a baseline's snapshot encoding.
type snapshotter interface {
	encode(w *encoder)
	decode(r *decoder)
}

func (d *locScale) marshal(stats snapshotter) ([]byte, error) {
	w := newEncoder(d.kind, 128)
	encodeConfig(w, d.fields)
	stats.encode(w)
	d.rng.encode(w)
	encodeVerdict(w, d.last)
	return w.b, nil
}

func (d *locScale) unmarshal(b []byte, stats snapshotter) error {
	r, err := newDecoder(d.kind, b)
	if err != nil {
		return err
	}
	checkConfig(r, d.fields)
	stats.decode(r)
	d.rng.decode(r)
	d.last = decodeVerdict(r)
	return r.finish()
}
