package instrument_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/go-logr/logr"
)

// lines decodes JSON lines.
func lines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestEmitterDropsAndReports(t *testing.T) {
	var buf bytes.Buffer
	e := instrument.NewEmitter(&buf, 2)
	tr := newTracer("test", e)
	for range 5 {
		tr.Root(instrument.ObjectRef{Name: "x"})
	}
	if s := e.Stats(); s.Dropped != 3 || s.Written != 0 {
		t.Fatalf("before flush: %+v", s)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	got := lines(t, buf.Bytes())
	if len(got) != 3 {
		t.Fatalf("%d lines, want 2 mergelogs and a drop report:\n%s", len(got), buf.String())
	}
	last := got[2]
	if last["msg"] != instrument.MsgDropped || last["level"] != "WARN" || last["dropped"] != 3.0 || last["dropped_total"] != 3.0 || last["cpid.format"] != 1.0 {
		t.Errorf("drop report %v", last)
	}
	// Reported once: a second flush writes nothing more.
	e.Flush()
	if n := len(lines(t, buf.Bytes())); n != 3 {
		t.Errorf("%d lines after a second flush", n)
	}
	if s := e.Stats(); s != (instrument.EmitterStats{Written: 3, Dropped: 3}) {
		t.Errorf("Stats = %+v", s)
	}
}

// blockingWriter blocks every write until release is closed.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestEmitterNeverBlocks emits while the destination is stuck: emission
// returns at once and counts drops; shutdown then flushes what was kept.
func TestEmitterNeverBlocks(t *testing.T) {
	w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	e := instrument.NewEmitter(w, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()

	tr := newTracer("test", e)
	tr.Root(instrument.ObjectRef{})
	<-w.started // Run holds the first record, stuck in Write
	for range 1000 {
		tr.Root(instrument.ObjectRef{})
	}
	if s := e.Stats(); s.Dropped < 1000-8 {
		t.Fatalf("dropped %d of 1000 with a buffer of 8", s.Dropped)
	}
	close(w.release)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := e.Stats()
	if s.Written+s.Dropped != 1001+1 { // the records and one drop report
		t.Errorf("Stats = %+v, want written+dropped = 1002", s)
	}
	got := lines(t, w.buf.Bytes())
	if last := got[len(got)-1]; last["msg"] != instrument.MsgDropped || last["dropped_total"] != float64(s.Dropped) {
		t.Errorf("last line %v, want the drop report", last)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestEmitterWriteErrors(t *testing.T) {
	e := instrument.NewEmitter(failingWriter{}, 0)
	newTracer("test", e).Root(instrument.ObjectRef{})
	err := e.Flush()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Flush = %v, want the write error", err)
	}
	if s := e.Stats(); s.Failed != 1 {
		t.Errorf("Stats = %+v", s)
	}
}

// plainSink is a logr sink that knows nothing of slog.
type plainSink struct{ out *[]string }

func (plainSink) Init(logr.RuntimeInfo)       {}
func (plainSink) Enabled(int) bool            { return true }
func (plainSink) Error(error, string, ...any) {}
func (s plainSink) Info(_ int, msg string, kv ...any) {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(" " + kv[i].(string))
		if _, ok := kv[i+1].(map[string]any); ok {
			b.WriteString("{}")
		}
	}
	*s.out = append(*s.out, b.String())
}
func (s plainSink) WithValues(...any) logr.LogSink { return s }
func (s plainSink) WithName(string) logr.LogSink   { return s }

func TestLogrEmitter(t *testing.T) {
	var got []string
	e := instrument.NewLogrEmitter(logr.New(plainSink{&got}), 0)
	newTracer("test", e).Root(instrument.ObjectRef{})
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "cpid.mergelog cpid.format cpid sources service object{} time"
	if len(got) != 1 || got[0] != want {
		t.Errorf("logged %q, want %q: the keys, and the time the sink cannot take", got, want)
	}

	// A discarding logger, or no emitter at all, is not an error.
	e = instrument.NewLogrEmitter(logr.Discard(), 0)
	newTracer("test", e).Root(instrument.ObjectRef{})
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	var none *instrument.Emitter
	newTracer("test", none).Root(instrument.ObjectRef{})
	if err := none.Flush(); err != nil || none.Stats() != (instrument.EmitterStats{}) {
		t.Errorf("nil emitter: %v, %+v", err, none.Stats())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := none.Run(ctx); err != nil {
		t.Errorf("nil emitter Run: %v", err)
	}
}
