package cpid

import (
	"context"
	"encoding/json"
	"fmt"
)

// RecordWriter stores batches of records; the storage engines implement it.
// Writing the same batch twice must store nothing the second time (records
// are keyed by their Hash), and a batch is stored in one transaction with its
// checkpoints. It is safe for concurrent use. Write does not keep the
// batch or the bytes its records point to once it returns: the caller
// reuses them (ingest puts the next lines where bodies were).
type RecordWriter interface {
	Write(ctx context.Context, b *Batch) (Written, error)
}

// Watermark is where the last reconstruct run stopped. Writes received up
// to CutoffNS are final; later ones were derived provisionally and are
// redone by the next run, which goes on from EngineData, the state of
// reconstruct's engine at the cutoff, and the objects' states it loads as
// it meets them (LoadObject).
type Watermark struct {
	CutoffNS   int64
	EventID    int64 // the last audit event id seen
	LogID      int64 // the last log record id seen
	HasState   bool
	EngineData []byte
	// Objects are the states of the objects the run met, stored with the
	// watermark (reconstruct_objects) over those of the same keys; the
	// others stay as an earlier run stored them. Watermark does not read
	// them back.
	Objects []ObjectState
}

// ObjectState is what reconstruct's engine knows of one object, saved by a
// run and loaded by the next as it meets the object again: an incremental
// run reads the objects it touches, not every object of the cluster. A
// key that begins with '#' holds an entry of the engine's memory instead
// (an owner's latest dependents, a namespace's latest Pod, a change's
// latest write), read back the same way.
type ObjectState struct {
	Key  string // the object's ObjectKey.String(), or #kind/key
	UID  string // its metadata.uid, "" when not known
	Data []byte // the engine's encoding
}

// WriteEvent is a write as the audit log saw it at its last stage: a
// create, update, patch, delete or deletecollection, on an object or one of
// its subresources, with the stored id that orders everything derived.
type WriteEvent struct {
	ID              int64
	AuditID         string
	Verb            string
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Username        string
	UserAgent       string
	Code            int
	ReceivedNS      int64
	StageNS         int64
	CPID            string
	// Ancestors is the JSON array of the CPIDs the object's annotation
	// carried before its own, as stored (reconstruct decodes it, and
	// counts a value that is not valid JSON).
	Ancestors   json.RawMessage
	Traceparent string
	OwnerRefs   json.RawMessage
	// Latency is the audit event's annotations when they hold the
	// apiserver's latency breakdown (apiserver.latency.k8s.io/*, written
	// for slow requests), else nil.
	Latency json.RawMessage
	// Response is the response body when the scan asked for its resource
	// (WriteScan.Bodies), Request the request body.
	Response json.RawMessage
	Request  json.RawMessage
	// File is the path of the input the event was read from.
	File string
}

// WriteScan selects the writes a reconstruct run reads: received after
// AfterNS, with id at most UpToID, not of an Ignored resource ("leases") or
// resource/subresource ("serviceaccounts/token"), with the response body of
// the Bodies resources only.
type WriteScan struct {
	AfterNS, UpToID int64
	Ignored         []string
	Bodies          []string
}

// EvidenceScan selects the evidence a reconstruct run reads.
type EvidenceScan struct {
	// AfterNS < time <= AtNS (AtNS 0: no bound), id at most UpToID.
	AfterNS, AtNS, UpToID int64
	// Program, when set, keeps the starts whose user agent begins with it.
	Program string
	// StartMarkers are substrings of a request URI that mark an informer's
	// initial list ("sendInitialEvents=true", "resourceVersion=0").
	StartMarkers []string
	// LeaseNamespace and Leases name the leader election leases.
	LeaseNamespace string
	Leases         []string
	// AcquiredMsgs are the messages a leader election client logs when it
	// acquired a lease: the log records with one of them, with id at most
	// UpToLogID, are read too (kind "acquired").
	AcquiredMsgs []string
	// Throttles reads, instead of the starts and leases, the log records
	// whose message is ThrottleMsg (a client holding a request back), with
	// id at most UpToLogID, of any program.
	Throttles   bool
	ThrottleMsg string
	UpToLogID   int64
}

// Evidence is a record that tells why a controller waited: a process
// (re)starting its informers, or a leader election lease written.
type Evidence struct {
	// Kind is "start", "lease", "acquired" or "throttle".
	Kind string
	// AtNS is when the apiserver received the request (start) or completed
	// the write (lease).
	AtNS      int64
	UserAgent string
	// Resource is what a start listed.
	Resource string
	// Lease is the lease's name, Holder its spec.holderIdentity after the
	// write ("" when the audit level keeps no body), Code the answer. For
	// an acquisition logged by the new leader, Lease is the log record's
	// "lock" field ("kube-system/kube-controller-manager", "" when it has
	// none), Holder its message and File the log.
	Lease  string
	Holder string
	Code   int
	// A throttle is a client's log line saying it waited before sending a
	// request (client-go's "Waited before sending request", logged past 1
	// s): the request's HTTP Verb and URL, the Delay as logged ("1.2s"),
	// and the File of the log.
	Verb, URL, Delay, File string
}

// LogEntry is a stored controller log record, as reconstruct reads it.
type LogEntry struct {
	ID     int64
	TimeNS int64
	Msg    string
	Fields []byte
}

// DerivedStore is what a reconstruct run reads and writes; the storage
// engines implement it. Reads see a consistent snapshot each.
type DerivedStore interface {
	// LockRun waits until no other reconstruct run of the view's cluster
	// holds the run lock, in this process or another, and takes it; release
	// gives it back, and a process that dies releases it too. A run reads
	// its watermark under the lock, so that two runs of one cluster (two
	// tailers of an HA control plane, a tailer and a manual reconstruct)
	// take turns instead of deleting each other's rows.
	LockRun(ctx context.Context) (release func(), err error)
	// Watermark reads where the last run stopped.
	Watermark(ctx context.Context) (Watermark, error)
	// LastIDs returns the highest audit event and log record ids stored.
	LastIDs(ctx context.Context) (event, log int64, err error)
	// Late counts what was stored after the watermark and belongs before
	// its cutoff: writes received before it, and log records of message
	// msg logged before it.
	Late(ctx context.Context, w Watermark, msg string) (int64, error)
	// LatestWrite returns the latest receive time of a write with id at
	// most upToID, 0 when none.
	LatestWrite(ctx context.Context, upToID int64) (int64, error)
	// ScanWrites calls fn for the writes q selects, in the order the
	// apiserver received them, then id. fn may keep what it is given.
	ScanWrites(ctx context.Context, q WriteScan, fn func(*WriteEvent) error) error
	// ScanLogs calls fn for the log records with afterID < id <= upToID
	// whose message is one of msgs, in id order.
	ScanLogs(ctx context.Context, afterID, upToID int64, msgs []string, fn func(LogEntry) error) error
	// ScanMergelogs calls fn for every stored mergelog that is final at the
	// cutoff (from a log, or from a write received up to it), oldest first.
	ScanMergelogs(ctx context.Context, cutoffNS int64, fn func(Mergelog) error) error
	// ScanEvidence calls fn, in time order, for what q selects beside the
	// writes: informer starts (list and watch requests whose URI holds one
	// of q.StartMarkers, by q.Program) and the writes of q.Leases, in q's
	// time range, with id at most q.UpToID.
	ScanEvidence(ctx context.Context, q EvidenceScan, fn func(Evidence) error) error
	// LoadObject returns the saved state of the object with that key
	// (ObjectKey.String()), nil when none was saved.
	LoadObject(ctx context.Context, key string) ([]byte, error)
	// LoadObjectByUID returns the saved state of an object with that
	// metadata.uid, nil when none was saved.
	LoadObjectByUID(ctx context.Context, uid string) ([]byte, error)
	// ScanMergelogsOf calls fn for the stored mergelogs of cpids final at
	// the cutoff (as ScanMergelogs), in the order they were stored: an
	// incremental run loads the part of the merge graph its writes reach
	// (the CPIDs it meets and their ancestors), not all of it.
	ScanMergelogsOf(ctx context.Context, cutoffNS int64, cpids []string, fn func(Mergelog) error) error
	// DeleteMergelogs deletes the mergelogs of cpids and their edges, in one
	// transaction.
	DeleteMergelogs(ctx context.Context, cpids []string) error
	// Derive opens what a run stores its rows through.
	Derive(ctx context.Context, m DeriveMode) (DeriveTx, error)
}

// DeriveMode says what a run replaces and how it stores.
type DeriveMode struct {
	// Full clears every derived row first; otherwise what was derived from
	// writes received after RedoNS is deleted.
	Full   bool
	RedoNS int64
	// Bulk (a full rebuild in one transaction) lets the engine drop the
	// derived tables' indexes while it loads and build them in Finish;
	// (cpid, origin) uniqueness of mergelogs is then the caller's to keep.
	Bulk bool
}

// ObjectNeed is what the end of a run needs of an object's stored writes
// (DeriveTx.Objects).
type ObjectNeed int

const (
	// NeedNothing: the object is left as it is.
	NeedNothing ObjectNeed = iota
	// NeedTimeOrder: its writes go to time order (order_by "time"), their
	// numbers kept, unread: an object whose resource versions stopped
	// parsing after writes that came in time order (Derived.Relabel).
	NeedTimeOrder
	// NeedWrites: its writes are read back, with their resource versions,
	// to be renumbered (Derived.Reorder).
	NeedWrites
)

// DeriveTx stores a run's rows. Everything up to Finish is in one
// transaction, unless Step commits it and opens the next; a run abandoned
// before Finish leaves the old watermark, so the next run redoes it.
type DeriveTx interface {
	// Save stores rows. Mergelogs that repeat a stored (cpid, origin) are
	// skipped, with their sources.
	Save(ctx context.Context, d *Derived) error
	// Step commits what is stored so far and goes on in a new transaction.
	Step(ctx context.Context) error
	// Revisions reads back the stored writes of an object, for renumbering.
	Revisions(ctx context.Context, k ObjectKey) ([]Placed, error)
	// Objects gives the objects of the run's cluster what need says of
	// each, from one read of their keys: fn gets the stored writes of each
	// object that needs them (NeedWrites), once; those that only turn to
	// time order (NeedTimeOrder) are set to it without a read. A bulk run
	// renumbers from it, instead of holding every write's place in memory
	// or sorting every write.
	Objects(ctx context.Context, need func(ObjectKey) ObjectNeed, fn func(ObjectKey, []Placed) error) error
	// ChangeWrites reads back the stored writes of a change, for its summary.
	ChangeWrites(ctx context.Context, change string) ([]Write, error)
	// Renumber sets the places of writes.
	Renumber(ctx context.Context, ps []Placed) error
	// Summarize sets the summaries of changes.
	Summarize(ctx context.Context, cs []ChangeSummary) error
	// Finish builds what Bulk dropped, stores the watermark and commits.
	Finish(ctx context.Context, w Watermark) error
	// Abort rolls back what was not committed.
	Abort()
}

// Placed is a write's place among its object's writes.
type Placed struct {
	EventID         int64
	ResourceVersion string
	StageNS         int64
	Seq             int
	OrderBy         string
}

// ChangeSummary is what a change amounts to: when it settled (its last
// write), how many writes and objects, and its slowest hop (the event of
// the slowest hop, 0 when no write of the change has a cause).
type ChangeSummary struct {
	ID                string
	SettledNS         int64
	Writes, Objects   int
	SlowestHopNS      int64
	SlowestHopEventID int64
}

// DefaultCluster is the cluster of records written without one.
const DefaultCluster = "default"

// OwnCluster is the cluster a view of cluster c writes and reconstructs:
// c, or DefaultCluster for a view of every cluster ("").
func OwnCluster(c string) string {
	if c == "" {
		return DefaultCluster
	}
	return c
}

// OpenOptions are how an engine opens a database.
type OpenOptions struct {
	// ReadOnly opens an existing database for reading only, as the
	// commands that only read do: it is never created or migrated (a
	// database without the cpid schema, or an older one, is an error
	// saying which version is needed), and writes through it fail.
	ReadOnly bool
	// Notice, when set, is told what opening does that takes long: each
	// migration of a database that holds records (a rebuild of its tables
	// may take a while on a large one), before it runs; not those of a
	// database being created, by this process or another one at once.
	Notice func(string)
	// Native opens a SQLite database with SQLite in C where the build has
	// cgo (github.com/mattn/go-sqlite3), instead of the pure-Go SQLite
	// every other open uses: its queries run two to three times faster.
	// Two copies of SQLite in one process do not see each other's POSIX
	// locks, so only a process that opens the file once (a reconstruct
	// run, a tailer, a command that only reads) asks for it. Ignored by
	// PostgreSQL and by builds without cgo.
	Native bool
}

// OpenOption sets one of OpenOptions.
type OpenOption func(*OpenOptions)

// ReadOnly is OpenOptions.ReadOnly.
func ReadOnly() OpenOption { return func(o *OpenOptions) { o.ReadOnly = true } }

// Native is OpenOptions.Native.
func Native() OpenOption { return func(o *OpenOptions) { o.Native = true } }

// WithNotice is OpenOptions.Notice.
func WithNotice(f func(string)) OpenOption { return func(o *OpenOptions) { o.Notice = f } }

// MigrationNotice is what an engine tells OpenOptions.Notice before it
// applies migration m to a database of an older schema that holds records.
func MigrationNotice(m Migration) string {
	return fmt.Sprintf("migrating to schema v%d (%s): once, and a while on a large database", m.Version, m.Name)
}

// Options applies opts.
func Options(opts ...OpenOption) OpenOptions {
	var o OpenOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// JSONText is how a JSON value is stored in a TEXT column, in either
// engine: the text as it came, or nil (NULL) for none.
func JSONText(b json.RawMessage) any {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return string(b)
}

// JSONStrings is how a list of strings is stored in a TEXT column: a JSON
// array, or nil (NULL) for none.
func JSONStrings(ss []string) any {
	if len(ss) == 0 {
		return nil
	}
	b, _ := json.Marshal(ss)
	return string(b)
}
