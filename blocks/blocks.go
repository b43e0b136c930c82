// Package blocks packs audit bodies into compressed blocks: the bodies of
// consecutive events are appended to one block of about Size bytes, so that
// the compressor sees the repetition between revisions of one object and
// between objects of one kind (about 40x with zstd on real bundles, against
// 3-5x for each body on its own: docs/BENCHMARKS.notes.md). A body is a
// range of its block's decompressed content; reading one decompresses one
// block (about 50 µs for 256 KiB).
//
// The last block of each kind of a cluster stays open: the next transaction appends to it
// and writes it again, so blocks fill up whatever the size of the batches
// (a tailer commits a few events at a time) and their content depends only
// on the sequence of bodies stored, not on how they were batched.
package blocks

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/cpid-dev/cpid"
)

// Size is the decompressed size after which a block is sealed: the next
// body goes to a new block. A body larger than Size has a block of its own.
const Size = 256 << 10

// Body is the bodies of one audit event; nil is absent (NULL).
type Body struct {
	EventID                   int64
	Kind                      string // KindWrite or KindOther: the blocks it goes to
	Request, Response, Status []byte
}

// The kinds of blocks. A cluster's bodies of writes and of everything else
// (gets, lists, watches...) go to blocks of their own, so that a reader of
// writes (reconstruct, an object's revisions) decompresses no list response.
const (
	KindWrite = "write"
	KindOther = "other"
)

// Kinds are the kinds of blocks, in the order a transaction stores them.
var Kinds = []string{KindWrite, KindOther}

// KindOf is the kind of block for the bodies of an event of verb.
func KindOf(verb string) string {
	if cpid.IsWrite(verb) {
		return KindWrite
	}
	return KindOther
}

// OfKind returns the bodies of kind, in order.
func OfKind(bodies []Body, kind string) []Body {
	var out []Body
	for _, b := range bodies {
		if b.Kind == kind {
			out = append(out, b)
		}
	}
	return out
}

// Empty reports whether the event has no body at all.
func (b *Body) Empty() bool { return b.Request == nil && b.Response == nil && b.Status == nil }

// Block is a block's decompressed content. ID is 0 for a block not stored yet.
type Block struct {
	ID  int64
	Raw []byte
}

// Ref places an event's bodies in a block: Request at Off, Response after
// it, Status after that; a length of -1 is an absent body.
type Ref struct {
	EventID int64
	Block   int // index into the blocks Pack returned
	Off     int
	Len     [3]int
}

// Pack appends bodies to open (the cluster's last block, nil when it has
// none or it is full) and returns the blocks to store, in order (the first is
// open, grown, when it took any body; its ID is kept so that it is updated),
// and where each event's bodies are. Events with no body get no Ref.
func Pack(open *Block, bodies []Body) (blocks []*Block, refs []Ref) {
	cur := open
	used := false
	for i := range bodies {
		b := &bodies[i]
		if b.Empty() {
			continue
		}
		n := len(b.Request) + len(b.Response) + len(b.Status)
		if cur == nil || (len(cur.Raw) > 0 && len(cur.Raw)+n > Size) {
			cur = &Block{Raw: newRaw(n)}
			used = false
		}
		if !used {
			blocks = append(blocks, cur)
			used = true
		}
		r := Ref{EventID: b.EventID, Block: len(blocks) - 1, Off: len(cur.Raw)}
		for j, part := range [3][]byte{b.Request, b.Response, b.Status} {
			r.Len[j] = -1
			if part != nil {
				r.Len[j] = len(part)
				cur.Raw = append(cur.Raw, part...)
			}
		}
		refs = append(refs, r)
	}
	return blocks, refs
}

// rawPool keeps the buffers of blocks stored and sealed, for the next
// ones: a new buffer is zeroed by Go, 256 KiB at a time (measured: 0.2 s
// of CPU on a million events).
var rawPool = sync.Pool{New: func() any { return new([]byte) }}

// newRaw returns an empty buffer for a block's content, with room for n
// bytes and at least Size.
func newRaw(n int) []byte {
	if n <= Size {
		if p := rawPool.Get().(*[]byte); cap(*p) >= Size {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, max(Size, n))
}

// recycle gives a block's buffer back for newRaw, once nothing reads it.
func recycle(raw []byte) {
	if cap(raw) == Size {
		raw = raw[:0]
		rawPool.Put(&raw)
	}
}

// Open reports whether a block of n decompressed bytes still takes bodies.
func Open(n int64) bool { return n < Size }

// Part returns the body of ref's part (0 request, 1 response, 2 status)
// from its block's content; nil when absent or out of range.
func Part(raw []byte, off int64, lens [3]int64, part int) []byte {
	for j := 0; j < part; j++ {
		if lens[j] > 0 {
			off += lens[j]
		}
	}
	n := lens[part]
	if n < 0 || off < 0 || off+n > int64(len(raw)) {
		return nil
	}
	return raw[off : off+n]
}

var (
	encOnce sync.Once
	enc     *zstd.Encoder
	dec     *zstd.Decoder
	encErr  error
)

func codecs() error {
	encOnce.Do(func() {
		// The fastest level: measured on the real fixtures, blocks of 256 KiB
		// compress 43x at it and 46x at the default level, which takes
		// longer; dictionaries add little to blocks this size.
		// A window of 1 MiB: a block is 256 KiB but for a larger body,
		// and the default (8 MiB at this level) only costs memory.
		enc, encErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true), zstd.WithWindowSize(1<<20))
		if encErr != nil {
			return
		}
		dec, encErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxRaw))
	})
	return encErr
}

// MaxRaw bounds a block's decompressed size when it is read back (a body is
// at most what ingest accepts as a line).
const MaxRaw = 1 << 30

// Compress returns raw as one zstd frame, appended to dst. It is safe for
// concurrent use.
func Compress(dst, raw []byte) []byte {
	if err := codecs(); err != nil {
		panic(err) // the options are constant: only a bug fails here
	}
	return enc.EncodeAll(raw, dst)
}

// ErrCorrupt is the error of a block that does not decompress to its size.
var ErrCorrupt = errors.New("corrupt body block")

// Decompress returns the content of a zstd block of rawLen bytes (rawLen < 0:
// unknown), appended to dst. It is safe for concurrent use.
func Decompress(dst, data []byte, rawLen int64) ([]byte, error) {
	if err := codecs(); err != nil {
		return nil, err
	}
	n := len(dst)
	out, err := dec.DecodeAll(data, dst)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if rawLen >= 0 && int64(len(out)-n) != rawLen {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrCorrupt, len(out)-n, rawLen)
	}
	return out, nil
}

// Cache keeps the content of the blocks read last, keyed by a hash of their
// compressed bytes (a SQL function sees only those). It is safe for
// concurrent use.
type Cache struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries []cacheEntry // most recent last
	max     int
}

type cacheEntry struct {
	key     uint64
	dataLen int
	raw     []byte
}

// NewCache returns a cache of n blocks.
func NewCache(n int) *Cache { return &Cache{seed: maphash.MakeSeed(), max: n} }

// Raw returns the content of the block whose compressed bytes are data.
// The slice is shared: do not modify it.
func (c *Cache) Raw(data []byte) ([]byte, error) {
	key := maphash.Bytes(c.seed, data)
	c.mu.Lock()
	for i := len(c.entries) - 1; i >= 0; i-- {
		if e := c.entries[i]; e.key == key && e.dataLen == len(data) {
			if i != len(c.entries)-1 {
				copy(c.entries[i:], c.entries[i+1:])
				c.entries[len(c.entries)-1] = e
			}
			c.mu.Unlock()
			return e.raw, nil
		}
	}
	c.mu.Unlock()
	raw, err := Decompress(nil, data, -1)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.entries) >= c.max {
		copy(c.entries, c.entries[1:])
		c.entries = c.entries[:len(c.entries)-1]
	}
	c.entries = append(c.entries, cacheEntry{key: key, dataLen: len(data), raw: raw})
	c.mu.Unlock()
	return raw, nil
}

// NewBody is the bodies of event id, of verb, as the audit event carried
// them: an empty or JSON null body is absent, as it was stored before
// blocks.
func NewBody(id int64, verb string, request, response, status []byte) Body {
	return Body{EventID: id, Kind: KindOf(verb), Request: present(request), Response: present(response), Status: present(status)}
}

func present(b []byte) []byte {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}
