package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestEvictedObjects: a run that holds two objects in memory, evicting
// the others to its spill and reading them back as writes meet them again
// (reconstruct.Options.MaxObjects), derives the rows and saves the state
// that a run holding every object does, on every recorded fixture: a full
// rebuild, and runs that go on from the saved state as the bundle's files
// arrive (objects evicted, then saved from the spill, then
// read back by the next run).
func TestEvictedObjects(t *testing.T) {
	t.Parallel()
	bundles, _ := filepath.Glob("../fixtures/*/bundle")
	if len(bundles) < 20 {
		t.Fatalf("recorded fixtures: %v", bundles)
	}
	for _, b := range bundles {
		t.Run(filepath.Base(filepath.Dir(b)), func(t *testing.T) {
			t.Parallel()
			testEvicted(t, b)
		})
	}
}

func testEvicted(t *testing.T, bundle string) {
	ctx := context.Background()
	audit, _ := filepath.Glob(filepath.Join(bundle, "audit", "*"))
	logs, _ := filepath.Glob(filepath.Join(bundle, "logs", "*"))
	slices.Sort(audit) // the rotated backups by time, then audit.log
	files := append(logs, audit...)
	if len(audit) == 0 {
		t.Skip("no audit log")
	}
	state := func(s *Store) string {
		var out strings.Builder
		printRows(t, s, &out, "", `SELECT cluster, key, uid, state FROM reconstruct_objects ORDER BY cluster, key`)
		return out.String()
	}
	dir := t.TempDir() // the spills'
	run := func(s *Store, max int) reconstruct.Report {
		t.Helper()
		r, err := reconstruct.Run(ctx, s, reconstruct.Options{Full: true, MaxObjects: max, SpillDir: dir, Family: ingest.Family})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, files); err != nil {
		t.Fatal(err)
	}
	if r := run(s, -1); r.Evicted != 0 {
		t.Fatalf("a run that never evicts evicted %d objects", r.Evicted)
	}
	want, wantState := derivedDump(t, s), state(s)
	r := run(s, 2)
	if r.Writes > 10 && (r.Evicted == 0 || r.Spilled == 0) {
		t.Fatalf("%d writes and nothing evicted, or nothing left in the spill: %+v", r.Writes, r)
	}
	sameDump(t, "full rebuild holding 2 objects", derivedDump(t, s), want)
	sameDump(t, "saved state of a full rebuild holding 2 objects", state(s), wantState)

	// File by file, each run going on from the last one's state: eight
	// runs at most, files taken in order a few at a time when the bundle
	// has more (the load fixture's 37 took 20 s).
	s = openTest(t)
	in := &ingest.Ingester{Sink: s}
	evicted := 0
	per := (len(files) + 7) / 8
	for step := range slices.Chunk(files, per) {
		if _, err := in.Run(ctx, step); err != nil {
			t.Fatal(err)
		}
		r, err := reconstruct.Run(ctx, s, reconstruct.Options{MaxObjects: 2, SpillDir: dir, Family: ingest.Family})
		if err != nil {
			t.Fatal(err)
		}
		evicted += r.Evicted
	}
	if len(files) > 1 && r.Writes > 10 && evicted == 0 {
		t.Fatalf("runs file by file evicted nothing")
	}
	sameDump(t, "runs file by file holding 2 objects", derivedDump(t, s), want)
	if got, err := os.ReadDir(dir); err != nil || len(got) != 0 {
		t.Fatalf("spill files left behind: %v %v", got, err)
	}
}

// sameDump fails the test at the first line where got and want differ.
func sameDump(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	a, b := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			t.Fatalf("%s: differs at line %d:\n  got:  %s\n  want: %s", what, i+1, a[i], b[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", what, len(a), len(b))
}
