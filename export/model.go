// Package export turns what reconstruct derived into traces that trace
// viewers open: OTLP (JSON lines, or pushed over OTLP/HTTP to a collector,
// Tempo or Jaeger), Jaeger's JSON upload format, and Perfetto's (Chrome's)
// JSON trace format.
//
// It is pure: it takes the values a cpid.ChangeReader returns (Read gathers
// them) and builds one Trace per change (Build), which the writers render.
// Every format carries the same spans, parents and links, so that what one
// viewer shows, the others show too.
package export

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/cpid-dev/cpid"
)

// TraceID is a trace's id: 16 bytes, written as 32 hex digits.
type TraceID [16]byte

// SpanID is a span's id: 8 bytes, written as 16 hex digits.
type SpanID [8]byte

func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// IsZero reports whether s is no span (a span without a parent).
func (s SpanID) IsZero() bool { return s == SpanID{} }

// TraceOf is the trace id of a change. A change started by a traced client
// (its root write set tracing.k8s.io/traceparent, KEP-5915) is part of
// that client's trace: its trace id is the traceparent's. Otherwise it is
// the change id itself when that is a UUID (auditIDs and CPIDs are), so
// that a trace viewer finds the change by its id without the dashes; else
// the first 16 bytes of the id's SHA-256. The same change always gets the
// same id, so exports and pushes can be done again.
func TraceOf(c cpid.ChangeRow) TraceID {
	if tp, err := cpid.ParseTraceparent(c.Traceparent); err == nil {
		return tp.TraceID
	}
	var t TraceID
	if h := strings.ReplaceAll(c.ID, "-", ""); len(c.ID) == 36 && len(h) == 32 {
		if _, err := hex.Decode(t[:], []byte(strings.ToLower(h))); err == nil && t != (TraceID{}) {
			return t
		}
	}
	sum := sha256.Sum256([]byte("cpid change " + c.ID))
	copy(t[:], sum[:16])
	return t
}

// remoteParent is the span of the traced client that started the change,
// the parent of its root write; zero when none did.
func remoteParent(c cpid.ChangeRow) (SpanID, byte) {
	tp, err := cpid.ParseTraceparent(c.Traceparent)
	if err != nil {
		return SpanID{}, 0
	}
	return SpanID(tp.SpanID), tp.Flags
}

// WriteSpan is the span id of a write: its event id (audit_events.id) in
// eight bytes, big-endian, so that a span id leads back to the row
// (0x2a is event 42). Event ids start at 1, so it is never zero.
func WriteSpan(eventID int64) SpanID {
	var s SpanID
	binary.BigEndian.PutUint64(s[:], uint64(eventID))
	return s
}

// hashSpan is a span id for what has no event id (controller spans,
// CPIDs no write carries): a hash of its parts, never zero.
func hashSpan(parts ...string) SpanID {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var s SpanID
	copy(s[:], sum[:8])
	if s.IsZero() {
		s[7] = 1
	}
	return s
}

// Kind says what a span stands for.
type Kind string

const (
	// KindWrite is a write to the apiserver: a request from its receipt to
	// its completion (the audit log's ResponseComplete), made by the writer.
	KindWrite Kind = "write"
	// KindController is a span an instrumented controller logged.
	KindController Kind = "controller"
	// KindCPID is a CPID that no write carries but that a merge names (a
	// root `cpid-tui stamp` logged, merged with the object's own CPID
	// before the user's write): a point in time, so that the merge has a
	// span to come from.
	KindCPID Kind = "cpid"
)

// Trace is one change as a trace.
type Trace struct {
	ID     TraceID
	Change cpid.ChangeRow
	// Remote is the span of the traced client that started the change
	// (its traceparent), the parent of the change's first write, in
	// another process's trace data; zero when no traced client did.
	// Sampled is the traceparent's sampled flag.
	Remote  SpanID
	Sampled bool
	// Spans are in the order of their start; the change's first write first.
	Spans []Span
}

// Span is one span of a trace.
type Span struct {
	ID   SpanID
	Kind Kind
	// Parent is the span this one follows within the trace, zero for a
	// root (or Trace.Remote, for the first write of a traced change). A write's parent is the write that caused it, when that write
	// carries the same CPID or one it descends from; see Build.
	Parent SpanID
	// ParentRemote says that Parent is a span of another process's trace
	// data: the traced client's (Trace.Remote).
	ParentRemote bool
	Service      string // the writer or controller, the trace viewer's service
	Name         string // low-cardinality: "create pods", "update deployments/status"
	StartNS      int64
	EndNS        int64
	CPID         string
	// EventID is the write's audit_events.id (KindWrite), else 0.
	EventID int64
	// Error is the status message of a failed write ("HTTP 409"), else "".
	Error string
	Attrs []Attr
	// Links are the other sources of a merge: spans (of this trace or
	// another) that carry a CPID this span's CPID was merged from.
	Links []Link
}

// Link points to a span that carries a source of a merge.
type Link struct {
	Trace  TraceID
	Span   SpanID
	Source string // the source CPID
	Origin string // how the merge is known: log, annotation, inferred
}

// Attr is one attribute: a string, an int64 or a bool.
type Attr struct {
	Key   string
	Value any
}

func str(k, v string) Attr { return Attr{k, v} }
func num(k string, v int64) Attr {
	return Attr{k, v}
}
func flag(k string, v bool) Attr { return Attr{k, v} }
