package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/prometheus/prometheus/model/labels"
)

// The snapshot keeps the store's history across restarts, so rate windows
// and detectors do not start cold. It is a cache: a missing or damaged file
// means an empty store, never a failed start.
//
// Format: magic, then per series its labels, last sample and chunks, then
// the CRC-32C of everything before it.
const snapshotMagic = "seismo-store-snapshot-1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes every series to path atomically (temporary file,
// fsync, rename).
func (s *Store) WriteSnapshot(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".store-snapshot-*")
	if err != nil {
		return fmt.Errorf("write store snapshot: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	crc := crc32.New(castagnoli)
	w := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<16)
	if err := s.encode(w); err != nil {
		tmp.Close()
		return fmt.Errorf("write store snapshot: %w", err)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("write store snapshot: %w", err)
	}
	if err := binary.Write(tmp, binary.BigEndian, crc.Sum32()); err != nil {
		tmp.Close()
		return fmt.Errorf("write store snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write store snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write store snapshot: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write store snapshot: %w", err)
	}
	return nil
}

func (s *Store) encode(w *bufio.Writer) error {
	var buf []byte
	putUvarint := func(x uint64) { buf = binary.AppendUvarint(buf, x) }
	putVarint := func(x int64) { buf = binary.AppendVarint(buf, x) }
	putBytes := func(b []byte) { putUvarint(uint64(len(b))); buf = append(buf, b...) }
	putString := func(str string) { putUvarint(uint64(len(str))); buf = append(buf, str...) }

	if _, err := w.WriteString(snapshotMagic); err != nil {
		return err
	}
	s.mu.RLock()
	list := make([]*memSeries, 0, s.count)
	for _, l := range s.byHash {
		list = append(list, l...)
	}
	s.mu.RUnlock()
	var chks []closedChunk
	for _, ms := range list {
		chks = ms.snapshot(math.MinInt64, math.MaxInt64, chks[:0])
		if len(chks) == 0 {
			continue
		}
		ms.mu.Lock()
		lastT, lastV := ms.lastT, ms.lastV
		ms.mu.Unlock()
		buf = buf[:0]
		putUvarint(uint64(ms.lset.Len()))
		ms.lset.Range(func(l labels.Label) { putString(l.Name); putString(l.Value) })
		putVarint(lastT)
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(lastV))
		putUvarint(uint64(len(chks)))
		for _, c := range chks {
			putVarint(c.minT)
			putVarint(c.maxT)
			putBytes(c.data)
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// LoadSnapshot adds the series of a snapshot written by WriteSnapshot to
// an empty store. A missing file is not an error.
func (s *Store) LoadSnapshot(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read store snapshot: %w", err)
	}
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return errors.New("read store snapshot: not a store snapshot")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errors.New("read store snapshot: checksum mismatch")
	}
	if s.NumSeries() != 0 {
		return errors.New("read store snapshot: the store is not empty")
	}
	r := bytes.NewReader(body[len(snapshotMagic):])
	sb := labels.NewScratchBuilder(8)
	for r.Len() > 0 {
		ms, err := decodeSeries(r, &sb)
		if err != nil {
			return fmt.Errorf("read store snapshot: %w", err)
		}
		if err := s.restore(ms); err != nil {
			return fmt.Errorf("read store snapshot: %w", err)
		}
	}
	return nil
}

func decodeSeries(r *bytes.Reader, sb *labels.ScratchBuilder) (*memSeries, error) {
	readBytes := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		if n > uint64(r.Len()) {
			return nil, io.ErrUnexpectedEOF
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	sb.Reset()
	for range n {
		name, err := readBytes()
		if err != nil {
			return nil, err
		}
		val, err := readBytes()
		if err != nil {
			return nil, err
		}
		sb.Add(string(name), string(val))
	}
	sb.Sort()
	ms := &memSeries{lset: sb.Labels()}
	ms.hash = ms.lset.Hash()
	if ms.lastT, err = binary.ReadVarint(r); err != nil {
		return nil, err
	}
	var bits uint64
	if err := binary.Read(r, binary.BigEndian, &bits); err != nil {
		return nil, err
	}
	ms.lastV = math.Float64frombits(bits)
	nc, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if nc == 0 {
		return nil, errors.New("series without chunks")
	}
	for range nc {
		var c closedChunk
		if c.minT, err = binary.ReadVarint(r); err != nil {
			return nil, err
		}
		if c.maxT, err = binary.ReadVarint(r); err != nil {
			return nil, err
		}
		if c.data, err = readBytes(); err != nil {
			return nil, err
		}
		// Every restored chunk is closed, the old head too: a chunk
		// rebuilt from bytes cannot be appended to (the bit position
		// within its last byte is lost), so the next sample starts a new
		// head chunk.
		ms.chunks = append(ms.chunks, c)
	}
	return ms, nil
}

// restore adds a decoded series, within the series limit.
func (s *Store) restore(ms *memSeries) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookupLocked(ms.lset, ms.hash) != nil {
		return fmt.Errorf("series %s appears twice", ms.lset)
	}
	if int64(s.count) >= s.maxSeries.Load() {
		s.m.rejectedLimit.Inc()
		return nil
	}
	s.nextID++
	ms.id = s.nextID
	s.byHash[ms.hash] = append(s.byHash[ms.hash], ms)
	name := ms.lset.Get(labels.MetricName)
	s.byName[name] = append(s.byName[name], ms)
	s.count++
	for _, c := range ms.chunks {
		s.m.chunkBytes.Add(int64(len(c.data)))
	}
	return nil
}
