package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// TestSQLCommand: the output formats keep column order and types, a
// statement that writes is refused with the database unchanged, and the
// statement may come from standard input.
func TestSQLCommand(t *testing.T) {
	db := ingested(t, false)
	q := `select count(*) as n, 'a' || char(27) || '[31m' as s, null as z, x'00ff' as b from audit_events`
	code, out, errOut := runCmd(t, nil, "sql", "--db", db, "--output", "json", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := `[
  {"n": 1232, "s": "a\u001b[31m", "z": null, "b": "AP8="}
]
`; out != want {
		t.Errorf("json:\n%s\nwant\n%s", out, want)
	}
	code, out, _ = runCmd(t, nil, "sql", "--db", db, "--output", "csv", q)
	if want := "n,s,z,b\n1232,a\\x1b[31m,NULL,x'00ff'\n"; code != 0 || out != want {
		t.Errorf("csv: exit %d\n%q\nwant\n%q", code, out, want)
	}
	code, out, _ = runCmd(t, nil, "sql", "--db", db, q)
	if code != 0 || strings.Contains(out, "\x1b") || !strings.Contains(out, "1232") {
		t.Errorf("table: exit %d, escape sequence or count missing:\n%q", code, out)
	}
	code, out, _ = runCmd(t, strings.NewReader("select count(*) from audit_bodies where response_object is not null"), "sql", "--db", db, "--output", "csv", "-")
	if code != 0 || out == "count(*)\n0\n" {
		t.Errorf("from stdin: exit %d\n%s", code, out)
	}
	for _, w := range []string{"delete from audit_events", "create table x(a)", "update files set path = 'x'"} {
		code, _, errOut := runCmd(t, nil, "sql", "--db", db, w)
		if code != 2 || !strings.Contains(errOut, "only a statement that reads runs here") {
			t.Errorf("%s: exit %d, %s", w, code, errOut)
		}
	}
	if code, out, _ := runCmd(t, nil, "sql", "--db", db, "--output", "csv", "select count(*) from audit_events"); code != 0 || out != "count(*)\n1232\n" {
		t.Errorf("after the refused writes: %q", out)
	}
}

// TestSQLReadOnly: on both engines, what a careless script or an attacker
// gives sql writes nothing, creates no file and changes no setting: the
// statement check refuses it (exit 2) or the connection that cannot write
// does (exit 2 in SQLite, whose authorizer names what it refused; exit 1 in
// PostgreSQL, with the server's refusal). The PostgreSQL URL is a
// superuser's, the case where the server itself would allow most.
func TestSQLReadOnly(t *testing.T) {
	t.Parallel()
	lite := ingested(t, false)
	pg := pgtest.NewDatabase(t)
	if code, out, errOut := runCmd(t, nil, "ingest", "--db", pg, filepath.Join("..", "..", "fixtures", "basic", "bundle")); code != 0 {
		t.Fatalf("ingest into postgres: exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	attached := filepath.Join(dir, "attached.db")
	vacuumed := filepath.Join(dir, "vacuumed.db")
	copied := filepath.Join(dir, "copied.csv")
	for _, tc := range []struct {
		name, stmt string
		engines    string // "lite", "pg" or "" for both
		code       int
		say        string // in stderr
	}{
		{"transaction games", "ROLLBACK; BEGIN READ WRITE; DELETE FROM audit_events WHERE id=1; COMMIT", "", 2, "one statement at a time"},
		{"two reads", "select 1; select 2", "", 2, "one statement at a time"},
		{"delete", "DELETE FROM audit_events WHERE id = 1", "", 2, `not "DELETE"`},
		{"create table", "CREATE TABLE x (a int)", "", 2, `not "CREATE"`},
		{"copy to a server file", "COPY audit_events TO '" + copied + "'", "pg", 2, `not "COPY"`},
		{"server file function", "select pg_read_file('/etc/hostname')", "pg", 2, "pg_read_file acts on the server"},
		{"large object export", "select lo_export(lo_from_bytea(0, 'x'), '" + copied + "')", "pg", 2, "acts on the server"},
		{"setting by function", "select set_config('default_transaction_read_only', 'off', false)", "pg", 2, "set_config acts on the server"},
		{"set", "SET default_transaction_read_only = off", "pg", 2, `not "SET"`},
		{"attach", "ATTACH '" + attached + "' AS x", "lite", 2, `not "ATTACH"`},
		{"vacuum into", "VACUUM INTO '" + vacuumed + "'", "lite", 2, `not "VACUUM"`},
		// What passes the check and meets the second fence.
		{"a CTE that deletes", "WITH d AS (DELETE FROM audit_events WHERE id = 1 RETURNING id) SELECT count(*) FROM d", "pg", 1, "read-only transaction"},
		{"explain analyze of a delete", "EXPLAIN ANALYZE DELETE FROM audit_events WHERE id = 1", "pg", 1, "read-only transaction"},
		{"a sequence", "select nextval('audit_events_id_seq')", "pg", 1, "read-only transaction"},
		{"pragma that sets", "PRAGMA user_version = 7", "lite", 2, "PRAGMA user_version = 7 is not allowed"},
		{"query_only off", "PRAGMA query_only = 0", "lite", 2, "PRAGMA query_only = 0 is not allowed"},
		{"pragma that acts", "PRAGMA wal_checkpoint", "lite", 2, "PRAGMA wal_checkpoint is not allowed"},
	} {
		for _, db := range []string{lite, pg} {
			engine := "lite"
			if db == pg {
				engine = "pg"
			}
			if tc.engines != "" && tc.engines != engine {
				continue
			}
			code, out, errOut := runCmd(t, nil, "sql", "--db", db, tc.stmt)
			if code != tc.code || !strings.Contains(errOut, tc.say) {
				t.Errorf("%s on %s: exit %d (want %d), stderr %q (want %q), stdout %q", tc.name, engine, code, tc.code, errOut, tc.say, out)
			}
		}
	}
	for _, f := range []string{attached, vacuumed, copied} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s exists (%v)", f, err)
		}
	}
	for _, db := range []string{lite, pg} {
		for q, want := range map[string]string{
			"select count(*) as n from audit_events":                                          "n\n1232\n",
			"select count(*) as n from audit_events where id = 1":                             "n\n1\n",
			"select count(*) as n from information_schema.tables where table_name = 'x'":      "n\n0\n",
			"select count(*) as n from pragma_table_info('audit_events') where name = 'verb'": "n\n1\n",
			"select current_setting('default_transaction_read_only') as s":                    "s\non\n",
		} {
			pgOnly := strings.Contains(q, "information_schema") || strings.Contains(q, "current_setting")
			if pgOnly != (db == pg) {
				continue
			}
			if code, out, errOut := runCmd(t, nil, "sql", "--db", db, "--output", "csv", q); code != 0 || out != want {
				t.Errorf("%s after the refusals: exit %d %q, want %q (%s)", q, code, out, want, errOut)
			}
		}
	}
	if code, out, errOut := runCmd(t, nil, "sql", "--db", lite, "--output", "csv", "pragma user_version"); code != 0 || out == "user_version\n7\n" {
		t.Errorf("pragma user_version: exit %d %q %s", code, out, errOut)
	}
}
