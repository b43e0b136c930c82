package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestMigrationForeignKeys: a migration that leaves a reference dangling
// is refused and rolled back, whether it writes rows or only drops a
// parent table; one that only adds an index is applied without reading
// the tables, which a reference already dangling before it shows (the
// whole check would refuse it, as it refuses a migration that writes a
// row anywhere).
func TestMigrationForeignKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		sql      string
		dangling bool   // a source referencing no mergelog before the migration
		refused  string // in the error, "" when applied
	}{
		{name: "a parent row deleted", sql: `DELETE FROM mergelogs WHERE id = 7`, refused: "breaks a foreign key: table mergelog_sources"},
		{name: "a parent table dropped", sql: `DROP TABLE mergelogs`, refused: "mergelog_sources"},
		{name: "a parent table rebuilt empty", sql: `CREATE TABLE m2 AS SELECT * FROM mergelogs WHERE 0; DROP TABLE mergelogs; ALTER TABLE m2 RENAME TO mergelogs`, refused: "mergelog"},
		{name: "a new table with a key that cannot be checked", sql: `CREATE TABLE x (c TEXT REFERENCES mergelogs(service))`, refused: "foreign key mismatch"},
		{name: "a row written elsewhere", sql: `INSERT INTO files(path) VALUES ('other.log')`, dangling: true, refused: "breaks a foreign key"},
		{name: "an index", sql: `CREATE INDEX mergelogs_service ON mergelogs(service)`},
		{name: "an index over a dangling reference", sql: `CREATE INDEX mergelogs_service ON mergelogs(service)`, dangling: true},
		{name: "a new table", sql: `CREATE TABLE x (id INTEGER PRIMARY KEY, m INTEGER REFERENCES mergelogs(id))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ms, err := migrations()
			if err != nil {
				t.Fatal(err)
			}
			latest := ms[len(ms)-1].Version
			s, _ := openAt(t, latest)
			defer s.Close()
			stmts := []string{
				`INSERT INTO mergelogs(id, cpid, ts_ns, service, origin) VALUES (7, 'a', 1, 'x', 'log')`,
				`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (7, 0, 'b')`,
			}
			if c.dangling {
				stmts = append(stmts, `PRAGMA foreign_keys = OFF`,
					`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (99, 0, 'c')`,
					`PRAGMA foreign_keys = ON`)
			}
			for _, q := range stmts {
				if _, err := s.w.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			m := cpid.Migration{Version: latest + 1, Name: "test", SQL: c.sql}
			err = s.applyMigrations(ctx, append(ms, m), latest+1)
			var v int
			if qerr := s.r.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); qerr != nil {
				t.Fatal(qerr)
			}
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused == "" && v != latest+1:
				t.Fatalf("schema version %d after the migration, want %d", v, latest+1)
			case c.refused == "":
				return
			case err == nil || !strings.Contains(err.Error(), c.refused):
				t.Fatalf("got %v, want an error with %q", err, c.refused)
			case v != latest:
				t.Fatalf("schema version %d after a refused migration, want %d", v, latest)
			}
			var n int
			if qerr := s.r.QueryRowContext(ctx, `SELECT count(*) FROM mergelogs WHERE id = 7`).Scan(&n); qerr != nil || n != 1 {
				t.Fatalf("the refused migration was not rolled back: %d mergelogs of id 7, %v", n, qerr)
			}
		})
	}
}
