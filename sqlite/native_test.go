package sqlite

import (
	"context"
	"errors"
	"fmt"
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

// TestNativeReadAhead: the C reader reads the next batch while the
// caller works on one (readAhead): every row comes once and in order; an
// error of the caller's, or a context canceled, ends the read there and
// is returned, and the connection goes back usable.
func TestNativeReadAhead(t *testing.T) {
	if !haveC {
		t.Skip("built without cgo: no SQLite in C")
	}
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cpid.db"), cpid.Native())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 20 * readBatchRows
	series := `WITH RECURSIVE x(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM x WHERE i < ?) SELECT i, printf('%08d', i) FROM x`
	next := int64(1)
	err = scanC(ctx, s.r, series, []any{n}, func(b *rows) error {
		for r := range b.len() {
			v := b.vals[r*2 : r*2+2]
			if v[0].i != next || string(b.bytesAt(v[1])) != fmt.Sprintf("%08d", next) {
				return fmt.Errorf("row %d: got %d %q", next, v[0].i, b.bytesAt(v[1]))
			}
			next++
		}
		return nil
	})
	if err != nil || next != n+1 {
		t.Fatalf("read rows 1 to %d of %d: %v", next-1, n, err)
	}

	stop := errors.New("enough")
	batches := 0
	err = scanC(ctx, s.r, series, []any{n}, func(b *rows) error {
		batches++
		if batches == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || batches != 2 {
		t.Fatalf("the caller stopped at its 2nd batch: got %v after %d", err, batches)
	}
	cctx, cancel := context.WithCancel(ctx)
	batches = 0
	err = scanC(cctx, s.r, series, []any{n}, func(b *rows) error {
		if batches++; batches == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || batches > 2+readAheadBatches {
		t.Fatalf("canceled at the 2nd batch: got %v after %d batches", err, batches)
	}
	// The pool's connections are usable after both.
	for range 4 {
		var one int
		if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
			t.Fatalf("a connection after the stopped reads: %d, %v", one, err)
		}
	}
}
