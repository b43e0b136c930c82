package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestExpire: expiring the real fixture's older half deletes those
// records and their bodies (no body of a record left is lost), every
// derived row of the cluster and its reconstruct state; the bundle
// ingested again stores nothing (the horizon makes the older half
// duplicates, exactly-once); and the next reconstruct, a full rebuild,
// derives what a database that only ever held the newer half derives
// (that one made by setting the horizon first and ingesting the whole
// bundle: the writer skips the older half).
func TestExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := []string{"../fixtures/basic/bundle"}
	a := openTest(t)
	if _, err := (&ingest.Ingester{Sink: a}).Run(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, a, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	var cutoff int64
	count := func(s *Store, q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := s.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	cutoff = count(a, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns) FROM audit_events`)
	oldAudits := count(a, `SELECT count(*) FROM audit_events WHERE received_ns < $1`, cutoff)
	oldLogs := count(a, `SELECT count(*) FROM log_records WHERE ts_ns < $1`, cutoff)
	totalAudits, totalLogs := count(a, `SELECT count(*) FROM audit_events`), count(a, `SELECT count(*) FROM log_records`)
	changes := count(a, `SELECT count(*) FROM changes`)
	if oldAudits == 0 || oldAudits == totalAudits || changes == 0 {
		t.Fatalf("fixture: %d of %d events before the cutoff, %d changes", oldAudits, totalAudits, changes)
	}
	s := a.InCluster(a.own())

	dry, err := s.Expire(ctx, cutoff, true)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Audits != oldAudits || dry.Logs != oldLogs || count(a, `SELECT count(*) FROM audit_events`) != totalAudits ||
		count(a, `SELECT count(*) FROM changes`) != changes || count(a, `SELECT count(*) FROM retention`) != 0 {
		t.Fatalf("dry run: %+v, want %d events and %d logs counted and nothing deleted", dry, oldAudits, oldLogs)
	}

	x, err := s.Expire(ctx, cutoff, false)
	if err != nil {
		t.Fatal(err)
	}
	if x.Audits != oldAudits || x.Logs != oldLogs {
		t.Errorf("expire: %+v, want %d events and %d logs", x, oldAudits, oldLogs)
	}
	for q, want := range map[string]int64{
		`SELECT count(*) FROM audit_events WHERE received_ns < $1`:                                                0,
		`SELECT count(*) FROM log_records WHERE ts_ns < $1`:                                                       0,
		`SELECT count(*) FROM audit_events WHERE received_ns >= $1`:                                               totalAudits - oldAudits,
		`SELECT count(*) FROM log_records WHERE ts_ns >= $1`:                                                      totalLogs - oldLogs,
		`SELECT count(*) FROM audit_body_refs r LEFT JOIN audit_events e ON e.id = r.event_id WHERE e.id IS NULL`: 0,
		`SELECT count(*) FROM audit_body_refs r LEFT JOIN body_blocks k ON k.id = r.block_id WHERE k.id IS NULL`:  0,
		`SELECT count(*) FROM changes`:                                                                            0,
		`SELECT count(*) FROM revisions`:                                                                          0,
		`SELECT count(*) FROM mergelogs`:                                                                          0,
		`SELECT count(*) FROM reconstruct_state`:                                                                  0,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, cutoff)
		}
		if n := count(a, q, args...); n != want {
			t.Errorf("after expire: %s: %d, want %d", q, n, want)
		}
	}
	// Every body of an event left reads back as the fixture stored it.
	if n := count(a, `SELECT count(*) FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
		WHERE b.event_id IS NULL AND e.verb IN ('create', 'update', 'patch')`); n != 0 {
		t.Errorf("after expire: %d writes left without their body", n)
	}

	w, err := (&ingest.Ingester{Sink: a}).Run(ctx, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if w.Written.Audits != 0 || w.Written.Logs != 0 {
		t.Errorf("the bundle again after expire stored %d events and %d logs, want none", w.Written.Audits, w.Written.Logs)
	}
	if _, err := reconstruct.Run(ctx, a, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}

	b := openTest(t)
	if _, err := b.InCluster(b.own()).Expire(ctx, cutoff, false); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ingest.Ingester{Sink: b}).Run(ctx, bundle); err != nil {
		t.Fatal(err)
	}
	if n := count(b, `SELECT count(*) FROM audit_events`); n != totalAudits-oldAudits {
		t.Fatalf("ingest after a horizon stored %d events, want %d", n, totalAudits-oldAudits)
	}
	if _, err := reconstruct.Run(ctx, b, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	// Event ids differ between the two: the rows are compared by content.
	for _, q := range []string{
		`SELECT concat_ws('|', started_ns, settled_ns, "user", verb, resource, namespace, name, writes, objects, trigger) FROM changes`,
		`SELECT concat_ws('|', r.resource, r.namespace, r.name, r.seq, r.attempt, r.stage_ns, r.writer, r.cpid, r.cause_rule, r.hop_ns,
			c.started_ns) FROM revisions r LEFT JOIN changes c ON c.id = r.change_id`,
		`SELECT concat_ws('|', cpid, ts_ns, service, origin) FROM mergelogs`,
	} {
		ra, rb := rowsOf(t, a, q), rowsOf(t, b, q)
		if len(ra) == 0 || !slices.Equal(ra, rb) {
			t.Errorf("%s:\nexpired then rebuilt: %d rows\nnewer half alone: %d rows", q, len(ra), len(rb))
		}
	}
}

// rowsOf is a one-column query's text values, sorted.
func rowsOf(t *testing.T, s *Store, q string) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}
