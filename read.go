package cpid

import "context"

// DataVersion is a cheap fingerprint of what the database holds: when
// ingest, tail or reconstruct writes, it changes. Two versions compare with ==.
type DataVersion struct {
	Events        int64 // highest audit_events.id
	Logs          int64 // highest log_records.id
	NewestNS      int64 // latest audit_events.stage_ns: how fresh the data is
	Reconstructed int64 // audit_events.id the last reconstruct went up to
	CutoffNS      int64 // the last reconstruct's settle cutoff
}

// ChangeQuery selects and orders changes, one page at a time.
type ChangeQuery struct {
	// Filter keeps changes whose namespace, name, resource, user or id
	// contains it (case-insensitive).
	Filter string
	// Sort is "time" (newest first, the default), "duration" or "size".
	Sort   string
	Limit  int
	Offset int
}

// ChangeRow is one root change as the changes query lists it.
type ChangeRow struct {
	ID           string `json:"id"`
	StartedNS    int64  `json:"started_ns"`
	SettledNS    int64  `json:"settled_ns"`
	User         string `json:"user"`
	UserAgent    string `json:"user_agent"`
	Verb         string `json:"verb"`
	Kind         string `json:"kind"`
	APIGroup     string `json:"api_group"`
	Resource     string `json:"resource"`
	Subresource  string `json:"subresource"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Writes       int    `json:"writes"`
	Objects      int    `json:"objects"`
	SlowestHopNS int64  `json:"slowest_hop_ns"`
	Cluster      string `json:"cluster"`
}

// TimelineEntry is one write of a change.
type TimelineEntry struct {
	EventID     int64  `json:"event_id"`
	NS          int64  `json:"ns"`
	ReceivedNS  int64  `json:"received_ns"`
	Writer      string `json:"writer"`
	Verb        string `json:"verb"`
	Kind        string `json:"kind"`
	APIGroup    string `json:"api_group"`
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Subresource string `json:"subresource"`
	Code        int    `json:"code"`
	Attempt     bool   `json:"attempt"`
	CPID        string `json:"cpid"`
	Origin      string `json:"origin"`
	Rule        string `json:"rule"`
	CauseID     int64  `json:"cause_event_id"`
	// CauseNS is when the cause became visible: its stage time, or this
	// write's receive time if that is earlier (watchers see a write when etcd
	// commits it, before the apiserver answers its writer).
	CauseNS  int64 `json:"cause_ns"`
	HopNS    int64 `json:"hop_ns"`
	Critical bool  `json:"critical"`
}

// SpanRow is one span of a change.
type SpanRow struct {
	Kind     string `json:"kind"` // controller or apiserver
	SpanID   string `json:"span_id"`
	ParentID string `json:"parent_id"`
	CPID     string `json:"cpid"`
	Service  string `json:"service"`
	Name     string `json:"name"`
	StartNS  int64  `json:"start_ns"`
	EndNS    int64  `json:"end_ns"`
}

// GraphObject is an object a CPID touched within a change.
type GraphObject struct {
	APIGroup  string
	Resource  string
	Kind      string
	Namespace string
	Name      string
	Writers   []string // who wrote it with this CPID, in order of their first write
	Writes    int      // successful writes
	Attempts  int      // failed writes
	FirstNS   int64
}

// Merge is one mergelog of a CPID: how it was known and from what.
type Merge struct {
	Origin  string // log, annotation, inferred
	Service string
	TimeNS  int64
	Sources []string
}

// GraphNode is a CPID of a change.
type GraphNode struct {
	CPID    string
	Origin  string // the cpid_origin of its first write: root, annotation, inferred, background
	FirstNS int64
	Merges  []Merge
	Objects []GraphObject
}

// ChangeGraph is the part of the merge DAG a change made: its CPIDs in order
// of their first write, with the objects each touched and their merges.
type ChangeGraph struct {
	Change string
	Nodes  []GraphNode
	// Outside maps merge sources that are not CPIDs of this change to the
	// other changes that carry them.
	Outside map[string][]string
}

// LogLine is one controller log record.
type LogLine struct {
	ID        int64
	TimeNS    int64
	Level     string
	Component string
	Msg       string
	CPID      string
	Fields    string // the whole line's keys, JSON object
	File      string
	Line      int
}

// ChangeLogSet is the log lines of a change.
type ChangeLogSet struct {
	Lines []LogLine
	// Exact is true when the lines carry the change's CPIDs (instrumented
	// controllers). Otherwise no line does, and Lines are those of the
	// change's writers in its time window: a guess, to be read as such.
	Exact bool
	// Writers, FromNS and ToNS are what the guess used.
	Writers      []string
	FromNS, ToNS int64
	// Truncated is true when there were more than the limit.
	Truncated bool
}

// Revision is one write of an object, with its bodies.
type Revision struct {
	EventID         int64
	Seq             int
	Attempt         bool
	OrderBy         string
	StageNS         int64
	Writer          string
	Verb            string
	Subresource     string
	Code            int
	Level           string
	ResourceVersion string
	CPID            string
	ChangeID        string
	// Object is the object as this write stored it (JSON), when the audit
	// level recorded it; "" otherwise (Metadata level, a binding, a Status).
	Object string
	// Request is the request body (for a patch, the patch), when recorded.
	Request string
}

// ChangeSpan is a controller span of one of a change's CPIDs.
type ChangeSpan struct {
	SpanID   string
	ParentID string
	CPID     string
	Service  string
	Name     string
	StartNS  int64
	EndNS    int64
}

// Hop is one controller hop: a write and how long after its cause it completed.
type Hop struct {
	Writer string
	HopNS  int64
}

// TailSource is one log followed by `cpid-tui tail`: where the tailer stands
// in it, and its counters since it was first tailed.
type TailSource struct {
	Cluster string
	// Checkpoint is the stored position. Its Lines, Bad and PossibleLoss
	// are totals here, not deltas; Audits and Logs are unused.
	Checkpoint
	Records, Dups int64
	// CommittedNS is when the last checkpoint of the source was committed.
	CommittedNS int64
}

// ChangeReader reads what reconstruct derived, for queries and the
// terminal UI; the storage engines implement it. Each method reads one
// consistent snapshot.
type ChangeReader interface {
	// DataVersion changes whenever anything readers see may have changed.
	DataVersion(ctx context.Context) (DataVersion, error)
	CountChanges(ctx context.Context, filter string) (int, error)
	Changes(ctx context.Context, q ChangeQuery) ([]ChangeRow, error)
	ChangesByID(ctx context.Context, ids []string) ([]ChangeRow, error)
	// ChangesCarrying returns the ids of the changes with a write carrying
	// one of the CPIDs.
	ChangesCarrying(ctx context.Context, cpids []string) ([]string, error)
	// LinkedChanges are the other changes whose CPIDs descend from the
	// CPID (or, with ancestors, that it descends from).
	LinkedChanges(ctx context.Context, change, cpid string, ancestors bool) ([]ChangeRow, error)
	ChangeGraph(ctx context.Context, change string) (ChangeGraph, error)
	ChangeLogs(ctx context.Context, change string, limit int) (ChangeLogSet, error)
	ChangeSpans(ctx context.Context, change string) ([]ChangeSpan, error)
	// ObjectRevisions returns the last limit writes of an object and
	// whether earlier ones were left out.
	ObjectRevisions(ctx context.Context, o ObjectKey, limit int) ([]Revision, bool, error)
	Timeline(ctx context.Context, change string) ([]TimelineEntry, error)
	// Related returns every CPID that descends from cpid, itself included;
	// Origins every CPID it descends from.
	Related(ctx context.Context, cpid string) ([]string, error)
	Origins(ctx context.Context, cpid string) ([]string, error)
	Spans(ctx context.Context, change string) ([]SpanRow, error)
	PodWrites(ctx context.Context, change string) ([]PodWrite, error)
	Hops(ctx context.Context, change string) ([]Hop, error)
	TailSources(ctx context.Context) ([]TailSource, error)
	// NewestMergelog returns the time of the newest mergelog, 0 when none.
	NewestMergelog(ctx context.Context) (int64, error)
}
