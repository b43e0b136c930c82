package instrument_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
)

func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(instrument.NewLogHandler(slog.NewJSONHandler(&buf, nil)))
	tr := newTracer("test", nil)
	ctx := instrument.NewContext(context.Background(), tc("a"))
	ctx, span := tr.StartSpan(ctx, "reconcile")

	log.With("k", 1).WithGroup("g").With("x", 2).WithGroup("h").InfoContext(ctx, "m", "y", 3)
	log.WithGroup("empty").InfoContext(ctx, "m")
	log.DebugContext(ctx, "not enabled")
	span.End()

	got := lines(t, buf.Bytes())
	if len(got) != 2 {
		t.Fatalf("%d lines:\n%s", len(got), buf.String())
	}
	for _, l := range got {
		if l["cpid"] != id("a").String() || l["span_id"] != span.ID().String() {
			t.Errorf("line %v lacks the top-level cpid and span_id", l)
		}
	}
	g, _ := got[0]["g"].(map[string]any)
	h, _ := g["h"].(map[string]any)
	if got[0]["k"] != 1.0 || g["x"] != 2.0 || h["y"] != 3.0 {
		t.Errorf("groups not kept: %v", got[0])
	}
	if _, ok := got[1]["empty"]; ok {
		t.Errorf("empty group written: %v", got[1])
	}
}

func TestSpans(t *testing.T) {
	var buf bytes.Buffer
	e := instrument.NewEmitter(&buf, 0)
	tr := newTracer("svc", e)

	// No trace context: the span is still written, with an empty CPID.
	_, orphan := tr.StartSpan(context.Background(), "resync")
	orphan.End()
	orphan.End() // once only

	// A child takes its parent's CPID when its context has none, and a
	// span can learn its CPID late.
	ctx, parent := tr.StartSpan(context.Background(), "reconcile")
	parent.SetCPID(id("a"))
	_, child := tr.StartSpan(ctx, "write", slog.String("k", "v1"))
	child.SetAttributes(slog.String("k", "v2"), slog.Bool("ok", true))
	child.End()
	parent.End()

	var nilSpan *instrument.Span
	nilSpan.SetAttributes(slog.Int("x", 1))
	nilSpan.SetCPID(id("b"))
	nilSpan.End()
	if !nilSpan.ID().IsZero() || !nilSpan.CPID().IsZero() || instrument.SpanFromContext(context.Background()) != nil {
		t.Error("nil span is not inert")
	}

	e.Flush()
	got := lines(t, buf.Bytes())
	if len(got) != 3 {
		t.Fatalf("%d spans written, want 3:\n%s", len(got), buf.String())
	}
	if got[0]["cpid"] != "" || got[0]["parent_id"] != "" || got[0]["name"] != "resync" {
		t.Errorf("orphan span %v", got[0])
	}
	attrs, _ := got[1]["attrs"].(map[string]any)
	if got[1]["cpid"] != id("a").String() || got[1]["parent_id"] != got[2]["span_id"] ||
		attrs["k"] != "v2" || attrs["ok"] != true || len(attrs) != 2 {
		t.Errorf("child span %v of %v", got[1], got[2])
	}
	for _, l := range got {
		for _, k := range []string{"time", "level", "msg", "cpid.format", "cpid", "span_id", "parent_id", "service", "name", "start", "end"} {
			if _, ok := l[k]; !ok {
				t.Errorf("span %v lacks %q", l, k)
			}
		}
		if l["time"] != l["end"] || l["msg"] != instrument.MsgSpan || l["service"] != "svc" {
			t.Errorf("span %v", l)
		}
	}
}
