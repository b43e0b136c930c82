package cpid

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The read service's reads of changes, their graphs, logs and controller
// spans. Each engine implements ChangeRows, a statement a method;
// ReadService decides what to read next from what was read, within one
// snapshot where a read takes several statements, and holds the defaults,
// orders, limits and not-found errors.

// ChangeRows are an engine's reads behind ReadService's changes, graphs,
// logs and controller spans: each method runs one statement, in the view's
// cluster where it reads changes, and hands back its rows or its values.
// RowReader.Pool gives them each on its own, RowReader.Snapshot within one
// read-only transaction.
type ChangeRows interface {
	// ChangeExists reports whether a change of that id is stored.
	ChangeExists(ctx context.Context, id string) (bool, error)
	// ChangePage returns the ids of the changes q's filters keep
	// (ChangeQuery's fields; Filter, User and Writer are lower case), in
	// the order of q.Sort, one of ChangeSorts (time: newest first by
	// started_ns; duration: longest first by settled_ns - started_ns;
	// size: most writes first), then by id: q.Limit of them from
	// q.Offset.
	ChangePage(ctx context.Context, q ChangeQuery) ([]string, error)
	// ChangeCount counts the changes q's filters keep.
	ChangeCount(ctx context.Context, q ChangeQuery) (int, error)
	// ChangeRowsByID reads the columns of ChangeColumns for the changes
	// of these ids (at least one), newest first, then by id.
	ChangeRowsByID(ctx context.Context, ids []string, row func(RowScan) error) error
	// LinkedIDs returns the change ids ("" for a write of none) of the
	// writes that carry a CPID descending from cpid in the merge graph
	// (with up, that cpid descends from), cpid included.
	LinkedIDs(ctx context.Context, cpid string, up bool) ([]string, error)
	// CarryingIDs returns the change ids ("" for a write of none) of the
	// writes that carry one of these CPIDs (at least one), sorted, each
	// once.
	CarryingIDs(ctx context.Context, cpids []string) ([]string, error)
	// GraphObjectRows reads the columns of GraphObjectColumns for the
	// writes of a change that carry a CPID, a row for each CPID, object
	// and writer, in the order of their first write (stage_ns, event_id).
	GraphObjectRows(ctx context.Context, change string, row func(RowScan) error) error
	// MergeRows reads the columns of MergeColumns for the mergelogs of
	// these CPIDs (at least one), a row for each source (one with source
	// "" for a mergelog without), by ts_ns, mergelog id, then the
	// sources' position.
	MergeRows(ctx context.Context, cpids []string, row func(RowScan) error) error
	// CarrierRows reads (cpid, change id or "") for the writes that carry
	// one of these CPIDs (at least one), each pair once, by cpid, then
	// change id.
	CarrierRows(ctx context.Context, cpids []string, row func(RowScan) error) error
	// ChangeWindowRow reads (started_ns, settled_ns, cluster) of a
	// change: no row when it is not stored.
	ChangeWindowRow(ctx context.Context, change string, row func(RowScan) error) error
	// ChangeWriters returns the writers of a change's writes that are no
	// user, each once, in the order of their first write.
	ChangeWriters(ctx context.Context, change string) ([]string, error)
	// LogRows reads the columns of LogColumns for the log lines q asks
	// for (LogQuery).
	LogRows(ctx context.Context, q LogQuery, row func(RowScan) error) error
	// LogsCarry reports whether a log line of [fromNS, toNS] carries one
	// of the CPIDs related to a change (LogQuery).
	LogsCarry(ctx context.Context, change string, fromNS, toNS int64) (bool, error)
	// ChangeSpanRows reads the columns of a ChangeSpan, in order, for the
	// controller spans of the CPIDs a change's writes carry, by start_ns,
	// then span_id.
	ChangeSpanRows(ctx context.Context, change string, row func(RowScan) error) error
	// IDStats reads the CPIDs' table the mergelogs keep (cpid_ids): the
	// most characters two CPIDs next to each other share (nil for none)
	// and how many CPIDs there are, two at most.
	IDStats(ctx context.Context) (shared *int, n int, err error)
	// IDsNear returns the CPIDs next to each of ids (at least one) on
	// either side, in that table, those there are.
	IDsNear(ctx context.Context, ids []string) ([]string, error)
}

// CPIDPrefixes reads what IDLength needs of the CPIDs for ids, in one
// snapshot (PrefixReader): the CPIDs' neighbours only when a shortened id
// may be ambiguous.
func (s ReadService) CPIDPrefixes(ctx context.Context, ids []string) (CPIDPrefixes, error) {
	var p CPIDPrefixes
	err := s.Rows.Snapshot(ctx, func(r ChangeRows) error {
		shared, n, err := r.IDStats(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if p, ok = PrefixesOf(shared, n); !ok || len(ids) == 0 {
			return nil
		}
		p.Near, err = r.IDsNear(ctx, ids)
		return err
	})
	if err != nil {
		return CPIDPrefixes{}, fmt.Errorf("prefixes of the CPIDs: %w", err)
	}
	return p, nil
}

// ChangeColumns are the columns of ChangeRows.ChangeRowsByID, in order:
// a ChangeRow's, Kind as the kind of the stored response of the change's
// first write when its resource is no built-in one ("" otherwise).
const ChangeColumns = "id, started_ns, settled_ns, user, user_agent, verb, kind, api_group, resource, subresource, " +
	"namespace, name, writes, objects, slowest_hop_ns, cluster, trigger, trigger_detail, traceparent"

// GraphObjectColumns are the columns of ChangeRows.GraphObjectRows, in
// order: the CPID, the cpid_origin of its first write ("" for none), the
// object (api_group, resource, namespace, name), the writer, its
// successful writes, its failed writes, and the stage_ns of its first.
const GraphObjectColumns = "cpid, origin, api_group, resource, namespace, name, writer, writes, attempts, first_ns"

// MergeColumns are the columns of ChangeRows.MergeRows, in order: the
// mergelog's id, its CPID, origin, service, ts_ns, and a source CPID.
const MergeColumns = "id, cpid, origin, service, ts_ns, source_cpid"

// LogColumns are the columns of ChangeRows.LogRows, in order: a
// LogLine's (File the path of its file).
const LogColumns = "id, ts_ns, level, component, msg, cpid, fields, path, line"

// LogQuery is what ChangeRows.LogRows reads: the log lines of [FromNS,
// ToNS] that carry one of the CPIDs related to Change (its id, the root
// CPID, and every CPID descending from it in the merge graph, and those
// its writes carry), or that Cluster logged from a process that logged one of
// them or whose file path or component (lower case) matches one of
// Patterns (SQL LIKE); the first Limit of them by ts_ns, then id.
type LogQuery struct {
	Change       string
	Cluster      string
	FromNS, ToNS int64
	Patterns     []string
	Limit        int
}

// changePage is q as ChangePage reads it: a sort and a limit always given,
// the text filters in lower case.
func (q ChangeQuery) changePage() ChangeQuery {
	if q.Sort == "" {
		q.Sort = ChangeSorts[0]
	}
	q.Limit = q.PageSize()
	q.Filter, q.User, q.Writer = strings.ToLower(q.Filter), strings.ToLower(q.User), strings.ToLower(q.Writer)
	return q
}

// Changes lists root changes, one page (ChangeQuery), in two steps within
// one snapshot: the page's ids from the changes alone, then their rows,
// so that a deep page or a sort by duration on a large database does not
// join and decode every row it sorts or skips. An unknown sort is an
// EINVALID error.
func (s ReadService) Changes(ctx context.Context, q ChangeQuery) ([]ChangeRow, error) {
	if err := CheckSort(q.Sort); err != nil {
		return nil, err
	}
	q = q.changePage()
	var ids []string
	var out []ChangeRow
	err := s.Rows.Snapshot(ctx, func(r ChangeRows) error {
		var err error
		if ids, err = r.ChangePage(ctx, q); err != nil {
			return err
		}
		out, err = changesByID(ctx, r, ids)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	InOrder(out, ids)
	return out, nil
}

// CountChanges counts the changes that Changes lists for the same filter.
func (s ReadService) CountChanges(ctx context.Context, filter string) (int, error) {
	n, err := s.Rows.Pool().ChangeCount(ctx, ChangeQuery{Filter: filter}.changePage())
	if err != nil {
		return 0, fmt.Errorf("count changes: %w", err)
	}
	return n, nil
}

// ChangesByID returns the changes with these ids, newest first; unknown
// ids are left out.
func (s ReadService) ChangesByID(ctx context.Context, ids []string) ([]ChangeRow, error) {
	out, err := changesByID(ctx, s.Rows.Pool(), ids)
	if err != nil {
		return nil, fmt.Errorf("changes by id: %w", err)
	}
	return out, nil
}

// changesByID reads the changes of ids with r, none for no ids.
func changesByID(ctx context.Context, r ChangeRows, ids []string) ([]ChangeRow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []ChangeRow
	err := r.ChangeRowsByID(ctx, ids, func(scan RowScan) error {
		var c ChangeRow
		if err := scan(&c.ID, &c.StartedNS, &c.SettledNS, &c.User, &c.UserAgent, &c.Verb, &c.Kind, &c.APIGroup, &c.Resource,
			&c.Subresource, &c.Namespace, &c.Name, &c.Writes, &c.Objects, &c.SlowestHopNS, &c.Cluster, &c.Trigger,
			&c.TriggerDetail, &c.Traceparent); err != nil {
			return err
		}
		c.Kind = KindOf(c.Kind, c.Resource)
		out = append(out, c)
		return nil
	})
	return out, err
}

// ChangesCarrying returns the ids of the changes with a write carrying one
// of the CPIDs, sorted.
func (s ReadService) ChangesCarrying(ctx context.Context, cpids []string) ([]string, error) {
	if len(cpids) == 0 {
		return nil, nil
	}
	ids, err := s.Rows.Pool().CarryingIDs(ctx, cpids)
	if err != nil {
		return nil, fmt.Errorf("changes carrying CPIDs: %w", err)
	}
	return nonEmpty(DropIDs(ids, "")), nil
}

// LinkedChanges returns the changes, other than change, that a CPID is
// linked to through the merge DAG: with ancestors, the changes whose CPIDs
// it descends from (its origins); otherwise the changes whose CPIDs
// descend from it (what it went on to cause). Newest first.
func (s ReadService) LinkedChanges(ctx context.Context, change, cpid string, ancestors bool) ([]ChangeRow, error) {
	var out []ChangeRow
	err := s.Rows.Snapshot(ctx, func(r ChangeRows) error {
		ids, err := r.LinkedIDs(ctx, cpid, ancestors)
		if err != nil {
			return err
		}
		out, err = changesByID(ctx, r, DropIDs(ids, "", change))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("linked changes of %s: %w", cpid, err)
	}
	return out, nil
}

// nonEmpty is ids, nil when it holds none: what an engine read as an
// empty list reads as none, whichever engine read it.
func nonEmpty(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	return slices.Clip(ids)
}

// ChangeGraph reads the CPIDs of a change, the objects each touched and
// their merges, and the changes that carry the merges' sources from
// outside it, in one snapshot; an unknown change is an ENOTFOUND error.
func (s ReadService) ChangeGraph(ctx context.Context, change string) (ChangeGraph, error) {
	b := NewGraphBuilder(change)
	err := s.Rows.Snapshot(ctx, func(r ChangeRows) error {
		err := r.GraphObjectRows(ctx, change, func(scan RowScan) error {
			var cpid, origin, writer string
			var o GraphObject
			var writes, attempts int
			var first int64
			if err := scan(&cpid, &origin, &o.APIGroup, &o.Resource, &o.Namespace, &o.Name, &writer, &writes, &attempts, &first); err != nil {
				return err
			}
			b.Object(cpid, origin, o, writer, writes, attempts, first)
			return nil
		})
		if err != nil {
			return fmt.Errorf("graph of change %s: %w", change, err)
		}
		cpids := b.CPIDs()
		if len(cpids) == 0 {
			// No CPID: a change of writes that carry none, or no change.
			ok, err := r.ChangeExists(ctx, change)
			if err != nil {
				return fmt.Errorf("graph of change %s: %w", change, err)
			}
			if !ok {
				return NoChange(change)
			}
			return nil
		}
		err = r.MergeRows(ctx, cpids, func(scan RowScan) error {
			var id int64
			var cpid, src string
			var m Merge
			if err := scan(&id, &cpid, &m.Origin, &m.Service, &m.TimeNS, &src); err != nil {
				return err
			}
			b.Merge(id, cpid, m, src)
			return nil
		})
		if err != nil {
			return fmt.Errorf("merges of change %s: %w", change, err)
		}
		srcs := b.Outside()
		if len(srcs) == 0 {
			return nil
		}
		err = r.CarrierRows(ctx, srcs, func(scan RowScan) error {
			var cpid, carrier string
			if err := scan(&cpid, &carrier); err != nil {
				return err
			}
			b.Carried(cpid, carrier)
			return nil
		})
		if err != nil {
			return fmt.Errorf("changes of merge sources: %w", err)
		}
		return nil
	})
	return b.Graph(), err
}

// ChangeLogs returns, in time order, at most limit (0: DefaultLogLines)
// log lines of a change, every one logged in its time window, from its
// start to LogWindowLag after it settled: those that carry one of its
// related CPIDs (LogQuery), and every other line of its writers'
// processes (WriterPatterns) and of the processes that logged those
// CPIDs (instrumented controllers log more than their mergelogs). Exact
// says that some line carries one of the CPIDs; without one
// (uninstrumented clusters), the lines are a guess by time and process.
// An unknown change is an ENOTFOUND error.
func (s ReadService) ChangeLogs(ctx context.Context, change string, limit int) (ChangeLogSet, error) {
	var set ChangeLogSet
	limit = LogLimit(limit)
	err := s.Rows.Snapshot(ctx, func(r ChangeRows) error {
		q := LogQuery{Change: change, Limit: limit + 1}
		found := false
		err := r.ChangeWindowRow(ctx, change, func(scan RowScan) error {
			found = true
			return scan(&q.FromNS, &q.ToNS, &q.Cluster)
		})
		if err != nil {
			return fmt.Errorf("logs of change %s: %w", change, err)
		}
		if !found {
			return NoChange(change)
		}
		q.ToNS += LogWindowLag
		set.FromNS, set.ToNS = q.FromNS, q.ToNS
		ws, err := r.ChangeWriters(ctx, change)
		if err != nil {
			return fmt.Errorf("writers of change %s: %w", change, err)
		}
		set.Writers = nonEmpty(ws)
		for _, w := range set.Writers {
			q.Patterns = append(q.Patterns, WriterPatterns(w)...)
		}
		err = r.LogRows(ctx, q, func(scan RowScan) error {
			var l LogLine
			if err := scan(&l.ID, &l.TimeNS, &l.Level, &l.Component, &l.Msg, &l.CPID, &l.Fields, &l.File, &l.Line); err != nil {
				return err
			}
			set.Lines = append(set.Lines, l)
			return nil
		})
		if err != nil {
			return fmt.Errorf("logs of change %s: %w", change, err)
		}
		if set.Exact, err = r.LogsCarry(ctx, change, q.FromNS, q.ToNS); err != nil {
			return fmt.Errorf("logs of change %s: %w", change, err)
		}
		return nil
	})
	if err != nil {
		return set, err
	}
	set.Truncate(limit)
	return set, nil
}

// ChangeSpans returns the controller spans of the CPIDs a change's writes
// carry, by start (none for an unknown change).
func (s ReadService) ChangeSpans(ctx context.Context, change string) ([]ChangeSpan, error) {
	var out []ChangeSpan
	err := s.Rows.Pool().ChangeSpanRows(ctx, change, func(scan RowScan) error {
		var sp ChangeSpan
		if err := scan(&sp.SpanID, &sp.ParentID, &sp.CPID, &sp.Service, &sp.Name, &sp.StartNS, &sp.EndNS); err != nil {
			return err
		}
		out = append(out, sp)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spans of change %s: %w", change, err)
	}
	return out, nil
}
