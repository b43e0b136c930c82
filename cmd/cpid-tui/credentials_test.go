package main

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// TestIngestCredentialsPostgres stores every credential shape of the
// redaction table (ingest/testdata/audit/credentials.jsonl) in PostgreSQL
// and looks for the credentials in the text of every row of every table, as
// TestIngestCredentials does in the bytes of a SQLite file.
func TestIngestCredentialsPostgres(t *testing.T) {
	t.Parallel()
	const marker = "c0ffee5ecret42" // ingest_test.credMarker
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + marker + "\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	in, err := os.ReadFile("../../ingest/testdata/audit/credentials.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(in, []byte(marker)) {
		t.Fatalf("the input holds no %q: nothing would be tested", marker)
	}
	db := pgtest.NewDatabase(t)
	if code, out, errOut := runCmd(t, bytes.NewReader(in), "ingest", "--db", db, "-"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, nil, "reconstruct", "--db", db); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	r, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tables, err := r.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		tables.Scan(&n)
		names = append(names, n)
	}
	tables.Close()
	if len(names) < 5 {
		t.Fatalf("tables: %v", names)
	}
	stored := 0
	for _, n := range names {
		rows, err := r.Query(`SELECT t::text FROM ` + n + ` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			rows.Scan(&row)
			stored++
			for _, c := range []string{marker, base64.StdEncoding.EncodeToString([]byte(pem))[:40]} {
				if strings.Contains(row, c) {
					t.Errorf("credential %q stored in %s: %.300s", c, n, row)
				}
			}
		}
		rows.Close()
	}
	if lines := bytes.Count(in, []byte("\n")); stored < lines {
		t.Errorf("%d rows in every table for %d events", stored, lines)
	}
}
