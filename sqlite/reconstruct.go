package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// Watermark is where the last reconstruct stopped. Writes received up to
// CutoffNS are final; later ones were processed provisionally and are
// redone by the next run, which goes on from EngineData, the engine's state
// at the cutoff.
type Watermark struct {
	CutoffNS   int64
	EventID    int64 // the last audit_events.id seen
	LogID      int64 // the last log_records.id seen
	HasState   bool
	EngineData []byte
}

// ReconstructWatermark reads where the last reconstruct stopped.
func (s *Store) ReconstructWatermark(ctx context.Context) (Watermark, error) {
	var w Watermark
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM reconstruct_state`)
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v any
		if err := rows.Scan(&k, &v); err != nil {
			return w, err
		}
		switch k {
		case "event_id":
			w.EventID, _ = v.(int64)
		case "cutoff_ns":
			w.CutoffNS, _ = v.(int64)
		case "log_id":
			w.LogID, _ = v.(int64)
		case "engine":
			w.EngineData, _ = v.([]byte)
			w.HasState = len(w.EngineData) > 0
		}
	}
	return w, rows.Err()
}

// Late counts what was ingested since the watermark and belongs before its
// cutoff: writes received before it, and mergelog records of instrumented
// controllers logged before it (an audit log ingested before the controller
// logs that explain it). Either would change what is final, so the run
// must rebuild.
func (s *Store) Late(ctx context.Context, w Watermark) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM audit_events WHERE id > ?1 AND received_ns <= ?2 AND `+writeTerms+`) +
		(SELECT count(*) FROM log_records WHERE id > ?3 AND ts_ns <= ?2 AND msg = ?4)`,
		w.EventID, w.CutoffNS, w.LogID, cpid.MsgMergelog).Scan(&n)
	return n, err
}

// LatestWrite returns the latest receive time of a write with id <= upToID.
func (s *Store) LatestWrite(ctx context.Context, upToID int64) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(received_ns), 0) FROM audit_events WHERE id <= ? AND `+writeTerms,
		upToID).Scan(&ns)
	return ns, err
}

// LastIDs returns the highest audit_events.id and log_records.id stored.
func (s *Store) LastIDs(ctx context.Context) (event, log int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COALESCE(max(id), 0) FROM audit_events), (SELECT COALESCE(max(id), 0) FROM log_records)`).Scan(&event, &log)
	return
}

// writeTerms select the writes among audit events: the final stage of a
// create, update, patch, delete or deletecollection. They repeat the WHERE
// of the partial index audit_events_writes word for word (migration 0004).
const writeTerms = `stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')`

// ignoredTerms leave out the writes the engine ignores (reconstruct.Ignored).
func ignoredTerms() string {
	var res, sub []string
	for k := range reconstruct.Ignored {
		if r, sr, ok := strings.Cut(k, "/"); ok {
			sub = append(sub, fmt.Sprintf(" AND NOT (e.resource = '%s' AND e.subresource = '%s')", r, sr))
		} else {
			res = append(res, "'"+k+"'")
		}
	}
	sort.Strings(res)
	sort.Strings(sub)
	return "e.resource NOT IN (" + strings.Join(res, ", ") + ")" + strings.Join(sub, "")
}

// ScanWrites calls fn for every write event the engine does not ignore
// received after afterNS, with id <= upToID, in the order the apiserver
// received them, then id: a write can only have been caused by writes
// received before it. fn may keep the events it is given.
func (s *Store) ScanWrites(ctx context.Context, afterNS, upToID int64, fn func(*reconstruct.Event) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT e.id, e.audit_id, e.verb, e.api_group, e.resource,
		e.subresource, e.namespace, e.name, e.uid, e.resource_version, e.username, e.user_agent, COALESCE(e.code, 0),
		e.received_ns, e.stage_ns, COALESCE(e.cpid, ''), e.cpid_ancestors, e.owner_refs,
		CASE WHEN e.resource IN ('pods', 'nodes', 'endpointslices', 'endpoints') THEN b.response_object END, b.request_object,
		e.file_id
		FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
		WHERE e.received_ns > ? AND e.id <= ? AND e.`+strings.ReplaceAll(writeTerms, " AND verb", " AND e.verb")+`
		  AND `+ignoredTerms()+`
		ORDER BY e.received_ns, e.id`, afterNS, upToID)
	if err != nil {
		return err
	}
	defer rows.Close()
	families, err := s.fileFamilies(ctx)
	if err != nil {
		return err
	}
	var slab []reconstruct.Event
	var resp, req sql.RawBytes
	for rows.Next() {
		var anc, owners sql.NullString
		var fileID int64
		if len(slab) == 0 {
			slab = make([]reconstruct.Event, 256)
		}
		e := &slab[0]
		slab = slab[1:]
		if err := rows.Scan(&e.ID, &e.AuditID, &e.Verb, &e.APIGroup, &e.Resource, &e.Subresource,
			&e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent, &e.Code, &e.ReceivedNS,
			&e.StageNS, &e.CPID, &anc, &owners, &resp, &req, &fileID); err != nil {
			return err
		}
		e.Source = families[fileID]
		if anc.Valid {
			json.Unmarshal([]byte(anc.String), &e.Ancestors)
		}
		if owners.Valid {
			json.Unmarshal([]byte(owners.String), &e.OwnerRefs)
		}
		// Only the kinds whose rules and anomaly checks read the object
		// after the write have it fetched (reconstruct's readBody and
		// transitions): a Deployment's or a ReplicaSet's body is not read.
		if len(resp) > 0 && isObjectBody(e.Subresource, string(resp[:min(len(resp), len(`{"kind":"Status"`))])) {
			e.Object = bytes.Clone(resp)
		}
		if len(req) > 0 {
			e.Request = bytes.Clone(req)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// fileFamilies maps files.id to the rotation family of the file (ingest.Family).
func (s *Store) fileFamilies(ctx context.Context) (map[int64]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, path FROM files`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var path string
		if err := rows.Scan(&id, &path); err != nil {
			return nil, err
		}
		out[id] = ingest.Family(path)
	}
	return out, rows.Err()
}

// isObjectBody reports whether a response body is the written object, not a
// Status (bindings, most deletes) or another kind (a Scale).
func isObjectBody(sub, body string) bool {
	if body == "" || (sub != "" && sub != "status") {
		return false
	}
	return !strings.HasPrefix(body, `{"kind":"Status"`) && !strings.HasPrefix(body, `{"kind":"Scale"`)
}

// ScanCPIDRecords calls fn for the mergelog and span records (messages
// cpid.MsgMergelog and MsgSpan) among the log records with
// afterID < id <= upToID, in id order.
func (s *Store) ScanCPIDRecords(ctx context.Context, afterID, upToID int64, fn func(id, tsNS int64, msg string, fields []byte) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ts_ns, msg, fields FROM log_records
		WHERE id > ? AND id <= ? AND msg IN (?, ?) ORDER BY id`, afterID, upToID, cpid.MsgMergelog, cpid.MsgSpan)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, ts int64
		var msg string
		var fields []byte
		if err := rows.Scan(&id, &ts, &msg, &fields); err != nil {
			return err
		}
		if err := fn(id, ts, msg, fields); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ScanMergelogs calls fn for every stored mergelog that is final at the
// cutoff (from a log, or from a write received up to it), oldest first, to
// rebuild the merge graph.
func (s *Store) ScanMergelogs(ctx context.Context, cutoffNS int64, fn func(reconstruct.Mergelog) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(s.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id
		LEFT JOIN audit_events e ON e.id = m.event_id
		WHERE m.event_id IS NULL OR e.received_ns <= ?
		ORDER BY m.id, s.pos`, cutoffNS)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur reconstruct.Mergelog
	curID := int64(-1)
	for rows.Next() {
		var id int64
		var m reconstruct.Mergelog
		var src string
		if err := rows.Scan(&id, &m.CPID, &m.TimeNS, &m.Service, &m.Origin, &src); err != nil {
			return err
		}
		if id != curID {
			if curID >= 0 {
				if err := fn(cur); err != nil {
					return err
				}
			}
			cur, curID = m, id
		}
		if src != "" {
			cur.Sources = append(cur.Sources, src)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if curID >= 0 {
		return fn(cur)
	}
	return nil
}

// deleteProvisional deletes what was derived from writes received after ns.
func deleteProvisional(ctx context.Context, tx *sql.Tx, ns int64) error {
	for _, q := range []string{
		`DELETE FROM revisions WHERE stage_ns > ?1 AND event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
		`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT m.id FROM mergelogs m JOIN audit_events e ON e.id = m.event_id WHERE e.received_ns > ?1)`,
		`DELETE FROM mergelogs WHERE event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
		`DELETE FROM changes WHERE started_ns > ?1`,
		`DELETE FROM anomalies WHERE event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
	} {
		if _, err := tx.ExecContext(ctx, q, ns); err != nil {
			return err
		}
	}
	return nil
}

func nullInt64(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func nullHop(x reconstruct.Write) any {
	if x.CauseEventID == 0 {
		return nil
	}
	return x.HopNS
}

// summarizeChanges recomputes the summary columns of the given changes from
// their revisions.
func summarizeChanges(ctx context.Context, tx *sql.Tx, ids map[string]bool) error {
	st, err := tx.PrepareContext(ctx, `UPDATE changes SET
		settled_ns = COALESCE((SELECT max(r.stage_ns) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0), settled_ns),
		writes = (SELECT count(*) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0),
		objects = (SELECT count(*) FROM (SELECT DISTINCT api_group, resource, namespace, name FROM revisions r
		           WHERE r.change_id = changes.id AND r.attempt = 0)),
		slowest_hop_ns = (SELECT max(hop_ns) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0),
		slowest_hop_event_id = (SELECT event_id FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0
		           AND r.hop_ns IS NOT NULL ORDER BY r.hop_ns DESC, r.event_id LIMIT 1)
		WHERE id = ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	for id := range ids {
		if _, err := st.ExecContext(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// relabelRevisions marks the revisions of the given objects (except those
// reordered, which orderRevisions did) as ordered by time.
func relabelRevisions(ctx context.Context, tx *sql.Tx, objects, skip map[reconstruct.ObjectKey]bool) error {
	up, err := tx.PrepareContext(ctx, `UPDATE revisions SET order_by = 'time'
		WHERE resource = ? AND namespace = ? AND name = ? AND api_group = ? AND order_by != 'time'`)
	if err != nil {
		return err
	}
	defer up.Close()
	for k := range objects {
		if skip[k] {
			continue
		}
		if _, err := up.ExecContext(ctx, k.Resource, k.Namespace, k.Name, k.Group); err != nil {
			return err
		}
	}
	return nil
}

// orderRevisions numbers the revisions of each given object, reading them
// back from the table: by resourceVersion (etcd revision) when every one of
// them parses as an integer, by apiserver time otherwise; which was used is
// recorded.
func orderRevisions(ctx context.Context, tx *sql.Tx, objects map[reconstruct.ObjectKey]bool) error {
	type row struct {
		id      int64
		rv      string
		stageNS int64
	}
	up, err := tx.PrepareContext(ctx, `UPDATE revisions SET seq = ?, order_by = ? WHERE event_id = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	q, err := tx.PrepareContext(ctx, `SELECT r.event_id, e.resource_version, r.stage_ns FROM revisions r
		JOIN audit_events e ON e.id = r.event_id
		WHERE r.api_group = ? AND r.resource = ? AND r.namespace = ? AND r.name = ?`)
	if err != nil {
		return err
	}
	defer q.Close()
	for k := range objects {
		rows, err := q.QueryContext(ctx, k.Group, k.Resource, k.Namespace, k.Name)
		if err != nil {
			return err
		}
		var rs []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.rv, &r.stageNS); err != nil {
				rows.Close()
				return err
			}
			rs = append(rs, r)
		}
		rows.Close()
		ids, by := reconstruct.OrderRevisions(len(rs), func(i int) (int64, string, int64) { return rs[i].id, rs[i].rv, rs[i].stageNS })
		for i, id := range ids {
			if _, err := up.ExecContext(ctx, i+1, by, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Prune deletes CPIDs from the merge graph by the rules of section 3.4.2 of
// the CPID paper (reconstruct.Graph.Prune) under the budget, in one
// transaction, and returns the deleted CPIDs. Revisions keep their CPID;
// a later full reconstruct rebuilds the whole graph.
func (s *Store) Prune(ctx context.Context, b reconstruct.Budget, dryRun bool) ([]string, int, error) {
	g := reconstruct.NewGraph()
	if err := s.ScanMergelogs(ctx, math.MaxInt64, func(m reconstruct.Mergelog) error { return g.Add(m) }); err != nil {
		return nil, 0, err
	}
	before := g.Len()
	removed := g.Prune(b)
	if dryRun || len(removed) == 0 {
		return removed, before, nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cpid = ?1)`,
			`DELETE FROM mergelog_sources WHERE source_cpid = ?1`,
			`DELETE FROM mergelogs WHERE cpid = ?1`,
		} {
			st, err := tx.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			for _, c := range removed {
				if _, err := st.ExecContext(ctx, c); err != nil {
					st.Close()
					return err
				}
			}
			st.Close()
		}
		return nil
	})
	return removed, before, err
}

// NewestMergelog returns the time of the newest mergelog, 0 when none.
func (s *Store) NewestMergelog(ctx context.Context) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(ts_ns), 0) FROM mergelogs`).Scan(&ns)
	return ns, err
}
