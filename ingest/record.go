// Package ingest decodes kube-apiserver audit logs and controller JSON logs
// into typed records, and reads them from files, directories, compressed files,
// tar bundles and standard input.
package ingest

import (
	"encoding/json"
	"fmt"
)

// AuditEvent is one audit.k8s.io/v1 Event, reduced to the columns cpid queries
// plus the request and response bodies. Times are Unix nanoseconds.
type AuditEvent struct {
	// Hash identifies the event's content: the first 16 bytes of the SHA-256
	// of the event's compact JSON. Exact duplicates share it; distinct events
	// that share an auditID (stages, aggregated apiservers) do not.
	Hash [16]byte

	AuditID    string
	Stage      string // RequestReceived, ResponseStarted, ResponseComplete, Panic
	Level      string // None, Metadata, Request, RequestResponse
	Verb       string
	RequestURI string

	// From objectRef; Name falls back to the response object's
	// metadata.name (generateName creates have no objectRef.name).
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// UID and ResourceVersion come from the response object's metadata when it
	// has them (the object as stored by this write), else from objectRef.
	UID             string
	ResourceVersion string

	Username  string
	UserAgent string
	SourceIPs []string
	Code      int // responseStatus.code; 0 when absent

	ReceivedNS int64 // requestReceivedTimestamp
	StageNS    int64 // stageTimestamp

	// CPID and CPIDAncestors come from the v1.cpid.dev annotations of the
	// response object, or of the request object when there is no response.
	CPID          string
	CPIDAncestors []string
	// OwnerRefs is metadata.ownerReferences of the same object, raw JSON, or nil.
	OwnerRefs json.RawMessage

	// Annotations are the audit event's own annotations (authorization
	// decision, truncation...), raw JSON object or nil.
	Annotations    json.RawMessage
	ResponseStatus json.RawMessage
	RequestObject  json.RawMessage
	ResponseObject json.RawMessage

	// Redacted is set when Secret data/stringData was removed from a body.
	Redacted bool
}

// LogRecord is one structured log line of a controller, whatever its logger
// (klog JSON, zap/logr JSON, slog JSON).
type LogRecord struct {
	// Hash is the first 16 bytes of the SHA-256 of the line's JSON payload
	// (after any CRI wrapper is removed).
	Hash [16]byte

	TimeNS    int64
	Level     string // info, error, warn, debug, or "v=N" verbosity for klog
	Component string // logger name, or the caller's source file when there is none
	Msg       string
	CPID      string
	// Fields is every key/value of the line as one JSON object, including the
	// ones extracted above.
	Fields json.RawMessage
}

// Pos is where a record came from: a file (or bundle member) and a 1-based line.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// LineError is a line that could not be decoded. It never stops a stream: the
// reader reports it and goes on with the next line.
type LineError struct {
	Pos
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Reason) }
