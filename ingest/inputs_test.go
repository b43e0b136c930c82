package ingest_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/sqlite"
)

// logRow is a stored log record and where it was read.
type logRow struct {
	TimeNS                              int64
	Level, Component, Msg, CPID, Fields string
	File                                string
	Line                                int
}

// auditRow is a stored audit event, in the columns the tests compare.
type auditRow struct {
	AuditID, Stage, Verb, Resource, Subresource, Namespace, Name, User string
	Code                                                               int
	File                                                               string
	Line                                                               int
}

// tree writes files (slash paths relative to a new temporary directory) and
// returns the directory. A file's modification time is mod when not zero.
func tree(t *testing.T, files map[string][]byte, mod time.Time) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if !mod.IsZero() {
			if err := os.Chtimes(p, mod, mod); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// ingestPaths ingests paths into a new SQLite database and returns the
// summary and the database's path.
func ingestPaths(t *testing.T, w ingest.Walker, paths ...string) (*ingest.Summary, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "cpid.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := &ingest.Ingester{Sink: st, Walker: w}
	sum, err := in.Run(context.Background(), paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ReadErrors) > 0 {
		t.Fatalf("read errors: %v", sum.ReadErrors)
	}
	return sum, db
}

func openRead(t *testing.T, db string) *sql.DB {
	t.Helper()
	r, err := sql.Open("sqlite", "file:"+db+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// logRows returns the stored log records in the order they were stored.
func logRows(t *testing.T, db string) []logRow {
	t.Helper()
	rows, err := openRead(t, db).Query(`SELECT l.ts_ns, l.level, l.component, l.msg, COALESCE(l.cpid, ''), l.fields, f.path, l.line
		FROM log_records l JOIN files f ON f.id = l.file_id ORDER BY l.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var r logRow
		if err := rows.Scan(&r.TimeNS, &r.Level, &r.Component, &r.Msg, &r.CPID, &r.Fields, &r.File, &r.Line); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// auditRows returns the stored audit events in the order they were stored.
func auditRows(t *testing.T, db string) []auditRow {
	t.Helper()
	rows, err := openRead(t, db).Query(`SELECT e.audit_id, e.stage, e.verb, e.resource, e.subresource, e.namespace, e.name,
		e.username, COALESCE(e.code, 0), f.path, e.line FROM audit_events e JOIN files f ON f.id = e.file_id ORDER BY e.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.AuditID, &r.Stage, &r.Verb, &r.Resource, &r.Subresource, &r.Namespace, &r.Name,
			&r.User, &r.Code, &r.File, &r.Line); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// ingestText ingests text as the file name and returns the log records
// and the bad lines.
func ingestText(t *testing.T, name string, text []byte) ([]logRow, []*ingest.LineError) {
	t.Helper()
	dir := tree(t, map[string][]byte{name: text}, time.Time{})
	sum, db := ingestPaths(t, ingest.Walker{}, dir)
	return logRows(t, db), sum.BadLines
}
