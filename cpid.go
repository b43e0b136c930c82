// Package cpid is the vocabulary of cpid: the records read from logs, the
// rows reconstruct derives from them, the constants every package shares
// and the small interfaces a storage engine implements. It imports the
// standard library only, so that every other package (instrument, which
// controller authors import, included) can depend on it.
//
// Imports flow one way: cmd/cpid-tui chooses an engine and wires it to
// ingest and reconstruct; ingest, reconstruct and the engines (sqlite,
// postgres) import this package and never each other's internals.
package cpid

// Annotation keys of trace context format v1 (docs/FORMATS.md). The version
// is part of the key's prefix so that a later format can live beside this
// one on the same object while controllers of both generations run.
const (
	// KeyCPID holds the object's Change Propagation ID: one lower-case UUID.
	KeyCPID = "v1.cpid.dev/cpid"
	// KeyAncestors holds the ancestor CPIDs of KeyCPID, closest first,
	// separated by commas.
	KeyAncestors = "v1.cpid.dev/ancestors"
)

// Messages of the JSON log records that instrumented controllers write
// (docs/FORMATS.md), fixed per record type.
const (
	MsgMergelog = "cpid.mergelog"
	MsgSpan     = "cpid.span"
	MsgDropped  = "cpid.dropped"
)

// Keys the instrument library's log helpers add to controller log lines.
const (
	LogKeyCPID   = "cpid"
	LogKeySpanID = "span_id"
)
