package cpid

import (
	"encoding/json"
	"fmt"
	"strings"
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
	// Traceparent is the W3C traceparent in the same object's
	// tracing.k8s.io/traceparent annotation (KeyTraceparent), in canonical
	// form; "" when it has none or one that is not a traceparent.
	Traceparent string
	// OwnerRefs is metadata.ownerReferences of the same object, raw JSON, or nil.
	OwnerRefs json.RawMessage

	// Annotations are the audit event's own annotations (authorization
	// decision, truncation...), raw JSON object or nil.
	Annotations    json.RawMessage
	ResponseStatus json.RawMessage
	RequestObject  json.RawMessage
	ResponseObject json.RawMessage

	// Redacted is set when a credential was removed from a body
	// (docs/SECURITY.md).
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
	// Program is the program that wrote the record (kube-scheduler, kwok),
	// as the name of its log or stream tells, or else its caller's path;
	// "" when none does. It is not stored: the ingest summary counts
	// records by it.
	Program string
}

// Pos is where a record came from: a file (or bundle member) and a 1-based line.
type Pos struct {
	File string
	Line int
}

// String is the position as FILE:LINE.
func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Audit is an audit event and where it was read.
type Audit struct {
	AuditEvent
	Pos
}

// Log is a controller log record and where it was read.
type Log struct {
	LogRecord
	Pos
}

// Batch is what one RecordWriter.Write stores, in one transaction.
type Batch struct {
	Audits []Audit
	Logs   []Log
	// Checkpoints are where a tailer stands in each log it follows once
	// these records are stored; they are stored in the same transaction.
	// Each covers, in order, the next Audits and Logs records of the batch.
	Checkpoints []Checkpoint
}

// Len is the number of records in the batch.
func (b *Batch) Len() int { return len(b.Audits) + len(b.Logs) }

// Reset empties the batch, keeping its capacity.
func (b *Batch) Reset() {
	clear(b.Audits)
	clear(b.Logs)
	clear(b.Checkpoints)
	b.Audits, b.Logs, b.Checkpoints = b.Audits[:0], b.Logs[:0], b.Checkpoints[:0]
}

// Written counts what a RecordWriter stored and what it found already stored.
type Written struct {
	Audits, AuditDups int
	Logs, LogDups     int
}

// Add accumulates o into w.
func (w *Written) Add(o Written) {
	w.Audits += o.Audits
	w.AuditDups += o.AuditDups
	w.Logs += o.Logs
	w.LogDups += o.LogDups
}

// Checkpoint is where a tailer stands in one followed log. It travels in the
// Batch of the records read before it and is stored in the same
// transaction, so that after a crash at any instant the tailer goes on from
// exactly what was stored: nothing is lost, nothing is read twice.
//
// The position names a file by its content, not its name or inode: rotation
// renames, compresses and prunes files, and inodes are reused. Counters are
// deltas since the source's previous checkpoint; the store adds them up.
type Checkpoint struct {
	// Source is the followed path: the live file of a log ("audit.log"),
	// whatever rotation does to the files behind it.
	Source string

	// File is the name the file being read had when it was opened: a hint
	// for people, never used to find it again.
	File string
	// Fingerprint is the first 16 bytes of the SHA-256 of the first
	// FingerprintLen bytes of the file's content (decompressed); 0 when no
	// line of the source was stored yet.
	Fingerprint    [16]byte
	FingerprintLen int
	// Offset is how many bytes of the file's content are stored (up to the
	// end of a complete line); Line is how many lines.
	Offset int64
	Line   int
	// Device and Inode of the file when it was read: a hint only.
	Device, Inode uint64

	// Audits and Logs are how many of the batch's records this checkpoint
	// covers: the next ones in order after those of the previous
	// checkpoints of the batch. The store counts their duplicates.
	Audits, Logs int
	// Lines, Bad and PossibleLoss are counted since the previous
	// checkpoint: lines read, lines that could not be decoded, and events
	// where data may have been lost (a truncated file, a file rotated away
	// and pruned before it could be read).
	Lines, Bad, PossibleLoss int64
	// NewestNS is the newest stage (or log) time among the covered records.
	NewestNS int64
}

// String is the checkpoint for people: the followed source, the file's
// name, and how many of its lines and bytes are stored.
func (c Checkpoint) String() string {
	return fmt.Sprintf("%s: %s line %d (byte %d)", c.Source, c.File, c.Line, c.Offset)
}

// IsObjectBody reports whether the response body of a write on subresource
// sub is the written object, not a Status (bindings, most deletes) or
// another kind (a Scale).
func IsObjectBody(sub string, body []byte) bool {
	if len(body) == 0 || (sub != "" && sub != "status") {
		return false
	}
	head := string(body[:min(len(body), len(`{"kind":"Status"`))])
	return !strings.HasPrefix(head, `{"kind":"Status"`) && !strings.HasPrefix(head, `{"kind":"Scale"`)
}

// Owners says which checkpoint covers each record of the batch (indexes of
// Checkpoints, by record), after checking that the checkpoints cover the
// records exactly; nil slices when the batch has no checkpoint.
func (b *Batch) Owners() (audits, logs []int, err error) {
	if len(b.Checkpoints) == 0 {
		return nil, nil, nil
	}
	audits, logs = make([]int, 0, len(b.Audits)), make([]int, 0, len(b.Logs))
	for i, c := range b.Checkpoints {
		for range c.Audits {
			audits = append(audits, i)
		}
		for range c.Logs {
			logs = append(logs, i)
		}
	}
	if len(audits) != len(b.Audits) || len(logs) != len(b.Logs) {
		return nil, nil, fmt.Errorf("checkpoints cover %d audit events and %d log records of a batch of %d and %d",
			len(audits), len(logs), len(b.Audits), len(b.Logs))
	}
	return audits, logs, nil
}
