package ingest

import "context"

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

// Batch is what one Sink.Write stores, in one transaction.
type Batch struct {
	Audits []Audit
	Logs   []Log
	// Checkpoints are where a Tailer stands in each log it follows once
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

// Written counts what a Sink stored and what it found already stored.
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

// Sink stores batches; sqlite.Store is the one the product uses. Writing the
// same batch twice must store nothing the second time.
type Sink interface {
	Write(ctx context.Context, b *Batch) (Written, error)
}
