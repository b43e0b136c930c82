package instrument

import "github.com/cpid-dev/cpid"

// Annotation keys of trace context format v1 (the vocabulary's: ingest and
// reconstruct read the same ones). The version is part of the key's prefix
// so that a later format can live beside this one on the same object while
// controllers of both generations run.
const (
	// KeyCPID holds the object's Change Propagation ID: one lower-case UUID.
	KeyCPID = cpid.KeyCPID
	// KeyAncestors holds the ancestor CPIDs of KeyCPID, closest first,
	// separated by commas, at most N of them (see DefaultMaxAncestors).
	KeyAncestors = cpid.KeyAncestors
	// KeyTraceparent holds a W3C traceparent, as KEP-5915 proposes
	// (tracing.k8s.io/traceparent). It is not cpid's: Extract reads it and
	// Inject writes it when the Context has a Trace, but never removes one
	// that a traced client wrote.
	KeyTraceparent = cpid.KeyTraceparent
)

// Traceparent is a W3C trace context: trace id, parent span id, flags.
type Traceparent = cpid.Traceparent

// ParseTraceparent reads a W3C traceparent value.
func ParseTraceparent(s string) (Traceparent, error) { return cpid.ParseTraceparent(s) }

// DefaultMaxAncestors is the default N, the most ancestor CPIDs an object
// carries.
//
// Why 10: in the paper's measurement (section 5.1.2, Figure 11) N=5 leaves
// about 25% of the mergelogs of N=0 and N=10 about 8%; from N=15 on the count
// stops falling because every ancestor of that scenario fits. Ten keeps most of
// the saving while the annotation stays under 400 bytes (10 UUIDs of 36
// characters and 9 commas), small next to the 256 KiB the apiserver allows for
// all annotations of an object.
const DefaultMaxAncestors = 10

// MaxAncestorsLimit is the largest N a Tracer accepts, and the most ancestors
// Extract reads from an annotation. A KeyAncestors value holding more, or
// longer than MaxAncestorsLimit entries can be, is oversized: it is treated as
// absent rather than parsed.
const MaxAncestorsLimit = 256

// Format is the version of the JSON records this package writes, in the
// "cpid.format" key of each record (see docs/FORMATS.md).
const Format = 1
