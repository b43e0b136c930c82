package cpid

import (
	"errors"
	"testing"
)

func TestReadStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, want string // want "" : refused
	}{
		{"select", "select 1", "select 1"},
		{"trailing semicolons", "select 1 ;; \n", "select 1"},
		{"with", "WITH x AS (SELECT 1) SELECT * FROM x", "WITH x AS (SELECT 1) SELECT * FROM x"},
		{"parenthesised", "(select 1) union (select 2)", "(select 1) union (select 2)"},
		{"semicolon in a string", "select 'a;b'", "select 'a;b'"},
		{"doubled quote", "select 'it''s; x'", "select 'it''s; x'"},
		{"E string", `select E'a\';delete from t'`, `select E'a\';delete from t'`},
		{"quoted name", `select "a;b" from t`, `select "a;b" from t`},
		{"backquoted name", "select `a;b` from t", "select `a;b` from t"},
		{"bracketed name", "select [a;b] from t", "select [a;b] from t"},
		{"array subscript", "select a[1] from t", "select a[1] from t"},
		{"dollar body", "select $x$;delete$x$", "select $x$;delete$x$"},
		{"line comment", "select 1 -- ; drop table t\n", "select 1 -- ; drop table t"},
		{"block comment", "select 1 /* ; /* nested ; */ drop */", "select 1 /* ; /* nested ; */ drop */"},
		{"leading comment", "/* hi */ -- x\n select 1", "/* hi */ -- x\n select 1"},
		{"explain", "explain query plan select 1", "explain query plan select 1"},
		{"pragma", "pragma table_info(audit_events)", "pragma table_info(audit_events)"},
		{"parameter", "select $1", "select $1"},
		{"a column named like a function", "select set_config from t", "select set_config from t"},
		{"two statements", "select 1; select 2", ""},
		{"transaction games", "ROLLBACK; BEGIN READ WRITE; DELETE FROM audit_events WHERE id=1; COMMIT", ""},
		{"delete", "delete from audit_events", ""},
		{"begin", "begin", ""},
		{"set", "set default_transaction_read_only = off", ""},
		{"copy", "COPY audit_events TO '/tmp/f'", ""},
		{"attach", "ATTACH '/tmp/x.db' AS x", ""},
		{"vacuum into", "VACUUM INTO '/tmp/x.db'", ""},
		{"create", "create table x(a)", ""},
		{"server file", "select pg_read_file('/etc/passwd')", ""},
		{"server file, qualified", "select pg_catalog.pg_read_file ('/etc/passwd')", ""},
		{"server file, quoted", `select "lo_export"(1, '/tmp/f')`, ""},
		{"set_config", "select set_config('transaction_read_only', 'off', false)", ""},
		{"empty", " ; -- nothing\n", ""},
		{"unterminated string", "select 'a; delete from t", ""},
		{"unterminated comment", "select 1 /* ; delete", ""},
		{"unterminated dollar body", "select $a$ x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadStatement(tc.text)
			if tc.want == "" {
				if err == nil || !errors.Is(err, ErrStatement) {
					t.Fatalf("ReadStatement(%q) = %q, %v; want a refusal", tc.text, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ReadStatement(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
			}
		})
	}
}

// TestReadStatementSays: a refusal says where the second statement is.
func TestReadStatementSays(t *testing.T) {
	t.Parallel()
	_, err := ReadStatement("select 1;\n  delete from t")
	if err == nil || err.Error() != `not a reading statement: give one statement at a time: a second one starts at line 2, column 3 ("delete")` {
		t.Fatalf("%v", err)
	}
}
