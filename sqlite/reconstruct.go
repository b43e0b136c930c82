package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

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

// Late counts the writes ingested since the watermark that were received
// before its cutoff: they would change what is final, so the run must
// rebuild.
func (s *Store) Late(ctx context.Context, w Watermark) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM audit_events WHERE id > ? AND received_ns <= ?
		AND stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')`,
		w.EventID, w.CutoffNS).Scan(&n)
	return n, err
}

// LatestWrite returns the latest receive time of a write with id <= upToID.
func (s *Store) LatestWrite(ctx context.Context, upToID int64) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(received_ns), 0) FROM audit_events WHERE id <= ?
		AND stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')`,
		upToID).Scan(&ns)
	return ns, err
}

// LastIDs returns the highest audit_events.id and log_records.id stored.
func (s *Store) LastIDs(ctx context.Context) (event, log int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COALESCE(max(id), 0) FROM audit_events), (SELECT COALESCE(max(id), 0) FROM log_records)`).Scan(&event, &log)
	return
}

// ScanWrites calls fn for every write event (final stage of create, update,
// patch, delete, deletecollection) received after afterNS, with id <= upToID,
// in the order the apiserver received them, then id: a write can only have
// been caused by writes received before it.
func (s *Store) ScanWrites(ctx context.Context, afterNS, upToID int64, fn func(*reconstruct.Event) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT e.id, e.audit_id, e.verb, e.api_group, e.api_version, e.resource,
		e.subresource, e.namespace, e.name, e.uid, e.resource_version, e.username, e.user_agent, COALESCE(e.code, 0),
		e.received_ns, e.stage_ns, COALESCE(e.cpid, ''), e.cpid_ancestors, e.owner_refs,
		CASE WHEN e.resource IN ('pods', 'nodes', 'endpointslices', 'endpoints') THEN b.response_object END, b.request_object,
		f.path
		FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id JOIN files f ON f.id = e.file_id
		WHERE e.received_ns > ? AND e.id <= ? AND e.stage IN ('ResponseComplete', 'Panic')
		  AND e.verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')
		ORDER BY e.received_ns, e.id`, afterNS, upToID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var e reconstruct.Event
	families := map[string]string{}
	for rows.Next() {
		var anc, owners, resp, req sql.NullString
		var path string
		e = reconstruct.Event{}
		if err := rows.Scan(&e.ID, &e.AuditID, &e.Verb, &e.APIGroup, &e.APIVersion, &e.Resource, &e.Subresource,
			&e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent, &e.Code, &e.ReceivedNS,
			&e.StageNS, &e.CPID, &anc, &owners, &resp, &req, &path); err != nil {
			return err
		}
		if e.Source = families[path]; e.Source == "" {
			e.Source = ingest.Family(path)
			families[path] = e.Source
		}
		if anc.Valid {
			json.Unmarshal([]byte(anc.String), &e.Ancestors)
		}
		if owners.Valid {
			json.Unmarshal([]byte(owners.String), &e.OwnerRefs)
		}
		// Only the kinds whose rules and anomaly checks read the object
		// after the write have it fetched (reconstruct's readBody and
		// transitions): a Deployment's or a ReplicaSet's body is not read.
		if resp.Valid && isObjectBody(e.Subresource, resp.String) {
			e.Object = json.RawMessage(resp.String)
		}
		if req.Valid {
			e.Request = json.RawMessage(req.String)
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// isObjectBody reports whether a response body is the written object, not a
// Status (bindings, most deletes) or another kind (a Scale).
func isObjectBody(sub, body string) bool {
	if sub != "" && sub != "status" {
		return false
	}
	b := []byte(body)
	return !bytes.HasPrefix(b, []byte(`{"kind":"Status"`)) && !bytes.HasPrefix(b, []byte(`{"kind":"Scale"`))
}

// ScanCPIDRecords calls fn for the mergelog and span records (messages
// reconstruct.MsgMergelog and MsgSpan) among the log records with
// afterID < id <= upToID, in id order.
func (s *Store) ScanCPIDRecords(ctx context.Context, afterID, upToID int64, fn func(id, tsNS int64, msg string, fields []byte) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ts_ns, msg, fields FROM log_records
		WHERE id > ? AND id <= ? AND msg IN (?, ?) ORDER BY id`, afterID, upToID, reconstruct.MsgMergelog, reconstruct.MsgSpan)
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

// ResetReconstruction deletes everything reconstruct derived, for a full rebuild.
func (s *Store) ResetReconstruction(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, t := range []string{"mergelog_sources", "mergelogs", "revisions", "changes", "anomalies", "controller_spans", "reconstruct_state"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveReconstruction stores one run of the engine and the new watermark (its
// EngineData the state at w.CutoffNS) in one transaction: it first deletes
// what the previous run derived provisionally from writes received after
// redoFromNS (the previous cutoff; pass -1 after ResetReconstruction), then
// stores the run's output, and brings the summaries of the changes and the
// order of the objects it touched up to date.
func (s *Store) SaveReconstruction(ctx context.Context, en *reconstruct.Engine, w Watermark, redoFromNS int64) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if redoFromNS >= 0 {
			if err := deleteProvisional(ctx, tx, redoFromNS); err != nil {
				return err
			}
		}
		rev, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO revisions(event_id, api_group, resource, namespace,
			name, seq, order_by, attempt, stage_ns, writer, writer_is_user, cpid, cpid_origin, cause_event_id,
			cause_rule, change_id, hop_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer rev.Close()
		changes := map[string]bool{}
		objects := map[reconstruct.ObjectKey]bool{}
		// After a reset the run's writes are all there is: number them now.
		// Otherwise orderRevisions renumbers the objects from the table.
		var order map[int64]seqOf
		if redoFromNS < 0 {
			order = orderWrites(en.Writes)
		}
		for _, x := range en.Writes {
			o := order[x.EventID]
			if o.by == "" {
				o.by = "time"
			}
			if _, err := rev.ExecContext(ctx, x.EventID, x.Key.Group, x.Key.Resource, x.Key.Namespace, x.Key.Name,
				o.seq, o.by, x.Attempt, x.StageNS, x.Writer.Name, x.Writer.User, nullString(x.CPID), nullString(x.CPIDOrigin),
				nullInt64(x.CauseEventID), nullString(x.Rule), nullString(x.ChangeID), nullHop(x)); err != nil {
				return fmt.Errorf("save revision of event %d: %w", x.EventID, err)
			}
			if x.ChangeID != "" {
				changes[x.ChangeID] = true
			}
			objects[x.Key] = true
		}
		ml, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO mergelogs(cpid, ts_ns, service, origin, event_id) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ml.Close()
		src, err := tx.PrepareContext(ctx, `INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer src.Close()
		for _, m := range en.Mergelogs {
			r, err := ml.ExecContext(ctx, m.CPID, m.TimeNS, m.Service, string(m.Origin), nullInt64(m.EventID))
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 0 {
				continue
			}
			id, _ := r.LastInsertId()
			for i, sc := range m.Sources {
				if _, err := src.ExecContext(ctx, id, i, sc); err != nil {
					return err
				}
			}
		}
		ch, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO changes(id, event_id, started_ns, settled_ns, user,
			verb, api_group, resource, subresource, namespace, name, writes, objects)
			SELECT ?, id, ?, stage_ns, username, verb, api_group, resource, subresource, namespace, name, 0, 0
			FROM audit_events WHERE id = ?`)
		if err != nil {
			return err
		}
		defer ch.Close()
		for _, c := range en.Changes {
			if _, err := ch.ExecContext(ctx, c.ID, c.StartNS, c.EventID); err != nil {
				return err
			}
			changes[c.ID] = true
		}
		an, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO anomalies(kind, event_id, api_group, resource, namespace, name, detail)
			VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer an.Close()
		for _, a := range en.Anomalies {
			if _, err := an.ExecContext(ctx, a.Kind, a.EventID, a.Key.Group, a.Key.Resource, a.Key.Namespace, a.Key.Name, a.Detail); err != nil {
				return err
			}
		}
		sp, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO controller_spans(span_id, parent_id, cpid, service, name,
			start_ns, end_ns, attrs, log_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer sp.Close()
		for _, x := range en.Spans {
			if _, err := sp.ExecContext(ctx, x.SpanID, x.ParentID, x.CPID, x.Service, x.Name, x.StartNS, x.EndNS,
				rawJSON(x.Attrs), x.LogID); err != nil {
				return err
			}
		}
		if err := summarizeChanges(ctx, tx, changes); err != nil {
			return err
		}
		if redoFromNS >= 0 {
			if err := orderRevisions(ctx, tx, objects); err != nil {
				return err
			}
		}
		for k, v := range map[string]any{"event_id": w.EventID, "cutoff_ns": w.CutoffNS, "log_id": w.LogID, "engine": w.EngineData} {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO reconstruct_state(key, value) VALUES (?, ?)`, k, v); err != nil {
				return err
			}
		}
		return nil
	})
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

type seqOf struct {
	seq int
	by  string
}

// orderWrites numbers the writes of each object (see orderRevisions).
func orderWrites(writes []reconstruct.Write) map[int64]seqOf {
	byObject := map[reconstruct.ObjectKey][]int{}
	for i, w := range writes {
		byObject[w.Key] = append(byObject[w.Key], i)
	}
	out := make(map[int64]seqOf, len(writes))
	for _, is := range byObject {
		ids, by := reconstruct.OrderRevisions(len(is), func(i int) (int64, string, int64) {
			w := writes[is[i]]
			return w.EventID, w.ResourceVersion, w.StageNS
		})
		for i, id := range ids {
			out[id] = seqOf{i + 1, by}
		}
	}
	return out
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
