package ingest

import (
	"bytes"
	"context"
	"errors"
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
	stream string
	buf    []byte
	lines  []chunkLine
	// What the worker made of the lines, in line order.
	audits []cpid.Audit
	logs   []cpid.Log
	bad    []chunkBad
	done   chan struct{}
}

// chunkLine is a line of the chunk: buf[off:off+n], or (own) a long line
// held on its own, or a line the reader already found bad.
type chunkLine struct {
	off, n int
	own    []byte
	num    int
	bad    string
}

type chunkBad struct {
	line   int
	reason string
}

var chunkPool = sync.Pool{New: func() any { return &chunk{buf: make([]byte, 0, chunkBytes+64<<10)} }}

func getChunk(stream string) *chunk {
	c := chunkPool.Get().(*chunk)
	c.stream = stream
	c.done = make(chan struct{})
	return c
}

func putChunk(c *chunk) {
	if cap(c.buf) > 4*chunkBytes {
		return // a chunk that held a long line: let it go
	}
	c.buf = c.buf[:0]
	clear(c.lines)
	c.lines = c.lines[:0]
	clear(c.audits)
	c.audits = c.audits[:0]
	clear(c.logs)
	c.logs = c.logs[:0]
	c.bad = c.bad[:0]
	chunkPool.Put(c)
}

// decode decodes the chunk's lines; it runs on a worker.
func (c *chunk) decode(red *Redaction) {
	defer close(c.done)
	for _, l := range c.lines {
		if l.bad != "" {
			c.bad = append(c.bad, chunkBad{l.num, l.bad})
			continue
		}
		line := l.own
		if line == nil {
			line = c.buf[l.off : l.off+l.n]
		}
		audits, rec, err := decodeLine(line, red, l.own != nil)
		if err != nil {
			c.bad = append(c.bad, chunkBad{l.num, err.Error()})
			continue
		}
		pos := cpid.Pos{File: c.stream, Line: l.num}
		for i := range audits {
			c.audits = append(c.audits, cpid.Audit{AuditEvent: audits[i], Pos: pos})
		}
		if rec != nil {
			c.logs = append(c.logs, cpid.Log{LogRecord: *rec, Pos: pos})
		}
	}
}

// fileJob is one input file on its way through the pipeline: its chunks in
// order, and once they are all sent, how its reading ended.
type fileJob struct {
	name   string
	chunks chan *chunk
	lines  atomic.Int64
	err    error // set before chunks is closed
}

// splitStream reads the lines of one stream into chunks, sending each to
// the workers and to the file's ordered queue. Lines that cannot be decoded
// at all (too long, binary, a broken CRI sequence) are marked bad here.
func splitStream(ctx context.Context, s Stream, lim Limits, job *fileJob, work chan<- *chunk, decoded *atomic.Int64) error {
	lr := newLineReader(s.R, lim.MaxLine)
	var cri CRI
	c := getChunk(s.Name)
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
		c = getChunk(s.Name)
		return nil
	}
	add := func(l chunkLine) error {
		c.lines = append(c.lines, l)
		if len(c.buf) >= chunkBytes || len(c.lines) >= chunkLines || l.own != nil {
			return send()
		}
		return nil
	}
	for {
		raw, n, err := lr.next()
		if err == io.EOF {
			break
		}
		var tooLong errLineTooLong
		if errors.As(err, &tooLong) {
			job.lines.Add(1)
			if err := add(chunkLine{num: n, bad: err.Error()}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			if serr := send(); serr != nil {
				return serr
			}
			return err
		}
		job.lines.Add(1)
		decoded.Add(int64(len(raw)) + 1)
		if bytes.IndexByte(raw, 0) >= 0 {
			if err := add(chunkLine{num: n, bad: errBinary}); err != nil {
				return err
			}
			continue
		}
		owned := lr.owned(raw)
		line, ok, err := cri.Feed(raw)
		switch {
		case err != nil:
			err = add(chunkLine{num: n, bad: err.Error()})
		case !ok:
			continue // a CRI partial: the rest follows
		case owned && len(line) > 0 && len(line) == len(raw) && &line[0] == &raw[0]:
			// A long line the reader will not reuse: no copy of it.
			err = add(chunkLine{num: n, own: line})
		default:
			off := len(c.buf)
			c.buf = append(c.buf, line...)
			err = add(chunkLine{off: off, n: len(line), num: n})
		}
		if err != nil {
			return err
		}
	}
	if err := cri.End(); err != nil {
		if err := add(chunkLine{num: lr.line, bad: err.Error()}); err != nil {
			return err
		}
	}
	if err := send(); err != nil {
		return err
	}
	putChunk(c) // the last, empty one
	return nil
}
