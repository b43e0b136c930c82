package instrument

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Span is one step of processing in a controller (the paper's Table 3): the
// CPID of the change that caused it, start and end, service, span ID and
// parent span ID, plus a name and attributes. It is written when it ends.
//
// All methods are safe on a nil *Span, which does nothing.
type Span struct {
	t  *Tracer
	mu sync.Mutex
	d  spanData
	ok bool // ended
}

type spanData struct {
	CPID, ID, Parent ID
	Service, Name    string
	Start, End       time.Time
	Attrs            []slog.Attr
}

type spanKey struct{}

// StartSpan starts a span named name and returns it with a copy of ctx that
// carries it. The span's CPID is that of ctx's trace context, or its parent's
// when ctx has none. The parent is the span ctx carries: a reconcile's first
// span has none, as the paper prescribes, and spans started from its context
// are its children.
func (t *Tracer) StartSpan(ctx context.Context, name string, attrs ...slog.Attr) (context.Context, *Span) {
	s := &Span{t: t, d: spanData{ID: t.newID(), Service: t.service, Name: name, Start: t.now()}}
	s.SetAttributes(attrs...)
	parent := SpanFromContext(ctx)
	if parent != nil {
		s.d.Parent = parent.ID()
		s.d.CPID = parent.CPID()
	}
	if c, ok := FromContext(ctx); ok {
		s.d.CPID = c.CPID
	}
	return context.WithValue(ctx, spanKey{}, s), s
}

// SpanFromContext returns the span ctx carries, or nil.
func SpanFromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// ID returns the span's ID.
func (s *Span) ID() ID {
	if s == nil {
		return ID{}
	}
	return s.d.ID // immutable after StartSpan
}

// CPID returns the CPID the span is recorded under.
func (s *Span) CPID() ID {
	if s == nil {
		return ID{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.CPID
}

// SetCPID changes the CPID the span is recorded under, for a span started
// before the change it serves was known, such as a reconcile that merges.
func (s *Span) SetCPID(id ID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.CPID = id
}

// SetAttributes sets attributes of the span, replacing earlier values of the
// same keys.
func (s *Span) SetAttributes(attrs ...slog.Attr) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for _, a := range attrs {
		for i := range s.d.Attrs {
			if s.d.Attrs[i].Key == a.Key {
				s.d.Attrs[i] = a
				continue next
			}
		}
		s.d.Attrs = append(s.d.Attrs, a)
	}
}

// End ends the span and emits it. Only the first call has an effect.
func (s *Span) End() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ok {
		s.mu.Unlock()
		return
	}
	s.ok = true
	s.d.End = s.t.now()
	d := s.d
	s.mu.Unlock()
	s.t.out.emit(record{span: true, s: d})
}

func (d *spanData) record() slog.Record {
	sr := slog.NewRecord(d.End, slog.LevelInfo, MsgSpan, 0)
	sr.AddAttrs(
		slog.Int("cpid.format", Format),
		slog.String("cpid", d.CPID.String()),
		slog.String("span_id", d.ID.String()),
		slog.String("parent_id", d.Parent.String()),
		slog.String("service", d.Service),
		slog.String("name", d.Name),
		slog.Time("start", d.Start),
		slog.Time("end", d.End),
	)
	if len(d.Attrs) > 0 {
		sr.AddAttrs(slog.Attr{Key: "attrs", Value: slog.GroupValue(d.Attrs...)})
	}
	return sr
}
