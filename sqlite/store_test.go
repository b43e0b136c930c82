package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenSettings(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("database mode = %o, want 600", m)
	}
	for _, c := range []struct {
		pool   string
		pragma string
		want   string
	}{
		{"writer", "journal_mode", "wal"},
		{"writer", "synchronous", "1"},
		{"writer", "busy_timeout", "10000"},
		{"writer", "foreign_keys", "1"},
		{"writer", "query_only", "0"},
		{"reader", "journal_mode", "wal"},
		{"reader", "synchronous", "1"},
		{"reader", "busy_timeout", "10000"},
		{"reader", "query_only", "1"},
	} {
		db := s.w
		if c.pool == "reader" {
			db = s.r
		}
		var got string
		if err := db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatalf("%s PRAGMA %s: %v", c.pool, c.pragma, err)
		}
		if got != c.want {
			t.Errorf("%s PRAGMA %s = %s, want %s", c.pool, c.pragma, got, c.want)
		}
	}
	if _, err := s.r.ExecContext(ctx, `DELETE FROM files`); err == nil {
		t.Error("reader pool accepted a write")
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < 1 {
		t.Errorf("SchemaVersion = %d, %v", v, err)
	}
}

func TestMigrationsRecordedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpid.db")
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		ms, _ := migrations()
		if n != len(ms) {
			t.Errorf("open %d: %d migrations recorded, want %d", i+1, n, len(ms))
		}
		s.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpid.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil {
		t.Fatal("Open accepted a database from a newer cpid-tui")
	}
}

// TestOtherBuildsMigrationRefused: a database whose schema_migrations
// holds a version under another name than this build's migration of it
// (another build of cpid-tui applied a different change as that number)
// is refused by a writer, which would migrate on past it, and by a
// reader, with what to do.
func TestOtherBuildsMigrationRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cpid.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE schema_migrations SET name = '0016_a_branch.sql' WHERE version = 16`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, opts := range [][]cpid.OpenOption{nil, {cpid.ReadOnly()}} {
		_, err := Open(ctx, path, opts...)
		if err == nil || !strings.Contains(err.Error(), "version 16 as 0016_a_branch.sql, where this cpid-tui has 0016_change_search.sql") ||
			!strings.Contains(err.Error(), "another build of cpid-tui migrated this database") {
			t.Errorf("Open %v of a database migrated by another build: %v", opts, err)
		}
	}
}

func TestWriteIdempotent(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ev := func(id, stage string, h byte) cpid.Audit {
		return cpid.Audit{
			AuditEvent: cpid.AuditEvent{Hash: [16]byte{h}, AuditID: id, Stage: stage, Level: "RequestResponse",
				Verb: "create", Resource: "pods", Namespace: "default", Name: "web-1", Code: 201,
				CPID: "c1", CPIDAncestors: []string{"a", "b"}, ResponseObject: []byte(`{"kind":"Pod"}`)},
			Pos: cpid.Pos{File: "audit.log", Line: int(h)},
		}
	}
	b := &cpid.Batch{
		Audits: []cpid.Audit{ev("x", "ResponseStarted", 1), ev("x", "ResponseComplete", 2), ev("x", "ResponseComplete", 2)},
		Logs: []cpid.Log{{LogRecord: cpid.LogRecord{Hash: [16]byte{9}, TimeNS: 5, Level: "info", Component: "c", Msg: "m",
			Fields: []byte(`{"msg":"m"}`)}, Pos: cpid.Pos{File: "kcm.log", Line: 1}}},
	}
	w, err := s.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if w != (cpid.Written{Audits: 2, AuditDups: 1, Logs: 1}) {
		t.Errorf("first write = %+v", w)
	}
	before := dump(t, s)
	w, err = s.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if w != (cpid.Written{AuditDups: 3, LogDups: 1}) {
		t.Errorf("second write = %+v", w)
	}
	if after := dump(t, s); after != before {
		t.Errorf("second write changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	var anc, body string
	if err := s.r.QueryRowContext(ctx, `SELECT e.cpid_ancestors, b.response_object FROM audit_events e
		JOIN audit_bodies b ON b.event_id = e.id WHERE e.stage = 'ResponseComplete'`).Scan(&anc, &body); err != nil {
		t.Fatal(err)
	}
	if anc != `["a","b"]` || body != `{"kind":"Pod"}` {
		t.Errorf("stored ancestors %s body %s", anc, body)
	}
}

// dump renders every row of every table, for before/after comparisons.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	// A WITHOUT ROWID table (cpid_ids) is read in the order of its key.
	rows, err := s.r.QueryContext(ctx, `SELECT name, CASE WHEN sql LIKE '%WITHOUT ROWID' THEN '1' ELSE 'rowid' END
		FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables, orders []string
	for rows.Next() {
		var n, order string
		if err := rows.Scan(&n, &order); err != nil {
			t.Fatal(err)
		}
		tables, orders = append(tables, n), append(orders, order)
	}
	rows.Close()
	var out strings.Builder
	for i, tb := range tables {
		printRows(t, s, &out, tb, `SELECT * FROM "`+tb+`" ORDER BY `+orders[i])
	}
	return out.String()
}

// printRows writes a line per row of query q, prefixed with prefix.
func printRows(t *testing.T, s *Store, w io.Writer, prefix, q string) {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "%s%v\n", prefix, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// openAt creates a database at schema version v (the migrations up to v).
func openAt(t *testing.T, v int) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Remove(path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	// Open without migrating, then migrate to v.
	w, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	s = &Store{conns: &conns{path: path, w: w, r: w, fileIDs: map[string]int64{}}}
	if err := s.migrateTo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestMergelogsMigrationKeepsRows: migration 0005 rebuilds the mergelogs
// table of a database of schema version 4 with the same rows and ids, the
// sources still pointing at them, and (cpid, origin) still unique.
func TestMergelogsMigrationKeepsRows(t *testing.T) {
	ctx := context.Background()
	s, path := openAt(t, 4)
	for _, q := range []string{
		`INSERT INTO mergelogs(id, cpid, ts_ns, service, origin) VALUES (7, 'a', 1, 'x', 'inferred'), (9, 'b', 2, 'y', 'log'), (12, 'b', 3, 'y', 'inferred')`,
		`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (9, 0, 'a'), (12, 0, 'a'), (12, 1, 'c')`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got string
	s.r.QueryRowContext(ctx, `SELECT group_concat(m.id || ':' || m.cpid || ':' || m.origin || ':' || COALESCE(x.pos || x.source_cpid, ''), ',')
		FROM (SELECT * FROM mergelogs ORDER BY id) m LEFT JOIN mergelog_sources x ON x.mergelog_id = m.id`).Scan(&got)
	if want := "7:a:inferred:,9:b:log:0a,12:b:inferred:0a,12:b:inferred:1c"; got != want {
		t.Errorf("mergelogs and sources after the migrations:\n got %s\nwant %s", got, want)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO mergelogs(cpid, ts_ns, service, origin) VALUES ('a', 0, 'z', 'inferred')`); err == nil {
		t.Error("a duplicate (cpid, origin) was accepted")
	}
}

// TestClusterMigrationKeepsRows: migration 0006 gives the rows of a
// version 5 database the cluster "default", keeping ids, keys and counters.
func TestClusterMigrationKeepsRows(t *testing.T) {
	ctx := context.Background()
	s, _ := openAt(t, 5)
	for _, q := range []string{
		`INSERT INTO files(id, path) VALUES (3, 'audit.log'), (5, 'kcm.log')`,
		`INSERT INTO reconstruct_state(key, value) VALUES ('event_id', 42), ('cutoff_ns', 1000)`,
		`INSERT INTO tail_checkpoints VALUES ('audit.log', 'audit.log', x'01', 1, 10, 2, 0, 0, 2, 2, 0, 0, 0, 5, 6)`,
		`INSERT INTO mergelogs(id, cpid, ts_ns, service, origin) VALUES (7, 'a', 1, 'x', 'inferred')`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Migration 0006 alone: 0007 clears reconstruct_state, on purpose.
	if err := s.migrateTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var files, state, ck, ml string
	s.r.QueryRowContext(ctx, `SELECT group_concat(id || ':' || path || ':' || cluster, ',') FROM files`).Scan(&files)
	s.r.QueryRowContext(ctx, `SELECT group_concat(cluster || ':' || key || '=' || value, ',') FROM reconstruct_state`).Scan(&state)
	s.r.QueryRowContext(ctx, `SELECT cluster || ':' || source || ':' || offset || ':' || records FROM tail_checkpoints`).Scan(&ck)
	s.r.QueryRowContext(ctx, `SELECT cluster || ':' || id || ':' || cpid FROM mergelogs`).Scan(&ml)
	for _, c := range []struct{ got, want string }{
		{files, "3:audit.log:default,5:kcm.log:default"}, {state, "default:event_id=42,default:cutoff_ns=1000"},
		{ck, "default:audit.log:10:2"}, {ml, "default:7:a"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	// The same path in another cluster is another file; a mergelog's
	// (cpid, origin) is unique within its cluster.
	for _, q := range []string{
		`INSERT INTO files(path, cluster) VALUES ('audit.log', 'prod')`,
		`INSERT INTO mergelogs(cpid, ts_ns, service, origin, cluster) VALUES ('a', 1, 'x', 'inferred', 'prod')`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

// TestConcurrentFirstOpens opens a new database from several stores at once,
// as three queries or serve and tail started together do: each migration is
// applied once and every open succeeds.
func TestConcurrentFirstOpens(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("cpid-%d.db", round))
		const n = 6
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				s, err := Open(ctx, path)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		close(start)
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var rows, distinct int
		s.r.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&rows, &distinct)
		s.Close()
		if ms, _ := migrations(); rows != len(ms) || distinct != len(ms) {
			t.Errorf("round %d: %d migration rows (%d distinct), want %d", round, rows, distinct, len(ms))
		}
	}
}

// TestConcurrentWrites writes batches from several goroutines at once (run
// with -race): every record is stored once, none lost.
func TestConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	const writers, batches = 4, 20
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			var err error
			for i := range batches {
				b := &cpid.Batch{}
				for j := range 5 {
					n := (w*batches+i)*5 + j
					b.Logs = append(b.Logs, cpid.Log{
						LogRecord: cpid.LogRecord{Hash: [16]byte{byte(n), byte(n >> 8), 1}, TimeNS: int64(n), Msg: "m", Fields: []byte(`{}`)},
						// Each writer its own files and a shared one.
						Pos: cpid.Pos{File: fmt.Sprintf("f%d-%d.log", w, i%3), Line: n}})
					b.Logs = append(b.Logs, cpid.Log{
						LogRecord: cpid.LogRecord{Hash: [16]byte{byte(n), byte(n >> 8), 2}, TimeNS: int64(n), Msg: "m", Fields: []byte(`{}`)},
						Pos:       cpid.Pos{File: "shared.log", Line: n}})
				}
				if _, err = s.Write(ctx, b); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var logs, files int
	s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM log_records), (SELECT count(*) FROM files)`).Scan(&logs, &files)
	if want := writers * batches * 5 * 2; logs != want || files != writers*3+1 {
		t.Errorf("%d log records in %d files, want %d in %d", logs, files, want, writers*3+1)
	}
}

// bodiesOf reads every body through the view, by event id.
func bodiesOf(t *testing.T, s *Store) map[int64][3]sql.NullString {
	t.Helper()
	out := map[int64][3]sql.NullString{}
	rows, err := s.r.QueryContext(context.Background(), `SELECT event_id, request_object, response_object, response_status FROM audit_bodies`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b [3]sql.NullString
		if err := rows.Scan(&id, &b[0], &b[1], &b[2]); err != nil {
			t.Fatal(err)
		}
		out[id] = b
	}
	return out
}

// TestBodyBlocksMigrationKeepsBodies: migration 0008 packs the bodies of a
// version 7 database (a table of JSON text) into blocks, and every body reads
// back through the view as it was, NULLs included, in two clusters.
func TestBodyBlocksMigrationKeepsBodies(t *testing.T) {
	ctx := context.Background()
	// The bodies of the real fixture, as a database of today stores them.
	src := ingestFixture(t)
	want := bodiesOf(t, src)
	if len(want) < 1000 {
		t.Fatalf("%d bodies in the fixture", len(want))
	}

	s, path := openAt(t, 7)
	if _, err := s.w.ExecContext(ctx, `ATTACH DATABASE ? AS src`, src.path); err != nil {
		t.Fatal(err)
	}
	// The columns of audit_events at v7: later versions added some.
	var cols string
	if err := s.w.QueryRowContext(ctx, `SELECT group_concat(name, ', ') FROM pragma_table_info('audit_events')`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO files SELECT * FROM src.files`,
		`INSERT INTO audit_events SELECT ` + cols + ` FROM src.audit_events`,
		// Half the events in another cluster: each cluster's bodies go
		// to blocks of its own.
		`UPDATE audit_events SET cluster = 'prod' WHERE id % 2 = 0`,
		`INSERT INTO audit_bodies SELECT * FROM src.audit_bodies`,
		`DETACH DATABASE src`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := bodiesOf(t, s)
	if len(got) != len(want) {
		t.Errorf("%d events with bodies after the migration, want %d", len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("event %d: bodies differ after the migration:\n got %v\nwant %v", id, got[id], w)
			break
		}
	}
	var mixed, legacy int
	s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT r.block_id FROM audit_body_refs r JOIN audit_events e ON e.id = r.event_id
		GROUP BY r.block_id HAVING count(DISTINCT e.cluster) > 1)`).Scan(&mixed)
	s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'audit_bodies_v7'`).Scan(&legacy)
	if mixed > 0 || legacy > 0 {
		t.Errorf("%d blocks hold two clusters' bodies; audit_bodies_v7 left: %d", mixed, legacy)
	}
}

// TestMigrationNotice: opening a database of an older schema that holds
// records says each migration before it runs it (a rebuild may take a
// while); a new database, or an older one with no records, is migrated
// silently; the writer's sorts go back to memory.
func TestMigrationNotice(t *testing.T) {
	ctx := context.Background()
	var said []string
	notice := cpid.WithNotice(func(s string) { said = append(said, s) })
	// A database of an older schema with no records migrates in no time,
	// and says nothing: it is what a process that opens a new database
	// sees while another one is creating it (before, each migration
	// applied after the other's first was announced).
	empty, path := openAt(t, 9)
	empty.Close()
	s, err := Open(ctx, path, notice)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(said) != 0 {
		t.Errorf("upgrading a v9 database with no records said %q", said)
	}
	old, path := openAt(t, 9)
	if _, err := old.w.ExecContext(ctx, `INSERT INTO files(id, path) VALUES (1, 'kcm.log')`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.w.ExecContext(ctx, `INSERT INTO log_records(hash, ts_ns, level, component, msg, fields, file_id, line)
		VALUES (x'01', 1, 'info', 'kcm', 'm', '{}', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	said = nil
	s, err = Open(ctx, path, notice)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, _ := migrations()
	if len(said) != len(ms)-9 || !strings.Contains(said[0], "schema v10 (0010_hash_index.sql)") {
		t.Errorf("upgrading a v9 database said %q", said)
	}
	var temp, cache int
	s.w.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&temp)
	s.w.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache)
	if temp != 2 || cache != -writerCacheKiB {
		t.Errorf("the writer after migrating: temp_store %d, cache_size %d; want 2 (memory), %d", temp, cache, -writerCacheKiB)
	}
	said = nil
	s2, err := Open(ctx, filepath.Join(t.TempDir(), "new.db"), notice)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if len(said) != 0 {
		t.Errorf("a new database said %q", said)
	}
}
