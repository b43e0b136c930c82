package blocks

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// store is a cluster's blocks as an engine keeps them, compressed.
type store struct {
	data [][]byte
	lens []int
}

func (s *store) open(t *testing.T) *Block {
	if len(s.data) == 0 || !Open(int64(s.lens[len(s.lens)-1])) {
		return nil
	}
	id := len(s.data)
	raw, err := Decompress(nil, s.data[id-1], int64(s.lens[id-1]))
	if err != nil {
		t.Fatal(err)
	}
	return &Block{ID: int64(id), Raw: raw}
}

func (s *store) write(bs []*Block) {
	for _, b := range bs {
		if b.ID == 0 {
			s.data = append(s.data, nil)
			s.lens = append(s.lens, 0)
			b.ID = int64(len(s.data))
		}
		s.data[b.ID-1] = Compress(nil, b.Raw)
		s.lens[b.ID-1] = len(b.Raw)
	}
}

func bodies(n int, r *rand.Rand) []Body {
	var out []Body
	for i := range n {
		b := Body{EventID: int64(i + 1)}
		mk := func() []byte {
			switch r.IntN(6) {
			case 0:
				return nil
			case 1:
				return bytes.Repeat([]byte("x"), Size+r.IntN(1000)) // larger than a block
			default:
				return fmt.Appendf(nil, `{"kind":"Pod","metadata":{"name":"p-%d","resourceVersion":"%d"},"pad":%q}`,
					r.IntN(50), r.IntN(1e6), bytes.Repeat([]byte("a"), r.IntN(20000)))
			}
		}
		b.Request, b.Response, b.Status = mk(), mk(), mk()
		out = append(out, b)
	}
	return out
}

// TestPackAnyBatching: whatever the batches bodies are stored in, every
// body reads back as it was, no block but one holding a larger body goes
// past Size, and the blocks are the same as for one batch: their content
// depends only on the sequence of bodies (an ingest run again after a crash
// ends with the database of a run that did not crash).
func TestPackAnyBatching(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := bodies(400, r)
	var ref store
	one, refs := Pack(nil, all)
	ref.write(one)
	check := func(s *store, refs []Ref, bs []*Block) {
		for _, x := range refs {
			b := all[x.EventID-1]
			raw := bs[x.Block].Raw
			for j, want := range [3][]byte{b.Request, b.Response, b.Status} {
				got := Part(raw, int64(x.Off), [3]int64{int64(x.Len[0]), int64(x.Len[1]), int64(x.Len[2])}, j)
				if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("event %d part %d: %d bytes back, want %d", x.EventID, j, len(got), len(want))
				}
			}
		}
	}
	check(&ref, refs, one)
	for i, n := range ref.lens {
		if n > Size && i > 0 {
			// Only a body larger than Size makes a larger block, alone.
			if n-Size > 3*Size {
				t.Errorf("block %d: %d bytes", i+1, n)
			}
		}
	}
	for trial := range 5 {
		var s store
		for i := 0; i < len(all); {
			j := min(len(all), i+1+r.IntN(30))
			bs, refs := Pack(s.open(t), all[i:j])
			check(&s, refs, bs)
			s.write(bs)
			i = j
		}
		if len(s.data) != len(ref.data) {
			t.Fatalf("trial %d: %d blocks, %d in one batch", trial, len(s.data), len(ref.data))
		}
		for i := range s.data {
			if !bytes.Equal(s.data[i], ref.data[i]) {
				t.Fatalf("trial %d: block %d differs from one batch's", trial, i+1)
			}
		}
	}
}

// TestCacheAndCorruption: a cached block is the same content; a block that
// does not decompress to its size is an error, not a wrong body.
func TestCacheAndCorruption(t *testing.T) {
	raw := bytes.Repeat([]byte(`{"a":1}`), 1000)
	data := Compress(nil, raw)
	c := NewCache(2)
	for range 3 {
		got, err := c.Raw(data)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("cache: %v", err)
		}
	}
	if _, err := Decompress(nil, data, int64(len(raw)+1)); err == nil {
		t.Error("a wrong size was accepted")
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 0xff
	if _, err := c.Raw(bad); err == nil {
		t.Error("a corrupt block decompressed")
	}
}
