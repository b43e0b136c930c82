package reconstruct

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"strings"
)

// spill holds what an engine evicted from memory (objects it has not met
// for a while, and the uids that find them), in a temporary file removed as
// soon as it is created, so that nothing is left behind, even by a killed
// run. An entry is read back, and taken out of the spill, when the engine
// meets it again; those still spilled when the run ends are saved with the
// others (MarshalState). The engine's memory is so bounded by the objects it
// still uses, not by every object a run met.
//
// A record is a header (the lengths of the key, the uid and the data) and
// those three, written at the end of the file; the index holds, by the hash
// of its key, the offset of each record still spilled, and by the key those
// whose hash another key's record holds already.
type spill struct {
	f    *os.File
	end  int64
	seed maphash.Seed
	at   map[uint64]int64
	// clash holds the keys whose hash another spilled key has.
	clash map[string]int64
	// pending is what put was given and did not write yet; wrote is what
	// it wrote after end since the last flush, werr why it could not, and
	// pendKeys are the keys and offsets of those records, indexed once
	// flush has written them all.
	pending  []byte
	wrote    int64
	werr     error
	pendKeys []spilled
	buf      []byte
}

// spillChunk is how much put holds before it writes.
const spillChunk = 1 << 20

type spilled struct {
	key string
	off int64
}

const spillHeader = 12 // data length, key length and uid length: uint32 each

// newSpill creates the spill's file in dir ("" the system's temporary
// directory) and removes its name at once.
func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "cpid-reconstruct-*.spill")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &spill{f: f, seed: maphash.MakeSeed(), at: map[uint64]int64{}, clash: map[string]int64{}}, nil
}

// Len is how many entries are spilled.
func (s *spill) Len() int { return len(s.at) + len(s.clash) }

func (s *spill) hash(key string) uint64 { return maphash.String(s.seed, key) }

// put spills an entry; the key must not be spilled already (an entry read
// back is taken out). It is written, and found, once flush returns.
func (s *spill) put(key, uid string, data []byte) {
	off := s.end + s.wrote + int64(len(s.pending))
	s.pending = binary.LittleEndian.AppendUint32(s.pending, uint32(len(data)))
	s.pending = binary.LittleEndian.AppendUint32(s.pending, uint32(len(key)))
	s.pending = binary.LittleEndian.AppendUint32(s.pending, uint32(len(uid)))
	s.pending = append(s.pending, key...)
	s.pending = append(s.pending, uid...)
	s.pending = append(s.pending, data...)
	s.pendKeys = append(s.pendKeys, spilled{key, off})
	if len(s.pending) >= spillChunk {
		s.write()
	}
}

// write writes what put holds.
func (s *spill) write() {
	if s.werr == nil {
		if _, err := s.f.WriteAt(s.pending, s.end+s.wrote); err != nil {
			s.werr = err
		}
		s.wrote += int64(len(s.pending))
	}
	s.pending = s.pending[:0]
}

// flush writes what put was given since the last flush, and indexes it.
// When it cannot, none of it is spilled.
func (s *spill) flush() error {
	if len(s.pendKeys) == 0 {
		return nil
	}
	s.write()
	err := s.werr
	if err == nil {
		s.end += s.wrote
		for _, p := range s.pendKeys {
			h := s.hash(p.key)
			if _, ok := s.at[h]; ok {
				s.clash[p.key] = p.off
			} else {
				s.at[h] = p.off
			}
		}
	}
	s.discard() // indexed or refused: put starts afresh
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// discard drops what put was given since the last flush: none of it is
// spilled.
func (s *spill) discard() {
	s.pending = s.pending[:0]
	clear(s.pendKeys)
	s.pendKeys, s.wrote, s.werr = s.pendKeys[:0], 0, nil
}

// record reads the record at off: its key, uid and data, valid until the
// next read.
func (s *spill) record(off int64) (key, uid string, data []byte, err error) {
	var h [spillHeader]byte
	if _, err := s.f.ReadAt(h[:], off); err != nil {
		return "", "", nil, fmt.Errorf("spill: read at %d: %w", off, err)
	}
	nd, nk, nu := binary.LittleEndian.Uint32(h[0:]), binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
	n := int(nk + nu + nd)
	s.buf = slices.Grow(s.buf[:0], n)[:n]
	if _, err := s.f.ReadAt(s.buf, off+spillHeader); err != nil && !(err == io.EOF && off+spillHeader+int64(n) <= s.end) {
		return "", "", nil, fmt.Errorf("spill: read at %d: %w", off, err)
	}
	return string(s.buf[:nk]), string(s.buf[nk : nk+nu]), s.buf[nk+nu:], nil
}

// take reads back the entry of key and takes it out of the spill: found is
// false when it is not spilled. The data is valid until the next read.
func (s *spill) take(key string) (data []byte, found bool, err error) {
	if s.Len() == 0 {
		return nil, false, nil
	}
	if err := s.flush(); err != nil {
		return nil, false, err
	}
	if off, ok := s.clash[key]; ok {
		_, _, data, err := s.record(off)
		if err != nil {
			return nil, false, err
		}
		delete(s.clash, key)
		return data, true, nil
	}
	h := s.hash(key)
	off, ok := s.at[h]
	if !ok {
		return nil, false, nil
	}
	k, _, data, err := s.record(off)
	if err != nil || k != key {
		return nil, false, err
	}
	delete(s.at, h)
	return data, true, nil
}

// each hands fn every entry still spilled whose key begins with prefix, in
// the order they were spilled.
func (s *spill) each(prefix string, fn func(key, uid string, data []byte) error) error {
	if err := s.flush(); err != nil {
		return err
	}
	offs := make([]int64, 0, s.Len())
	for _, off := range s.at {
		offs = append(offs, off)
	}
	for _, off := range s.clash {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	for _, off := range offs {
		key, uid, data, err := s.record(off)
		if err != nil {
			return err
		}
		if strings.HasPrefix(key, prefix) {
			if err := fn(key, uid, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close removes the spill.
func (s *spill) Close() error { return s.f.Close() }
