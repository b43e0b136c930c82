package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestNativeReconstruct: a store of SQLite in C (cpid.Native: its writes
// read by the batch, its revisions stored by the batch) derives what the
// pure-Go store derives, row for row, on recorded fixtures that exercise
// every part of a run (CPIDs and mergelogs, controller logs, leader and
// restart evidence, node loss), as a full rebuild and run after run in
// steps.
func TestNativeReconstruct(t *testing.T) {
	if !haveC {
		t.Skip("built without cgo: no SQLite in C")
	}
	t.Parallel()
	for _, fx := range []string{"instrumented", "leader-change", "kcm-restart", "node-loss"} {
		t.Run(fx, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "cpid.db")
			s, err := Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{filepath.Join("..", "fixtures", fx, "bundle")}); err != nil {
				t.Fatal(err)
			}
			if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
				t.Fatal(err)
			}
			want := derivedDump(t, s)
			if strings.Count(want, "\n") < 50 {
				t.Fatalf("too little derived: %d rows", strings.Count(want, "\n"))
			}
			s.Close()

			n, err := Open(ctx, path, cpid.Native())
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if !n.native || n.batch == nil {
				t.Fatal("the store opened with cpid.Native is not of SQLite in C")
			}
			for _, opt := range []reconstruct.Options{
				{Full: true, Family: ingest.Family},               // one transaction, bulk
				{Full: true, Family: ingest.Family, StepRows: 50}, // steps: INSERT OR REPLACE
			} {
				r, err := reconstruct.Run(ctx, n, opt)
				if err != nil {
					t.Fatal(err)
				}
				if r.Writes == 0 {
					t.Fatalf("native run read no writes: %+v", r)
				}
				if got := derivedDump(t, n); got != want {
					a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
					for i := range min(len(a), len(b)) {
						if a[i] != b[i] {
							t.Fatalf("steps %d: pure Go and C differ at line %d:\n  Go: %s\n  C:  %s", opt.StepRows, i+1, a[i], b[i])
						}
					}
					t.Fatalf("steps %d: pure Go %d lines, C %d", opt.StepRows, len(a), len(b))
				}
			}
		})
	}
}

// TestNativeLargeRow: a row larger than the C reader's arena is read
// whole (the arena grows), and the rows around it too.
func TestNativeLargeRow(t *testing.T) {
	if !haveC {
		t.Skip("built without cgo: no SQLite in C")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cpid.db")
	s, err := Open(ctx, path, cpid.Native())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := strings.Repeat("x", 3<<20)
	var got []string
	err = scanC(ctx, s.r, `SELECT 'a' UNION ALL SELECT ? UNION ALL SELECT 'b'`, []any{big}, func(b *rows) error {
		for r := range b.len() {
			got = append(got, string(b.bytesAt(b.vals[r])))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != big || got[2] != "b" {
		t.Fatalf("read %d rows (%d bytes in the second)", len(got), len(got[min(1, len(got)-1)]))
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestNativeBodyView: the bodies view (cpid_body) reads on a store of
// SQLite in C as on the pure-Go one, NULL lengths included (a Metadata
// level event has no body).
func TestNativeBodyView(t *testing.T) {
	if !haveC {
		t.Skip("built without cgo: no SQLite in C")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cpid.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{filepath.Join("..", "fixtures", "leader-change-metadata", "bundle")}); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT event_id, request_object, response_object FROM audit_bodies ORDER BY event_id`
	var want strings.Builder
	printRows(t, s, &want, "", q)
	s.Close()
	n, err := Open(ctx, path, cpid.Native())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var got strings.Builder
	printRows(t, n, &got, "", q)
	if got.String() != want.String() {
		t.Fatalf("the bodies view differs in C:\n%.400s\nwant\n%.400s", got.String(), want.String())
	}
	if strings.Count(want.String(), "\n") < 10 {
		t.Fatalf("too few bodies: %d", strings.Count(want.String(), "\n"))
	}
}
