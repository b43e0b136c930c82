package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSQL runs every `cpid-tui sql` example of the README on the
// database of its tour (the basic fixture, reconstructed): each runs and
// returns rows. They read bodies, which the sqlite3 shell cannot decode.
func TestReadmeSQL(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile(`(?s)bin/cpid-tui sql --db tour\.db "(.*?)"\n`).FindAllSubmatch(readme, -1)
	if len(examples) < 2 {
		t.Fatalf("%d sql examples in README.md", len(examples))
	}
	db := ingested(t, true)
	bodies := false
	for _, m := range examples {
		q := strings.ReplaceAll(string(m[1]), `\$`, `$`) // the shell's unquoting
		bodies = bodies || strings.Contains(q, "audit_bodies")
		code, out, errOut := runCmd(t, nil, "sql", "--db", db, "--output", "json", q)
		if code != 0 {
			t.Errorf("README example fails: exit %d: %s\n%s", code, errOut, q)
			continue
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) == 0 {
			t.Errorf("README example: %d rows (%v)\n%s\n%s", len(rows), err, q, out)
		}
	}
	if !bodies {
		t.Error("no README example reads bodies")
	}
}

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
		if code == 0 || !strings.Contains(errOut, "readonly") {
			t.Errorf("%s: exit %d, %s", w, code, errOut)
		}
	}
	if code, out, _ := runCmd(t, nil, "sql", "--db", db, "--output", "csv", "select count(*) from audit_events"); code != 0 || out != "count(*)\n1232\n" {
		t.Errorf("after the refused writes: %q", out)
	}
}
