package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// ingestFixture stores the real fixture bundle in a new database.
func ingestFixture(t *testing.T) *Store {
	t.Helper()
	s := openTest(t)
	in := &ingest.Ingester{Sink: s}
	sum, err := in.Run(context.Background(), []string{"../fixtures/basic/bundle"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ReadErrors) > 0 || sum.Written.Audits == 0 {
		t.Fatalf("fixture ingest: %v, %+v", sum.ReadErrors, sum.Written)
	}
	if _, err := reconstruct.Run(context.Background(), s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	return s
}

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestSchemaDocQueries runs every example query of docs/SCHEMA.md against
// the real fixture: each must run and return at least one row, so the
// documentation cannot drift from the schema.
func TestSchemaDocQueries(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "SCHEMA.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := sqlBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d sql blocks in docs/SCHEMA.md", len(blocks))
	}
	s := ingestFixture(t)
	for i, b := range blocks {
		q := strings.TrimSpace(string(b[1]))
		rows, err := s.r.QueryContext(context.Background(), q)
		if err != nil {
			t.Errorf("query %d fails: %v\n%s", i+1, err, q)
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			t.Errorf("query %d: %v", i+1, err)
		}
		rows.Close()
		if n == 0 {
			t.Errorf("query %d returns no row on the fixture:\n%s", i+1, q)
		}
	}
}

// TestSchemaDocTables checks that every table and column of the schema is
// documented in docs/SCHEMA.md.
func TestSchemaDocTables(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "SCHEMA.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t)
	ctx := context.Background()
	rows, err := s.r.QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p
		WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%' ORDER BY 1, p.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	text := string(doc)
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		// The table's section: the heading that names it.
		i := -1
		for _, h := range regexp.MustCompile("(?m)^## .*$").FindAllStringIndex(text, -1) {
			if strings.Contains(text[h[0]:h[1]], "`"+table+"`") {
				i = h[0]
				break
			}
		}
		if i < 0 {
			t.Errorf("table %s is not documented", table)
			continue
		}
		section := text[i:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
		// A section may document several tables one after another.
		if !strings.Contains(section, "| `"+col+"` |") {
			t.Errorf("column %s.%s is not documented", table, col)
		}
	}
}
