package cpid

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

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
	// Filter keeps changes whose namespace, name, resource, user, id or
	// cluster contains it (case-insensitive), or with a write whose object
	// name or writer contains it, whose verb (update/status) does when it
	// may name one (FilterWrites), or whose HTTP code it is (409).
	Filter string
	// Sort is "time" (newest first, the default), "duration" or "size".
	Sort   string
	Limit  int
	Offset int
	// IDPrefix keeps the changes whose id starts with it: a unique prefix
	// names one change.
	IDPrefix string
	// SinceNS and UntilNS keep the changes started in [SinceNS, UntilNS);
	// 0 leaves that side open.
	SinceNS, UntilNS int64
	// Namespace keeps the changes whose first write is in that namespace.
	Namespace string
	// Kind keeps the changes whose first write is of that resource (nil:
	// any).
	Kind *ResourceMatch
	// User keeps the changes whose user's name contains it, Writer those
	// with a write by a writer whose name contains it (case-insensitive).
	User, Writer string
	// MinDurationNS keeps the changes that took at least this long from
	// their start to their last write.
	MinDurationNS int64
	// Trigger keeps the changes that this started.
	Trigger Trigger
}

// writeVerbs are the verbs of writes, which a filter may name: "apply" is
// how a person may call a server-side apply's patch.
var writeVerbs = append(slices.Clone(WriteVerbs), "apply")

// FilterWrites says what else than names and writers a changes filter may
// match in a change's writes: a verb, when the filter is part of one or
// starts with one (upd, update/status, patch/scale), and an HTTP code,
// when it is three digits (409).
func FilterWrites(filter string) (verb bool, code int) {
	f := strings.ToLower(filter)
	for _, v := range writeVerbs {
		if strings.Contains(v, f) || strings.HasPrefix(f, v+"/") {
			verb = true
		}
	}
	if len(f) == 3 {
		if n, err := strconv.Atoi(f); err == nil && n >= 100 && n <= 599 {
			code = n
		}
	}
	return verb, code
}

// FilterVerbSQL and FilterCodeSQL are, in the SQL both engines read, the
// values of a write (r, a revision, with its event e) that a changes
// filter finds it by besides its name and writer (FilterWrites): its
// verb[/subresource], and its HTTP code when under 300 or the write failed
// (a failing code is a failed write's), else NULL. Reconstruct stores them
// as the filter's postings in each engine.
const (
	FilterVerbSQL = `e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END`
	FilterCodeSQL = `CASE WHEN e.code < 300 OR r.attempt <> 0 THEN e.code END`
)

// InAnyID reports whether a changes filter (lower case) is made of the
// characters of a UUID alone, and so may be part of any change's id: the
// ids that are UUIDs are no value the engines keep for the filter's gate.
func InAnyID(filter string) bool {
	return strings.Trim(filter, "0123456789abcdef-") == ""
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
	// Trigger says what started the change, TriggerDetail what happened.
	Trigger       Trigger `json:"trigger"`
	TriggerDetail string  `json:"trigger_detail"`
	// Traceparent is the W3C trace context of the traced client that
	// started the change (its root write set tracing.k8s.io/traceparent),
	// "" when none did.
	Traceparent string `json:"traceparent,omitempty"`
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
	CauseNS       int64      `json:"cause_ns"`
	HopNS         int64      `json:"hop_ns"`
	Explain       Explain    `json:"explain"`
	ExplainDetail string     `json:"explain_detail"`
	Confidence    Confidence `json:"confidence"`
	Critical      bool       `json:"critical"`
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

// ChangeLogSet is the log lines of a change: every line logged in its time
// window [FromNS, ToNS] that carries one of its CPIDs, or that the process
// of one of its writers, or of a line carrying one of its CPIDs, logged.
type ChangeLogSet struct {
	Lines []LogLine
	// Exact is true when some lines carry the change's CPIDs (instrumented
	// controllers; their processes' other lines are there too). Otherwise
	// no line does, and Lines are those of the change's writers in its
	// time window: a guess, to be read as such.
	Exact bool
	// Writers, FromNS and ToNS are what the window used: from the change's
	// start to LogWindowLag after it settled.
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
	Writer   string
	HopNS    int64
	Rule     string
	Explain  Explain
	Resource string
}

// AnomalyRow is something in the logs a reconstruction must not hide (a
// replayed watch, a clock skew, a condition's time moving back), on the
// write it was seen on.
type AnomalyRow struct {
	Kind      string `json:"kind"`
	EventID   int64  `json:"event_id"`
	NS        int64  `json:"ns"`
	APIGroup  string `json:"api_group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Detail    string `json:"detail"`
	Change    string `json:"change"` // the change of the write, "" for a background write
	Cluster   string `json:"cluster"`
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
	// Objects finds the objects with writes that a reference may name,
	// ordered by cluster, group, resource, namespace.
	Objects(ctx context.Context, q ObjectQuery) ([]ObjectMatch, error)
	// ObjectHistory returns the writes of one object in the order
	// reconstruct gave them (seq), each with its change and cause, and
	// whether earlier ones were left out by the limit.
	ObjectHistory(ctx context.Context, q HistoryQuery) ([]ObjectWrite, bool, error)
	// Timeline returns every write of a change in apiserver order, the
	// critical path marked; an unknown change is an error.
	Timeline(ctx context.Context, change string) ([]TimelineEntry, error)
	// Timelines returns the timelines of these changes in one read, by
	// change id, as Timeline would; unknown ids are left out.
	Timelines(ctx context.Context, changes []string) (map[string][]TimelineEntry, error)
	// Related returns every CPID that descends from cpid, itself included;
	// Origins every CPID it descends from.
	Related(ctx context.Context, cpid string) ([]string, error)
	Origins(ctx context.Context, cpid string) ([]string, error)
	// CPIDs returns the CPIDs of the merge graph that start with prefix,
	// in order, at most limit: a CPID given by a prefix, as change ids
	// are.
	CPIDs(ctx context.Context, prefix string, limit int) ([]string, error)
	Spans(ctx context.Context, change string) ([]SpanRow, error)
	PodWrites(ctx context.Context, change string) ([]PodWrite, error)
	Hops(ctx context.Context, change string) ([]Hop, error)
	// Anomalies returns what reconstruct flagged, of one change or (change
	// "") of the view's clusters, in apiserver order.
	Anomalies(ctx context.Context, change string) ([]AnomalyRow, error)
	TailSources(ctx context.Context) ([]TailSource, error)
	// NewestMergelog returns the time of the newest mergelog, 0 when none.
	NewestMergelog(ctx context.Context) (int64, error)
}

// ChangeByPrefix returns the id of the change that id names: the change of
// that id, else the one change whose id starts with it. When none or
// several do, it returns "" and the candidates, newest first: at most
// limit+1 of them, so that more than limit says there are more.
func ChangeByPrefix(ctx context.Context, st ChangeReader, id string, limit int) (string, []ChangeRow, error) {
	cs, err := st.Changes(ctx, ChangeQuery{IDPrefix: id, Limit: limit + 1})
	if err != nil {
		return "", nil, err
	}
	for _, c := range cs {
		if c.ID == id {
			return id, nil, nil
		}
	}
	if len(cs) == 1 {
		return cs[0].ID, nil, nil
	}
	return "", cs, nil
}

// IDLength returns how many characters of an id a listing shows so that
// the prefix names it, as git abbreviates: the fewest, and at least min,
// that no two ids of the database share, the CPIDs of the merge graph (a
// change's id is its root CPID) and the ids given (those listed, should
// one be no CPID).
func IDLength(ctx context.Context, st ChangeReader, min int, listed ...string) (int, error) {
	if pr, ok := st.(PrefixReader); ok {
		p, err := pr.CPIDPrefixes(ctx, listed)
		if err != nil {
			return 0, fmt.Errorf("read the CPIDs' prefixes: %w", err)
		}
		if p.Known {
			// Two ids in order share no more than any two next to each
			// other between them: the CPIDs' largest share and the ids
			// given with their neighbours give what every CPID would.
			n := UniqueLength(slices.Concat(listed, p.Near), min)
			if p.Shared >= 0 {
				n = max(n, p.Shared+1)
			}
			return n, nil
		}
	}
	ids, err := st.CPIDs(ctx, "", math.MaxInt32)
	if err != nil {
		return 0, fmt.Errorf("read the CPIDs: %w", err)
	}
	return UniqueLength(append(ids, listed...), min), nil
}

// PrefixReader is a ChangeReader that keeps the CPIDs of the merge graph
// in order with what each shares with the next (SQLite's cpid_ids):
// IDLength then reads a few of them instead of every one.
type PrefixReader interface {
	CPIDPrefixes(ctx context.Context, ids []string) (CPIDPrefixes, error)
}

// CPIDPrefixes is what IDLength needs of the CPIDs for some ids.
type CPIDPrefixes struct {
	// Known is false when the engine cannot tell (IDLength then reads
	// every CPID).
	Known bool
	// Shared is the most characters two CPIDs next to each other in
	// order start with in common, -1 with fewer than two CPIDs.
	Shared int
	// Near holds, for each id, the CPIDs just before and just after it.
	Near []string
}

// CPIDSharedCap is the most characters the engines' cpid_ids tables count
// two CPIDs next to each other share (their triggers, SQLite's migration
// 0013 and PostgreSQL's 0007): a CPID that shares that many with the next
// may share more, and IDLength then counts from the CPIDs themselves.
const CPIDSharedCap = 40

// CPIDShared is what an engine's cpid_ids holds for a CPID followed by
// next in order: the characters they start with in common, at most
// CPIDSharedCap (0 for the last CPID, which has no next).
func CPIDShared(a, next string) int { return min(sharedRunes(a, next), CPIDSharedCap) }

// PrefixesOf is what an engine's cpid_ids tells of the CPIDs: the largest
// count it holds (nil for none) and how many CPIDs it holds, up to 2. ok
// is false when that cannot tell the length (Known stays false); the
// engine then reads Near, the CPIDs on either side of each id.
func PrefixesOf(shared *int, n int) (p CPIDPrefixes, ok bool) {
	p.Shared = -1
	if n > 1 && shared != nil {
		p.Shared = *shared
	}
	if p.Shared >= CPIDSharedCap {
		return p, false
	}
	p.Known = true
	return p, true
}

// UniqueLength is the fewest characters, at least min, whose prefixes of
// ids are all different: one more than the longest prefix two of them
// share (neighbours once sorted). An id that starts another is shown
// whole.
func UniqueLength(ids []string, min int) int {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n := min
	for i := 1; i < len(ids); i++ {
		n = max(n, sharedRunes(ids[i-1], ids[i])+1)
	}
	return n
}

// sharedRunes is how many characters a and b start with in common.
func sharedRunes(a, b string) int {
	n := 0
	for a != "" && b != "" {
		_, sa := utf8.DecodeRuneInString(a)
		_, sb := utf8.DecodeRuneInString(b)
		if a[:sa] != b[:sb] {
			break
		}
		a, b = a[sa:], b[sb:]
		n++
	}
	return n
}

// TimeByReason adds up the hops of a timeline's critical path (marked by
// MarkCritical) by why they waited and by who waited: where a change's time
// went.
func TimeByReason(ts []TimelineEntry) (byReason, byWriter map[string]int64) {
	byReason, byWriter = map[string]int64{}, map[string]int64{}
	for _, t := range ts {
		if !t.Critical || t.CauseID == 0 {
			continue
		}
		why := string(t.Explain)
		if why == "" {
			why = string(ExplainUnexplained)
		}
		byReason[why] += t.HopNS
		byWriter[t.Writer] += t.HopNS
	}
	return byReason, byWriter
}

// TimelineColumns is what an engine's timeline query selects, in the order
// TimelineSet.Scan reads it: the change's id, then the columns of a
// TimelineEntry from EventID to Confidence (Kind as the stored response's
// kind, "" when it has none).
const TimelineColumns = "change_id, event_id, ns, received_ns, writer, verb, kind, api_group, resource, namespace, " +
	"name, subresource, code, attempt, cpid, origin, rule, cause_event_id, cause_ns, hop_ns, explain, explain_detail, confidence"

// TimelineSet gathers the rows of an engine's timeline query, by change
// (ChangeReader.Timelines): the engines hold the SQL, the set what is done
// with a row.
type TimelineSet map[string][]TimelineEntry

// Scan reads one row of TimelineColumns with scan (a driver's Scan).
func (s TimelineSet) Scan(scan RowScan) error {
	var id string
	var t TimelineEntry
	if err := scan(&id, &t.EventID, &t.NS, &t.ReceivedNS, &t.Writer, &t.Verb, &t.Kind, &t.APIGroup, &t.Resource, &t.Namespace,
		&t.Name, &t.Subresource, &t.Code, &t.Attempt, &t.CPID, &t.Origin, &t.Rule, &t.CauseID, &t.CauseNS, &t.HopNS,
		&t.Explain, &t.ExplainDetail, &t.Confidence); err != nil {
		return err
	}
	t.Kind = KindOf(t.Kind, t.Resource)
	s[id] = append(s[id], t)
	return nil
}

// Done marks each change's critical path and returns the timelines.
func (s TimelineSet) Done() map[string][]TimelineEntry {
	for _, ts := range s {
		MarkCritical(ts)
	}
	return s
}

// MarkCritical marks the critical path of a change's timeline (its writes
// in apiserver order): the chain of causes back from the last successful
// write.
func MarkCritical(ts []TimelineEntry) {
	idx := map[int64]int{}
	last := -1
	for i, t := range ts {
		idx[t.EventID] = i
		if !t.Attempt {
			last = i
		}
	}
	for i := last; i >= 0; {
		ts[i].Critical = true
		j, ok := idx[ts[i].CauseID]
		if !ok || j == i {
			break
		}
		i = j
	}
}

// LogWindowLag is how long after a change's last write its writers' log
// lines still count as its own when no line carries a CPID: controllers
// log what they did just after the write returns.
const LogWindowLag = 250_000_000

// WriterPatterns returns SQL LIKE patterns (lower case) that match the log
// file path or the component of a writer's log lines, for the logs of a
// change whose lines carry no CPID. Writers are named after their service
// account (revisions.writer): the controllers of kube-controller-manager
// (deployment-controller, generic-garbage-collector...) log to its file
// under their own source files, so their file is the only handle; other
// writers (kube-scheduler, kwok, an operator) name their log file or logger
// after themselves.
func WriterPatterns(writer string) []string {
	w := strings.ToLower(writer)
	if node, ok := strings.CutPrefix(w, "kubelet"); ok {
		return []string{"%kubelet%" + strings.TrimSpace(node) + "%", "%kubelet%"}
	}
	// LIKE wildcards in names become single-character wildcards: harmless.
	w = strings.ReplaceAll(w, "%", "_")
	ps := []string{"%" + w + "%"}
	for _, suffix := range []string{"-controller", "-collector", "-publisher", "-controller-manager"} {
		if strings.HasSuffix(w, suffix) {
			return append(ps, "%controller-manager%")
		}
	}
	if stem, ok := strings.CutPrefix(w, "kube-"); ok {
		ps = append(ps, "%"+stem+"%")
	}
	return ps
}

// GraphBuilder assembles a ChangeGraph from the rows an engine reads: the
// objects each CPID of the change touched, their merges, and the changes
// that carry merge sources from outside.
type GraphBuilder struct {
	g       ChangeGraph
	idx     map[string]int
	objs    map[graphObjKey]int
	lastID  int64
	outside map[string]bool
}

type graphObjKey struct{ cpid, group, res, ns, name string }

// NewGraphBuilder starts the graph of change.
func NewGraphBuilder(change string) *GraphBuilder {
	return &GraphBuilder{g: ChangeGraph{Change: change, Outside: map[string][]string{}}, idx: map[string]int{},
		objs: map[graphObjKey]int{}, lastID: -1, outside: map[string]bool{}}
}

// Object adds the writes of one writer to object o with CPID cpid (rows in
// order of their first write).
func (b *GraphBuilder) Object(cpid, origin string, o GraphObject, writer string, writes, attempts int, firstNS int64) {
	i, ok := b.idx[cpid]
	if !ok {
		i = len(b.g.Nodes)
		b.idx[cpid] = i
		b.g.Nodes = append(b.g.Nodes, GraphNode{CPID: cpid, Origin: origin, FirstNS: firstNS})
	}
	n := &b.g.Nodes[i]
	k := graphObjKey{cpid, o.APIGroup, o.Resource, o.Namespace, o.Name}
	j, ok := b.objs[k]
	if !ok {
		j = len(n.Objects)
		b.objs[k] = j
		o.Kind = KindOf("", o.Resource)
		o.FirstNS = firstNS
		n.Objects = append(n.Objects, o)
	}
	n.Objects[j].Writers = append(n.Objects[j].Writers, writer)
	n.Objects[j].Writes += writes
	n.Objects[j].Attempts += attempts
}

// CPIDs are the change's CPIDs added so far, in order.
func (b *GraphBuilder) CPIDs() []string {
	out := make([]string, len(b.g.Nodes))
	for i, n := range b.g.Nodes {
		out[i] = n.CPID
	}
	return out
}

// Merge adds a source (src, "" for a root) of mergelog id of cpid (rows by
// mergelog, sources in order).
func (b *GraphBuilder) Merge(id int64, cpid string, m Merge, src string) {
	n := &b.g.Nodes[b.idx[cpid]]
	if id != b.lastID {
		n.Merges = append(n.Merges, m)
		b.lastID = id
	}
	if src != "" {
		last := &n.Merges[len(n.Merges)-1]
		last.Sources = append(last.Sources, src)
		if _, in := b.idx[src]; !in {
			b.outside[src] = true
		}
	}
}

// Outside are the merge sources from outside the change, sorted.
func (b *GraphBuilder) Outside() []string {
	srcs := make([]string, 0, len(b.outside))
	for c := range b.outside {
		srcs = append(srcs, c)
	}
	slices.Sort(srcs)
	return srcs
}

// Carried records that change carries the outside CPID cpid.
func (b *GraphBuilder) Carried(cpid, change string) {
	if change != "" {
		b.g.Outside[cpid] = append(b.g.Outside[cpid], change)
	}
}

// Graph is the graph built.
func (b *GraphBuilder) Graph() ChangeGraph { return b.g }

// DropIDs removes the ids in drop from ids.
func DropIDs(ids []string, drop ...string) []string {
	out := ids[:0]
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

// SQLReader runs a person's SQL (cpid-tui sql) on a connection that cannot
// write, calling fn with the columns and each row's values: nil, int64,
// float64, string, []byte, or the engine's types (time, numeric...).
type SQLReader interface {
	QuerySQL(ctx context.Context, query string, fn func(columns []string, values []any) error) error
}
