package postgres

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

var pgBlock = regexp.MustCompile("(?s)```postgresql\n(.*?)```")

// TestSchemaDocQueries runs every postgresql block of docs/SCHEMA.md
// against the real fixture stored in PostgreSQL: each must return a row.
func TestSchemaDocQueries(t *testing.T) {
	ctx := context.Background()
	doc, err := os.ReadFile("../docs/SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := pgBlock.FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("no postgresql block in docs/SCHEMA.md")
	}
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		rows, err := s.pool.Query(ctx, string(b[1]))
		if err != nil {
			t.Errorf("%s: %v", b[1], err)
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil || n == 0 {
			t.Errorf("%s: %d rows, %v", b[1], n, err)
		}
	}
}
