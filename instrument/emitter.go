package instrument

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/go-logr/logr"
)

// DefaultBuffer is the number of records an Emitter holds before it drops.
const DefaultBuffer = 1024

// Emitter writes mergelog and span records as structured log records (see
// docs/FORMATS.md) without ever blocking the code that emits them: records go
// to a bounded buffer that Run drains; when the buffer is full a record is
// dropped and counted, and the next time the buffer runs empty a
// "cpid.dropped" record reports how many were lost.
//
// A nil *Emitter discards everything.
type Emitter struct {
	ch chan record
	h  slog.Handler
	// plain marks a logr sink that cannot take slog records (see
	// NewLogrEmitter): groups are passed as maps, which such sinks encode as
	// nested objects where they would flatten a group into dotted keys, and
	// the record's time is added, which they would drop.
	plain bool

	written, dropped, failed atomic.Uint64

	mu       sync.Mutex // serializes writes to h and guards the fields below
	reported uint64     // drops already reported
	lastErr  error
}

// NewEmitter returns an Emitter writing one JSON object per line to w, in the
// format of slog's JSONHandler. buffer <= 0 means DefaultBuffer.
func NewEmitter(w io.Writer, buffer int) *Emitter {
	return NewSlogEmitter(slog.NewJSONHandler(w, nil), buffer)
}

// NewSlogEmitter returns an Emitter writing through h, typically the
// controller's own slog handler, so that records land in its log. Records are
// written at level INFO (drop reports at WARN) whatever h's level.
func NewSlogEmitter(h slog.Handler, buffer int) *Emitter {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Emitter{ch: make(chan record, buffer), h: h}
}

// NewLogrEmitter returns an Emitter writing through l, the controller's own
// logr logger (klog, zapr, controller-runtime). When l's sink takes slog
// records (zapr does, and loggers made by logr.FromSlogHandler), the record's
// time is the logger's timestamp. Otherwise the logger stamps the time it
// writes the record, up to a buffer's drain later, the record's own time is
// added under the key "time", and nested objects ("object", "attrs") are
// passed as maps so that the sink writes them nested.
func NewLogrEmitter(l logr.Logger, buffer int) *Emitter {
	sink := l.GetSink()
	if sink == nil { // logr.Discard()
		return NewSlogEmitter(slog.DiscardHandler, buffer)
	}
	e := NewSlogEmitter(logr.ToSlogHandler(l), buffer)
	_, slogSink := sink.(logr.SlogSink)
	_, slogBacked := sink.(interface{ GetUnderlying() slog.Handler })
	e.plain = !slogSink && !slogBacked
	return e
}

// EmitterStats counts the records of an Emitter.
type EmitterStats struct {
	Written uint64 // records written
	Dropped uint64 // records dropped because the buffer was full
	Failed  uint64 // records the destination returned an error for
}

// Stats returns the counters of e.
func (e *Emitter) Stats() EmitterStats {
	if e == nil {
		return EmitterStats{}
	}
	return EmitterStats{Written: e.written.Load(), Dropped: e.dropped.Load(), Failed: e.failed.Load()}
}

// Run writes records as they come until ctx ends, then flushes what is left
// and returns Flush's error.
func (e *Emitter) Run(ctx context.Context) error {
	if e == nil {
		<-ctx.Done()
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return e.Flush()
		case r := <-e.ch:
			e.mu.Lock()
			e.write(r)
			if len(e.ch) == 0 {
				e.reportDrops()
			}
			e.mu.Unlock()
		}
	}
}

// Flush writes the records buffered when it is called, and a drop report if
// records were dropped. It returns an error if a write failed meanwhile.
func (e *Emitter) Flush() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	failed := e.failed.Load()
	for n := len(e.ch); n > 0; n-- {
		select {
		case r := <-e.ch:
			e.write(r)
		default:
			n = 1
		}
	}
	e.reportDrops()
	if n := e.failed.Load() - failed; n > 0 {
		return fmt.Errorf("write cpid records: %d failed: %w", n, e.lastErr)
	}
	return nil
}

// record is a mergelog or a span waiting in the buffer.
type record struct {
	span bool
	m    Mergelog
	s    spanData
}

func (e *Emitter) emit(r record) {
	if e == nil {
		return
	}
	select {
	case e.ch <- r:
	default:
		e.dropped.Add(1)
	}
}

func (e *Emitter) emitMergelog(m Mergelog) { e.emit(record{m: m}) }

// Messages of the records, fixed per record type.
const (
	MsgMergelog = cpid.MsgMergelog
	MsgSpan     = cpid.MsgSpan
	MsgDropped  = cpid.MsgDropped
)

func (e *Emitter) write(r record) {
	var sr slog.Record
	if r.span {
		sr = r.s.record()
	} else {
		sr = mergelogRecord(r.m)
	}
	e.handle(sr)
}

func (e *Emitter) handle(sr slog.Record) {
	if e.plain {
		sr = plainRecord(sr)
	}
	if err := e.h.Handle(context.Background(), sr); err != nil {
		e.failed.Add(1)
		e.lastErr = err
		return
	}
	e.written.Add(1)
}

func (e *Emitter) reportDrops() {
	d := e.dropped.Load()
	if d == e.reported {
		return
	}
	sr := slog.NewRecord(time.Now(), slog.LevelWarn, MsgDropped, 0)
	sr.AddAttrs(
		slog.Int("cpid.format", Format),
		slog.Uint64("dropped", d-e.reported),
		slog.Uint64("dropped_total", d),
	)
	e.reported = d
	e.handle(sr)
}

func mergelogRecord(m Mergelog) slog.Record {
	sources := make([]string, len(m.Sources))
	for i, s := range m.Sources {
		sources[i] = s.String()
	}
	sr := slog.NewRecord(m.Time, slog.LevelInfo, MsgMergelog, 0)
	sr.AddAttrs(
		slog.Int("cpid.format", Format),
		slog.String("cpid", m.CPID.String()),
		slog.Any("sources", sources),
		slog.String("service", m.Service),
		slog.Group("object",
			slog.String("apiVersion", m.Object.APIVersion),
			slog.String("kind", m.Object.Kind),
			slog.String("resource", m.Object.Resource),
			slog.String("namespace", m.Object.Namespace),
			slog.String("name", m.Object.Name),
			slog.String("uid", string(m.Object.UID)),
		),
	)
	return sr
}

// plainRecord returns r with groups turned into maps and its time added.
func plainRecord(r slog.Record) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindGroup {
			a = slog.Any(a.Key, groupMap(a.Value.Group()))
		}
		out.AddAttrs(a)
		return true
	})
	out.AddAttrs(slog.Time("time", r.Time))
	return out
}

func groupMap(attrs []slog.Attr) map[string]any {
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			m[a.Key] = groupMap(v.Group())
		} else {
			m[a.Key] = v.Any()
		}
	}
	return m
}
