package instrument

import (
	"context"
	"log/slog"

	"github.com/cpid-dev/cpid"
	"github.com/go-logr/logr"
)

// Keys the log helpers add to every line written with a traced context.
const (
	LogKeyCPID   = cpid.LogKeyCPID
	LogKeySpanID = cpid.LogKeySpanID
)

// NewLogHandler wraps h so that every record handled with a context that
// carries a trace context gets the key "cpid" (and "span_id" when the context
// carries a span), at the top level of the record even inside groups opened
// with WithGroup. Use the context-taking methods: logger.InfoContext(ctx, ...).
func NewLogHandler(h slog.Handler) slog.Handler { return &logHandler{h: h} }

type logHandler struct {
	h slog.Handler
	// goas are the groups and attributes added since the first WithGroup.
	// They are applied at Handle time, below the CPID, so that the CPID
	// stays a top-level key.
	goas []groupOrAttrs
}

type groupOrAttrs struct {
	group string
	attrs []slog.Attr
}

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	if len(l.goas) == 0 {
		return &logHandler{h: l.h.WithAttrs(attrs)}
	}
	return &logHandler{h: l.h, goas: append(l.goas[:len(l.goas):len(l.goas)], groupOrAttrs{attrs: attrs})}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	return &logHandler{h: l.h, goas: append(l.goas[:len(l.goas):len(l.goas)], groupOrAttrs{group: name})}
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	var top [2]slog.Attr
	n := 0
	if c, ok := FromContext(ctx); ok {
		top[n] = slog.String(LogKeyCPID, c.CPID.String())
		n++
	}
	if s := SpanFromContext(ctx); s != nil {
		top[n] = slog.String(LogKeySpanID, s.ID().String())
		n++
	}
	if len(l.goas) == 0 {
		if n > 0 {
			r = r.Clone()
			r.AddAttrs(top[:n]...)
		}
		return l.h.Handle(ctx, r)
	}
	// Rebuild the record: the CPID first, then the groups with their
	// attributes and, innermost, the record's own attributes.
	attrs := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	for i := len(l.goas) - 1; i >= 0; i-- {
		g := l.goas[i]
		if g.group != "" {
			attrs = []slog.Attr{{Key: g.group, Value: slog.GroupValue(attrs...)}}
		} else {
			attrs = append(g.attrs[:len(g.attrs):len(g.attrs)], attrs...)
		}
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(top[:n]...)
	out.AddAttrs(attrs...)
	return l.h.Handle(ctx, out)
}

// Logr returns l with the key "cpid" (and "span_id" when ctx carries a span)
// set from ctx, so that every line l writes during a reconcile carries the
// CPID of the change being processed. Without a trace context in ctx, l is
// returned unchanged.
func Logr(ctx context.Context, l logr.Logger) logr.Logger {
	var kv [4]any
	n := 0
	if c, ok := FromContext(ctx); ok {
		kv[0], kv[1] = LogKeyCPID, c.CPID.String()
		n = 2
	}
	if s := SpanFromContext(ctx); s != nil {
		kv[n], kv[n+1] = LogKeySpanID, s.ID().String()
		n += 2
	}
	if n == 0 {
		return l
	}
	return l.WithValues(kv[:n]...)
}
