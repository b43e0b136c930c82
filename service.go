package cpid

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The read service: what is done with the rows an engine reads lives here
// once (defaults and limits, the limit+1 "more" check, body filtering,
// kinds, critical marking, cause assembly, typed errors), and for a read
// of several statements which to run, in which order and in which
// snapshot (service_changes.go); the engines implement RowReader, their
// SQL and nothing else, and answer the ChangeReader methods through
// ReadService (benbjohnson/wtf's services over sqlite/).

// Default limits of the reads whose limit is 0.
const (
	// DefaultChanges is how many changes a page of Changes lists.
	DefaultChanges = 100
	// DefaultLogLines is how many log lines ChangeLogs returns.
	DefaultLogLines = 1000
	// DefaultRevisions is how many writes ObjectRevisions returns.
	DefaultRevisions = 200
)

// ChangeSorts are the orders Changes lists in (ChangeQuery.Sort; "" is
// "time").
var ChangeSorts = []string{"time", "duration", "size"}

// CheckSort returns an EINVALID error unless sort is one of ChangeSorts
// or "".
func CheckSort(sort string) error {
	if sort != "" && !slices.Contains(ChangeSorts, sort) {
		return Errorf(EINVALID, "unknown sort %q (%s)", sort, strings.Join(ChangeSorts, ", "))
	}
	return nil
}

// PageSize is q.Limit, or DefaultChanges when q gives none.
func (q ChangeQuery) PageSize() int {
	if q.Limit <= 0 {
		return DefaultChanges
	}
	return q.Limit
}

// InOrder sorts rows (a page of changes, read by id) in the order of ids
// (the page's ids, as its query sorted them).
func InOrder(rows []ChangeRow, ids []string) {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	slices.SortStableFunc(rows, func(a, b ChangeRow) int { return at[a.ID] - at[b.ID] })
}

// IsFailedCode reports whether an HTTP code answers a failed write (an
// attempt): 300 and more.
func IsFailedCode(code int) bool { return code >= 300 }

// LogLimit is limit, or DefaultLogLines when it is 0 or less.
func LogLimit(limit int) int {
	if limit <= 0 {
		return DefaultLogLines
	}
	return limit
}

// Truncate keeps the first limit lines of set (read with limit+1) and
// says whether there were more.
func (set *ChangeLogSet) Truncate(limit int) {
	if len(set.Lines) > limit {
		set.Lines, set.Truncated = set.Lines[:limit], true
	}
}

// NoChange is the error of a read of a change that is not stored.
func NoChange(id string) error { return Errorf(ENOTFOUND, "no change %q", id) }

// NoCPID is the error of a read of a CPID the merge graph does not hold.
func NoCPID(id string) error { return Errorf(ENOTFOUND, "no CPID %q in the merge graph", id) }

// RowScan reads the columns of one row into dest (a driver's Scan).
type RowScan func(dest ...any) error

// RowReader is what an engine reads for ReadService: each method runs the
// engine's SQL and calls row with each row's Scan, in the columns and the
// order its documentation names.
type RowReader interface {
	// Pool returns the engine's ChangeRows, each read a transaction of
	// its own (on its pool of connections).
	Pool() ChangeRows
	// Snapshot calls fn with the engine's ChangeRows within one
	// read-only transaction: every read fn makes sees one state of the
	// database while others write to it.
	Snapshot(ctx context.Context, fn func(ChangeRows) error) error
	// InMergeGraph reports whether a mergelog has the CPID, as its own
	// or as a source.
	InMergeGraph(ctx context.Context, cpid string) (bool, error)
	// WalkDAG returns the CPID and every CPID that descends from it in
	// the merge graph (with up, that it descends from): the CPID first,
	// then the others sorted.
	WalkDAG(ctx context.Context, cpid string, up bool) ([]string, error)
	// HistoryRows reads the columns of HistoryColumns for the writes of
	// q.Object that q's filters keep (its Writer and User in lower case,
	// matched in the lower-cased names), in the view's cluster when
	// q.Object has none: the last n (0: all) in the order of
	// (seq, attempt, stage_ns, event_id), the bodies when q.Bodies asks
	// ("" otherwise).
	HistoryRows(ctx context.Context, q HistoryQuery, n int, row func(RowScan) error) error
	// RevisionRows reads the columns of RevisionColumns for the last n
	// writes of o (of every cluster when o.Cluster is ""), in the order
	// of HistoryRows.
	RevisionRows(ctx context.Context, o ObjectKey, n int, row func(RowScan) error) error
	// TimelineRows reads the columns of TimelineColumns for every write
	// of the changes, by change id, then stage_ns, event_id.
	TimelineRows(ctx context.Context, changes []string, row func(RowScan) error) error
	// SpanRows reads the columns of a SpanRow for the spans of a change:
	// one apiserver span per write, and the controller spans of every
	// CPID related to it, by start_ns, then span_id.
	SpanRows(ctx context.Context, change string, row func(RowScan) error) error
	// PodWriteRows reads the columns of a PodWrite (the Object as text,
	// "" when the audit log has no body) for every successful write of the
	// Pods that a change created (of every change when change is ""), by
	// stage_ns, then event id.
	PodWriteRows(ctx context.Context, change string, row func(RowScan) error) error
	// ObjectMatches finds the objects with writes that q names (q names
	// one resource or more), ordered by cluster, group, resource,
	// namespace, name.
	ObjectMatches(ctx context.Context, q ObjectQuery) ([]ObjectMatch, error)
}

// ReadService answers the reads of ChangeReader that RowReader's rows make.
type ReadService struct {
	Rows RowReader
}

// Timeline returns every write of a change in apiserver order, the
// critical path marked; an unknown change is an ENOTFOUND error.
func (s ReadService) Timeline(ctx context.Context, change string) ([]TimelineEntry, error) {
	if err := s.known(ctx, change); err != nil {
		return nil, err
	}
	ts, err := s.Timelines(ctx, []string{change})
	return ts[change], err
}

// Timelines returns the timelines of these changes in one read, by
// change id, as Timeline would; unknown ids are left out.
func (s ReadService) Timelines(ctx context.Context, changes []string) (map[string][]TimelineEntry, error) {
	out := TimelineSet{}
	if len(changes) == 0 {
		return out, nil
	}
	if err := s.Rows.TimelineRows(ctx, changes, out.Scan); err != nil {
		return nil, fmt.Errorf("timelines: %w", err)
	}
	return out.Done(), nil
}

// Spans returns the spans of a change (RowReader.SpanRows); an unknown
// change is an ENOTFOUND error.
func (s ReadService) Spans(ctx context.Context, change string) ([]SpanRow, error) {
	if err := s.known(ctx, change); err != nil {
		return nil, err
	}
	var out []SpanRow
	err := s.Rows.SpanRows(ctx, change, func(scan RowScan) error {
		var r SpanRow
		if err := scan(&r.Kind, &r.SpanID, &r.ParentID, &r.CPID, &r.Service, &r.Name, &r.StartNS, &r.EndNS); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spans of change %s: %w", change, err)
	}
	return out, nil
}

// Objects finds the objects with writes that a reference may name
// (RowReader.ObjectMatches); a query that names no resource finds none.
func (s ReadService) Objects(ctx context.Context, q ObjectQuery) ([]ObjectMatch, error) {
	if len(q.Resources) == 0 {
		return nil, nil
	}
	return s.Rows.ObjectMatches(ctx, q)
}

// PodWrites returns every successful write of the Pods that a change
// created (all changes when change is ""), in apiserver order, each with
// the Pod after it when the body the audit log kept is one
// (IsObjectBody).
func (s ReadService) PodWrites(ctx context.Context, change string) ([]PodWrite, error) {
	var out []PodWrite
	err := s.Rows.PodWriteRows(ctx, change, func(scan RowScan) error {
		var w PodWrite
		var obj string
		if err := scan(&w.Change, &w.ChangeStartNS, &w.Namespace, &w.Name, &w.Verb, &w.Subresource, &w.StageNS, &obj); err != nil {
			return err
		}
		if IsObjectBody(w.Subresource, []byte(obj)) {
			w.Object = []byte(obj)
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("writes of the pods of change %s: %w", change, err)
	}
	return out, nil
}

// Related returns the CPID and every CPID that descends from it (paper
// Table 2), the CPID first; one the merge graph does not hold is an
// ENOTFOUND error.
func (s ReadService) Related(ctx context.Context, cpid string) ([]string, error) {
	return s.walk(ctx, cpid, false)
}

// Origins returns the CPID and every CPID it descends from, the CPID
// first; one the merge graph does not hold is an ENOTFOUND error.
func (s ReadService) Origins(ctx context.Context, cpid string) ([]string, error) {
	return s.walk(ctx, cpid, true)
}

func (s ReadService) walk(ctx context.Context, cpid string, up bool) ([]string, error) {
	in, err := s.Rows.InMergeGraph(ctx, cpid)
	if err != nil {
		return nil, err
	}
	if !in {
		return nil, NoCPID(cpid)
	}
	return s.Rows.WalkDAG(ctx, cpid, up)
}

// known returns an ENOTFOUND error unless the change is stored.
func (s ReadService) known(ctx context.Context, change string) error {
	ok, err := s.Rows.Pool().ChangeExists(ctx, change)
	if err != nil {
		return err
	}
	if !ok {
		return NoChange(change)
	}
	return nil
}

// HistoryColumns are the columns of RowReader.HistoryRows, in order: a
// write of the object (revisions r, audit_events e), the change it
// belongs to (changes c), its cause (audit_events ce, and cr its
// revision), and the bodies. NULLs read as zero values.
const HistoryColumns = "r.event_id, r.cluster, r.seq, r.order_by, r.stage_ns, e.received_ns, e.verb, e.subresource, e.code, " +
	"r.attempt, e.level, e.resource_version, r.writer, r.writer_is_user, e.username, e.user_agent, " +
	"r.cpid, r.cpid_origin, r.change_id, c.trigger, c.trigger_detail, r.cause_rule, r.cause_event_id, " +
	"ce.stage_ns, cr.writer, ce.verb, ce.subresource, ce.api_group, ce.resource, ce.namespace, ce.name, " +
	"r.hop_ns, r.explain, r.explain_detail, r.confidence, response_object, request_object"

// ObjectHistory returns the writes of one object: the last q.Limit that
// the filters keep (0: all), in the order reconstruct gave them, each with
// its change, what started that change, and its cause; and whether
// earlier ones were left out.
func (s ReadService) ObjectHistory(ctx context.Context, q HistoryQuery) ([]ObjectWrite, bool, error) {
	q.Writer, q.User = strings.ToLower(q.Writer), strings.ToLower(q.User)
	var out []ObjectWrite
	err := s.Rows.HistoryRows(ctx, q, plusOne(q.Limit), func(scan RowScan) error {
		var w ObjectWrite
		var c WriteRef
		if err := scan(&w.EventID, &w.Cluster, &w.Seq, &w.OrderBy, &w.NS, &w.ReceivedNS, &w.Verb, &w.Subresource, &w.Code,
			&w.Attempt, &w.Level, &w.ResourceVersion, &w.Writer, &w.WriterIsUser, &w.User, &w.UserAgent,
			&w.CPID, &w.Origin, &w.Change, &w.Trigger, &w.TriggerDetail, &w.Rule, &c.EventID,
			&c.NS, &c.Writer, &c.Verb, &c.Subresource, &c.APIGroup, &c.Resource, &c.Namespace, &c.Name,
			&w.HopNS, &w.Explain, &w.ExplainDetail, &w.Confidence, &w.Object, &w.Request); err != nil {
			return err
		}
		if c.EventID != 0 {
			w.Cause = &c
		}
		w.Object = storedObject(w.Object, w.Subresource, w.Attempt)
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", q.Object, err)
	}
	out, more := lastOf(out, q.Limit)
	return out, more, nil
}

// RevisionColumns are the columns of RowReader.RevisionRows, in order.
const RevisionColumns = "r.event_id, r.seq, r.attempt, r.order_by, r.stage_ns, r.writer, e.verb, e.subresource, e.code, " +
	"e.level, e.resource_version, r.cpid, r.change_id, response_object, request_object"

// ObjectRevisions returns the last limit writes of an object (0:
// DefaultRevisions) in the order reconstruct gave them (seq), bodies
// included, and whether earlier ones were left out.
func (s ReadService) ObjectRevisions(ctx context.Context, o ObjectKey, limit int) ([]Revision, bool, error) {
	if limit <= 0 {
		limit = DefaultRevisions
	}
	var out []Revision
	err := s.Rows.RevisionRows(ctx, o, limit+1, func(scan RowScan) error {
		var r Revision
		if err := scan(&r.EventID, &r.Seq, &r.Attempt, &r.OrderBy, &r.StageNS, &r.Writer, &r.Verb, &r.Subresource,
			&r.Code, &r.Level, &r.ResourceVersion, &r.CPID, &r.ChangeID, &r.Object, &r.Request); err != nil {
			return err
		}
		r.Object = storedObject(r.Object, r.Subresource, r.Attempt)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("revisions of %s: %w", o, err)
	}
	out, more := lastOf(out, limit)
	return out, more, nil
}

// storedObject is the object a write stored, from its response body: none
// for a failed write, nor when the body is no object (a Status, a
// binding's answer).
func storedObject(body, subresource string, attempt bool) string {
	if body == "" || attempt || !IsObjectBody(subresource, []byte(body)) {
		return ""
	}
	return body
}

// plusOne is how many rows to read to know whether there are more than
// limit: limit+1, or 0 (all) for no limit.
func plusOne(limit int) int {
	if limit <= 0 {
		return 0
	}
	return limit + 1
}

// lastOf keeps the last limit of rows read with plusOne(limit), and says
// whether there were more.
func lastOf[T any](rows []T, limit int) ([]T, bool) {
	if limit > 0 && len(rows) > limit {
		return rows[len(rows)-limit:], true
	}
	return rows, false
}

// Rows is a driver's result set, as EachRow reads it (database/sql's
// *Rows, pgx's Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// EachRow calls row with the Scan of each row of rows, and returns the
// first error, of row or of rows. The caller closes rows.
func EachRow(rows Rows, row func(RowScan) error) error {
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
