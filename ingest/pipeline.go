package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cpid-dev/cpid"
)

// The decoding pipeline of Ingester.Run. Readers (up to one per core, one
// input file each) split streams into chunks of lines; workers (one per
// core) decode chunks; the collector takes the chunks back in input order,
// so that records are stored, numbered and counted exactly as one reader
// would have done it, and fills the batches the writer stores.
//
//	files -> readers -> chunks -> workers (decode) -> collector (in order) -> batches -> writer
//
// Memory is bounded by the chunks in flight: each reader is at most
// chunkQueue chunks ahead of the collector.

const (
	chunkBytes = 512 << 10 // a chunk holds lines up to about this many bytes
	chunkLines = 2048      // or this many lines
	chunkQueue = 3         // chunks a file's reader may be ahead of the collector
)

// chunk is consecutive lines of one stream.
type chunk struct {
	stream    string
	component string // the program that wrote the stream (Stream.Component)
	buf       []byte
	lines     []chunkLine
	// What the worker made of the lines, in line order.
	audits []cpid.Audit
	logs   []cpid.Log
	bad    []chunkBad
	format Format // of all the lines
	done   chan struct{}
}

// chunkLine is a record of the chunk: buf[off:off+n], or (own) a long line
// held on its own, or a line the reader already found bad. It is one line,
// or several the reader joined (joiner), numbered by the first.
type chunkLine struct {
	off, n int
	own    []byte
	num    int
	bad    string
	ref    yearRef // of a klog text record
	wrap   Format  // the wrappers the reader removed (CRI...), and the format of a record it found bad
	item   int     // k+1 for item k of a record split by the reader (splitLines)
	level  uint8   // of an item: 0 an EventList's, wrapped in a list of one; 1 an array's element (lineInfo)
	count  int     // of a bad line: the bad records it stands for (0: one), a run of {} items
}

type chunkBad struct {
	line   int
	reason string
	count  int // the bad records it stands for (0: one)
}

var chunkPool = sync.Pool{New: func() any { return &chunk{} }}

// A chunk's buffer is not a copy: the records decoded from it keep slices
// of it (bodies, owner references, log fields) instead of a copy of each
// line (measured on a million events: 0.5 s of copying and its garbage).
// It goes back to bufPool once the batches holding its records are
// written (chunkBuf), and is left to the collector when a chunk ends
// otherwise.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

const chunkCap = chunkBytes + 64<<10

func getChunk(s Stream) *chunk {
	c := chunkPool.Get().(*chunk)
	c.stream, c.component = s.Name, s.Component
	c.done = make(chan struct{})
	if p := bufPool.Get().(*[]byte); cap(*p) == chunkCap {
		c.buf = (*p)[:0]
	} else {
		c.buf = make([]byte, 0, chunkCap)
	}
	return c
}

func putChunk(c *chunk) {
	c.buf = nil // chunkBuf's now
	clear(c.lines)
	c.lines = c.lines[:0]
	clear(c.audits)
	c.audits = c.audits[:0]
	clear(c.logs)
	c.logs = c.logs[:0]
	c.bad = c.bad[:0]
	c.format = 0
	chunkPool.Put(c)
}

// chunkBuf is a chunk's buffer while records decoded from it wait to be
// written: the collector holds it, and each batch that took one of them.
// The last to release it gives it back to bufPool.
type chunkBuf struct {
	b    []byte
	refs atomic.Int32
}

// newChunkBuf takes c's buffer, held by the caller.
func newChunkBuf(c *chunk) *chunkBuf {
	cb := &chunkBuf{b: c.buf}
	cb.refs.Store(1)
	return cb
}

func (cb *chunkBuf) release() {
	if cb.refs.Add(-1) == 0 && cap(cb.b) == chunkCap {
		b := cb.b[:0]
		bufPool.Put(&b)
	}
}

// batch is a batch of records and the chunk buffers they are slices of.
// Sinks do not keep the records' bytes past Write (cpid.RecordWriter).
type batch struct {
	cpid.Batch
	bufs []*chunkBuf
}

// hold records that the batch has records of cb.
func (b *batch) hold(cb *chunkBuf) {
	if n := len(b.bufs); n == 0 || b.bufs[n-1] != cb {
		cb.refs.Add(1)
		b.bufs = append(b.bufs, cb)
	}
}

// reset empties the batch once written, and releases its buffers.
func (b *batch) reset() {
	b.Reset()
	for _, cb := range b.bufs {
		cb.release()
	}
	clear(b.bufs)
	b.bufs = b.bufs[:0]
}

// decode decodes the chunk's lines; it runs on a worker.
func (c *chunk) decode(red *Redaction) {
	defer close(c.done)
	for _, l := range c.lines {
		if l.bad != "" {
			c.bad = append(c.bad, chunkBad{l.num, l.bad, l.count})
			if l.wrap&^(FormatCRI|FormatTimestamped|FormatDocument) == 0 {
				l.wrap |= FormatOther // too long, binary: nothing read of it
			}
			c.format |= l.wrap
			continue
		}
		line := l.own
		if line == nil {
			line = c.buf[l.off : l.off+l.n]
		}
		// The line is the decoder's to keep: a long one held on its own,
		// or the chunk's buffer, reused only once the records decoded
		// from it are written (chunkBuf).
		audits, logs, f, err := decodeAt(line, lineInfo{ref: l.ref, component: c.component, level: l.level}, red, true)
		c.format |= f | l.wrap
		if err != nil {
			reason := err.Error()
			switch {
			case l.item > 0 && l.level == 1:
				reason = fmt.Sprintf("element %d: %v", l.item-1, err)
			case l.item > 0:
				reason = fmt.Sprintf("item %d: %v", l.item-1, itemError(err))
			}
			c.bad = append(c.bad, chunkBad{line: l.num, reason: reason})
			continue
		}
		pos := cpid.Pos{File: c.stream, Line: l.num}
		for i := range audits {
			c.audits = append(c.audits, cpid.Audit{AuditEvent: audits[i], Pos: pos})
		}
		for i := range logs {
			c.logs = append(c.logs, cpid.Log{LogRecord: logs[i], Pos: pos})
		}
	}
}

// listSplitMin is the size from which a record that holds many (an
// EventList, or an array of envelopes) is split into them (splitLines); a
// smaller one is decoded whole.
const listSplitMin = 4 << 10

// splitLines adds each item of the record p to the chunk *c (through add)
// as a line of its own when p is an EventList (each item wrapped in a list
// of one) or a JSON array (each element decoded as an element of an array
// of envelopes), and reports whether it was. A record decoded whole holds
// every event it has at once (a million {} items took 1.8 GB); split, its
// items flow through the chunks like lines, in bounded memory, and a bad
// item is a bad item (reported as "item k: ..." or "element k: ..." at
// the record's line), not a bad record. A run of {} items is one bad line
// that counts them all: each on its own cost 1.5 µs, mostly garbage (20M
// items: 31 s, then 3 s).
func splitLines(p piece, add func(chunkLine) error, c **chunk) (bool, error) {
	array := isArray(p.b)
	list := !array && isList(p.b)
	if !list && !array {
		return false, nil
	}
	name, wrap, level := "element", p.wrap, uint8(1)
	var emptyErr error
	if list {
		name, wrap, level, emptyErr = "item", p.wrap|FormatEventList, 0, errEventless
	} else {
		emptyErr = arrayEmptyError()
	}
	empty, from := 0, 0
	flush := func() error {
		if empty == 0 {
			return nil
		}
		reason := fmt.Sprintf("%s %d: %v", name, from, emptyErr)
		if empty > 1 {
			reason = fmt.Sprintf("%ss %d to %d (%d %ss): %v", name, from, from+empty-1, empty, name, emptyErr)
		}
		err := add(chunkLine{num: p.num, bad: reason, wrap: wrap, count: empty})
		empty = 0
		return err
	}
	each := func(k int, item []byte) error {
		if isEmptyObject(item) {
			if empty == 0 {
				from = k
			}
			empty++
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if len(item) == 0 {
			return add(chunkLine{num: p.num, bad: fmt.Sprintf("%s %d: invalid JSON: empty %s", name, k, name), wrap: wrap})
		}
		cc := *c
		off := len(cc.buf)
		if list {
			cc.buf = append(append(append(cc.buf, listPrefix...), item...), listSuffix...)
		} else {
			cc.buf = append(cc.buf, item...)
		}
		return add(chunkLine{off: off, n: len(cc.buf) - off, num: p.num, ref: p.ref, wrap: p.wrap, item: k + 1, level: level})
	}
	var split bool
	var err error
	if list {
		split, err = eventListItems(p.b, each)
	} else {
		split, err = arrayElems(p.b, each)
	}
	if err == nil {
		err = flush()
	}
	return split, err
}

// isList is the cheap test of a record that may be an EventList: it names
// its kind. One whose kind is written with escapes is decoded whole.
func isList(b []byte) bool { return bytes.Contains(b, []byte("EventList")) }

// isArray reports whether the record is a JSON array.
func isArray(b []byte) bool {
	b = trimSpace(b)
	return len(b) > 0 && b[0] == '['
}

// arrayEmptyError is what decoding {} as an element of an array says.
var arrayEmptyError = sync.OnceValue(func() error {
	_, _, _, err := decodeAt([]byte("{}"), lineInfo{level: 1}, DefaultRedaction, false)
	return err
})

// fileJob is one input file on its way through the pipeline: its chunks in
// order, and once they are all sent, how its reading ended.
type fileJob struct {
	name   string
	input  string // the path given to Run
	chunks chan *chunk
	lines  atomic.Int64
	err    error // set before chunks is closed
}

// splitStream reads the lines of one stream into chunks, sending each to
// the workers and to the file's ordered queue. Lines that cannot be decoded
// at all (too long, binary, a broken CRI sequence) are marked bad here.
// Records that span lines (a multi-line klog text record, a JSON document
// printed over many lines) are joined here, before chunking (joiner).
func splitStream(ctx context.Context, s Stream, lim Limits, job *fileJob, work chan<- *chunk, decoded *atomic.Int64) error {
	lr := newLineReader(s.R, lim.MaxLine)
	var cri CRI
	j := joiner{max: lim.MaxLine}
	if s.ModTime.Year() >= 2000 { // not a reproducible archive's mtime 0
		j.ref = yearRef{ns: s.ModTime.UnixNano()}
	}
	c := getChunk(s)
	send := func() error {
		if len(c.lines) == 0 {
			return nil
		}
		select {
		case work <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case job.chunks <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		c = getChunk(s)
		return nil
	}
	add := func(l chunkLine) error {
		c.lines = append(c.lines, l)
		if len(c.buf) >= chunkBytes || len(c.lines) >= chunkLines || l.own != nil {
			return send()
		}
		return nil
	}
	// whole adds the record p as one line; own is a long line, passed
	// through, that the reader will not reuse: no copy of it.
	whole := func(p piece, own bool) error {
		if own && p.pass && len(p.b) > 0 {
			return add(chunkLine{num: p.num, own: p.b, wrap: p.wrap})
		}
		off := len(c.buf)
		c.buf = append(c.buf, p.b...)
		return add(chunkLine{off: off, n: len(p.b), num: p.num, ref: p.ref, wrap: p.wrap})
	}
	// put adds what the joiner completed (see whole for own).
	put := func(own bool) error {
		for _, p := range j.out {
			var err error
			switch {
			case p.bad != "":
				err = add(chunkLine{num: p.num, bad: p.bad, wrap: p.wrap})
			case len(p.b) >= listSplitMin:
				var split bool
				if split, err = splitLines(p, add, &c); !split && err == nil {
					err = whole(p, own)
				}
			default:
				err = whole(p, own)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// bad adds a line the reader found bad, after the record open before it.
	bad := func(num int, reason string) error {
		j.interrupt()
		if err := put(false); err != nil {
			return err
		}
		return add(chunkLine{num: num, bad: reason})
	}
	for {
		read := lr.read
		raw, n, err := lr.next()
		// What the stream gave, skipped lines too: progress reports it as
		// the bytes decoded.
		decoded.Add(lr.read - read)
		if err == io.EOF {
			break
		}
		var tooLong errLineTooLong
		if errors.As(err, &tooLong) {
			job.lines.Add(1)
			if err := bad(n, err.Error()); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			j.end()
			if perr := put(false); perr != nil {
				return perr
			}
			if serr := send(); serr != nil {
				return serr
			}
			return err
		}
		job.lines.Add(1)
		if bytes.IndexByte(raw, 0) >= 0 {
			if err := bad(n, errBinary); err != nil {
				return err
			}
			continue
		}
		owned := lr.owned(raw)
		line, ok, err := cri.Feed(raw)
		switch {
		case err != nil:
			err = bad(n, err.Error())
		case !ok:
			continue // a CRI partial: the rest follows
		default:
			var m lineMeta
			same := len(line) == len(raw) && (len(line) == 0 || &line[0] == &raw[0])
			line, m = wrapMeta(raw, line, j.klogNum > 0)
			j.push(line, n, m)
			err = put(owned && same)
		}
		if err != nil {
			return err
		}
	}
	if err := cri.End(); err != nil {
		if err := bad(lr.line, err.Error()); err != nil {
			return err
		}
	}
	j.end()
	if err := put(false); err != nil {
		return err
	}
	if len(c.lines) > 0 && len(c.buf) < chunkCap/8 {
		// The stream's last chunk, mostly empty, takes a buffer of its
		// size: its buffer is held until the batches of its records are
		// written, and a bundle of many small members would hold 576 KiB
		// for each.
		small := append([]byte(nil), c.buf...)
		b := c.buf[:0]
		bufPool.Put(&b)
		c.buf = small
	}
	if err := send(); err != nil {
		return err
	}
	// The last chunk is empty: its buffer goes back too, so that a
	// stream of no line (an empty bundle member) costs no new one.
	b := c.buf[:0]
	bufPool.Put(&b)
	putChunk(c)
	return nil
}
