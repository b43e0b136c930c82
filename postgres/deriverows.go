package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
)

// The rows a reconstruct run stores go in one statement per table and
// batch, their columns sent as arrays and turned back into rows by unnest,
// where each row was a statement of its own (a round trip's worth of the
// server's parsing, planning and executor start each): the same rows, the
// same order, the same conflicts. A key twice in one batch keeps its last
// row, as the row after row upserts did (ON CONFLICT ... DO UPDATE refuses
// to touch a row twice in one statement).

// lastOf returns the indexes of xs, in order, but for those whose key
// comes again later.
func lastOf[T any, K comparable](xs []T, key func(*T) K) []int {
	last := make(map[K]int, len(xs))
	for i := range xs {
		last[key(&xs[i])] = i
	}
	out := make([]int, 0, len(last))
	for i := range xs {
		if last[key(&xs[i])] == i {
			out = append(out, i)
		}
	}
	return out
}

// upsertRevisions stores writes over the stored rows of the same events.
func upsertRevisions(ctx context.Context, tx pgx.Tx, ws []cpid.Write, cluster string) error {
	keep := lastOf(ws, func(x *cpid.Write) int64 { return x.EventID })
	n := len(keep)
	var (
		ids, seq, attempt, stage, user    = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		group, res, ns, name, by, writer  = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		cp, origin, rule, change, explain = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		detail, confidence                = make([]*string, n), make([]*string, n)
		cause, hop                        = make([]*int64, n), make([]*int64, n)
	)
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for j, i := range keep {
		x := &ws[i]
		ids[j], seq[j], attempt[j], stage[j], user[j] = x.EventID, int64(x.Seq), flag(x.Attempt), x.StageNS, flag(x.Writer.User)
		group[j], res[j], ns[j], name[j], by[j], writer[j] = x.Key.Group, x.Key.Resource, x.Key.Namespace, x.Key.Name, x.OrderBy, x.Writer.Name
		cp[j], origin[j], rule[j], change[j] = str(x.CPID), str(x.CPIDOrigin), str(x.Rule), str(x.ChangeID)
		explain[j], detail[j], confidence[j] = str(string(x.Explain)), str(x.ExplainDetail), str(string(x.Confidence))
		if x.CauseEventID != 0 {
			c, h := x.CauseEventID, x.HopNS
			cause[j], hop[j] = &c, &h
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO revisions(event_id, api_group, resource, namespace, name, seq, order_by, attempt,
			stage_ns, writer, writer_is_user, cpid, cpid_origin, cause_event_id, cause_rule, change_id, hop_ns,
			cluster, explain, explain_detail, confidence)
		SELECT u.id, u.g, u.r, u.ns, u.name, u.seq, u.by, u.attempt, u.stage, u.writer, u.usr, u.cpid, u.origin,
			u.cause, u.rule, u.change, u.hop, $18, u.explain, u.detail, u.confidence
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[],
			$8::bigint[], $9::bigint[], $10::text[], $11::bigint[], $12::text[], $13::text[], $14::bigint[], $15::text[],
			$16::text[], $17::bigint[], $19::text[], $20::text[], $21::text[])
			WITH ORDINALITY AS u(id, g, r, ns, name, seq, by, attempt, stage, writer, usr, cpid, origin, cause, rule,
				change, hop, explain, detail, confidence, n)
		ORDER BY u.n
		ON CONFLICT (event_id) DO UPDATE SET api_group = excluded.api_group, resource = excluded.resource,
		namespace = excluded.namespace, name = excluded.name, seq = excluded.seq, order_by = excluded.order_by,
		attempt = excluded.attempt, stage_ns = excluded.stage_ns, writer = excluded.writer,
		writer_is_user = excluded.writer_is_user, cpid = excluded.cpid, cpid_origin = excluded.cpid_origin,
		cause_event_id = excluded.cause_event_id, cause_rule = excluded.cause_rule, change_id = excluded.change_id,
		hop_ns = excluded.hop_ns, cluster = excluded.cluster, explain = excluded.explain,
		explain_detail = excluded.explain_detail, confidence = excluded.confidence`,
		ids, group, res, ns, name, seq, by, attempt, stage, writer, user, cp, origin, cause, rule, change, hop,
		cluster, explain, detail, confidence)
	if err != nil {
		return fmt.Errorf("store revisions: %w", err)
	}
	return nil
}

// upsertChanges stores changes over the stored ones of the same ids, each
// with its root write's columns.
func upsertChanges(ctx context.Context, tx pgx.Tx, cs []cpid.Change) error {
	keep := lastOf(cs, func(c *cpid.Change) string { return c.ID })
	n := len(keep)
	ids, trig, detail, tp := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	start, event := make([]int64, n), make([]int64, n)
	for j, i := range keep {
		c := &cs[i]
		ids[j], start[j], event[j], trig[j], detail[j], tp[j] = c.ID, c.StartNS, c.EventID, string(c.Trigger), c.Detail, c.Traceparent
	}
	_, err := tx.Exec(ctx, `INSERT INTO changes(id, event_id, started_ns, settled_ns, "user", verb, api_group, resource,
			subresource, namespace, name, writes, objects, cluster, trigger, trigger_detail, traceparent)
		SELECT u.id, e.id, u.start, e.stage_ns, e.username, e.verb, e.api_group, e.resource, e.subresource,
			CASE WHEN e.resource = 'namespaces' AND e.api_group = '' THEN '' ELSE e.namespace END, e.name, 0, 0, e.cluster,
			u.trig, u.detail, u.tp
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[])
			WITH ORDINALITY AS u(id, start, event, trig, detail, tp, n)
		JOIN audit_events e ON e.id = u.event
		ORDER BY u.n
		ON CONFLICT (id) DO UPDATE SET event_id = excluded.event_id, started_ns = excluded.started_ns,
		settled_ns = excluded.settled_ns, "user" = excluded."user", verb = excluded.verb, api_group = excluded.api_group,
		resource = excluded.resource, subresource = excluded.subresource, namespace = excluded.namespace,
		name = excluded.name, writes = 0, objects = 0, slowest_hop_ns = NULL, slowest_hop_event_id = NULL,
		cluster = excluded.cluster, trigger = excluded.trigger, trigger_detail = excluded.trigger_detail,
		traceparent = excluded.traceparent`, ids, start, event, trig, detail, tp)
	if err != nil {
		return fmt.Errorf("store changes: %w", err)
	}
	return nil
}

// insertMergelogs stores mergelogs, skipping those whose (cpid, origin)
// the cluster has (with their sources), and the sources of the others.
// Ids number the mergelogs in their order, a skipped one taking one as
// the row after row inserts did.
func insertMergelogs(ctx context.Context, tx pgx.Tx, ms []cpid.Emitted, cluster string) error {
	n := len(ms)
	cps, svc, origin := make([]string, n), make([]string, n), make([]string, n)
	ts, event := make([]int64, n), make([]*int64, n)
	for i := range ms {
		m := &ms[i]
		cps[i], ts[i], svc[i], origin[i] = m.CPID, m.TimeNS, m.Service, string(m.Origin)
		if m.EventID != 0 {
			event[i] = &m.EventID
		}
	}
	rows, err := tx.Query(ctx, `INSERT INTO mergelogs(cpid, ts_ns, service, origin, event_id, cluster)
		SELECT u.cpid, u.ts, u.svc, u.origin, u.event, $6
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS u(cpid, ts, svc, origin, event, n)
		ORDER BY u.n
		ON CONFLICT (cluster, cpid, origin) DO NOTHING RETURNING id, cpid, origin`, cps, ts, svc, origin, event, cluster)
	if err != nil {
		return fmt.Errorf("store mergelogs: %w", err)
	}
	type key struct{ cpid, origin string }
	added := map[key]int64{}
	var id int64
	var k key
	if _, err := pgx.ForEachRow(rows, []any{&id, &k.cpid, &k.origin}, func() error {
		added[k] = id
		return nil
	}); err != nil {
		return fmt.Errorf("store mergelogs: %w", err)
	}
	var ids, pos []int64
	var srcs []string
	for i := range ms {
		k := key{ms[i].CPID, string(ms[i].Origin)}
		id, ok := added[k]
		if !ok {
			continue // stored before, or earlier in the batch: its sources too
		}
		delete(added, k)
		for p, sc := range ms[i].Sources {
			ids, pos, srcs = append(ids, id), append(pos, int64(p)), append(srcs, sc)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])`, ids, pos, srcs); err != nil {
		return fmt.Errorf("store mergelog sources: %w", err)
	}
	return nil
}

// renumber sets the places of writes.
func renumber(ctx context.Context, tx pgx.Tx, ps []cpid.Placed) error {
	keep := lastOf(ps, func(p *cpid.Placed) int64 { return p.EventID })
	ids, seq, by := make([]int64, len(keep)), make([]int64, len(keep)), make([]string, len(keep))
	for j, i := range keep {
		ids[j], seq[j], by[j] = ps[i].EventID, int64(ps[i].Seq), ps[i].OrderBy
	}
	_, err := tx.Exec(ctx, `UPDATE revisions r SET seq = u.seq, order_by = u.by
		FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, seq, by) WHERE r.event_id = u.id`, ids, seq, by)
	if err != nil {
		return fmt.Errorf("renumber revisions: %w", err)
	}
	return nil
}

// summarize sets the summaries of changes; a change that settled at 0
// keeps its settled time.
func summarize(ctx context.Context, tx pgx.Tx, cs []cpid.ChangeSummary) error {
	keep := lastOf(cs, func(c *cpid.ChangeSummary) string { return c.ID })
	n := len(keep)
	ids := make([]string, n)
	settled, hop, hopEvent := make([]*int64, n), make([]*int64, n), make([]*int64, n)
	writes, objects := make([]int64, n), make([]int64, n)
	for j, i := range keep {
		c := &cs[i]
		ids[j], writes[j], objects[j] = c.ID, int64(c.Writes), int64(c.Objects)
		if c.SettledNS != 0 {
			settled[j] = &c.SettledNS
		}
		if c.SlowestHopEventID != 0 {
			hop[j], hopEvent[j] = &c.SlowestHopNS, &c.SlowestHopEventID
		}
	}
	_, err := tx.Exec(ctx, `UPDATE changes c SET settled_ns = COALESCE(u.settled, c.settled_ns), writes = u.writes,
			objects = u.objects, slowest_hop_ns = u.hop, slowest_hop_event_id = u.hop_event
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
			AS u(id, settled, writes, objects, hop, hop_event)
		WHERE c.id = u.id`, ids, settled, writes, objects, hop, hopEvent)
	if err != nil {
		return fmt.Errorf("summarize changes: %w", err)
	}
	return nil
}
