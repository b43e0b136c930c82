package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/storetest"
)

// derivedDump renders the derived tables in an order that does not depend
// on row ids (a rebuild numbers mergelogs afresh).
func derivedDump(t *testing.T, s *Store) string {
	t.Helper()
	var out strings.Builder
	for _, q := range []string{
		`SELECT * FROM revisions ORDER BY event_id`,
		`SELECT m.cpid, m.ts_ns, m.service, m.origin, m.event_id, group_concat(s.source_cpid, ',') FROM mergelogs m
		 LEFT JOIN (SELECT * FROM mergelog_sources ORDER BY mergelog_id, pos) s ON s.mergelog_id = m.id
		 GROUP BY m.id ORDER BY m.cpid, m.origin`,
		`SELECT * FROM changes ORDER BY id`,
		`SELECT kind, event_id, detail FROM anomalies ORDER BY kind, event_id`,
		`SELECT * FROM controller_spans ORDER BY span_id`,
	} {
		printRows(t, s, &out, "", q)
	}
	return out.String()
}

// indexes lists the database's indexes and their SQL.
func indexes(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n, q string
		rows.Scan(&n, &q)
		out = append(out, n+": "+q)
	}
	return out
}

// TestReconstructInSteps: the live mode, storing each run in transactions
// of a few rows, gives what a full rebuild gives, run after run as the
// bundle arrives file by file; and when a run stops between two steps (a
// crash), the next run clears what it stored and redoes it.
func TestReconstructInSteps(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "runs", true: "a crash between steps"}[crash], func(t *testing.T) {
			testInSteps(t, crash)
		})
	}
}

func testInSteps(t *testing.T, crash bool) {
	ctx := context.Background()
	// The rotated backups, the controllers' logs, then the live audit log
	// (the largest).
	files := storetest.InSteps(t, "../fixtures/instrumented/bundle")
	s := openTest(t)
	in := &ingest.Ingester{Sink: s}
	for i, f := range files {
		if _, err := in.Run(ctx, []string{f}); err != nil {
			t.Fatal(err)
		}
		if crash && (i == 0 || i == len(files)-1) {
			// The run (the first: a full rebuild; the last: incremental)
			// stops after its third step, its watermark unmoved.
			testHookStep = func(step int) error {
				if step == 3 {
					return errors.New("crash")
				}
				return nil
			}
			r, err := reconstruct.Run(ctx, s, reconstruct.Options{StepRows: 7, Family: ingest.Family})
			testHookStep = nil
			if err == nil || err.Error() != "crash" || r.Full != (i == 0) {
				t.Fatalf("run with a crash: %v (full rebuild: %v)", err, r.Full)
			}
		}
		if _, err := reconstruct.Run(ctx, s, reconstruct.Options{StepRows: 7, Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	steps := derivedDump(t, s)
	if r, err := reconstruct.Run(ctx, s, reconstruct.Options{Full: true, Family: ingest.Family}); err != nil || !r.Full {
		t.Fatalf("full rebuild: %v %+v", err, r)
	}
	if full := derivedDump(t, s); full != steps {
		a, b := strings.Split(steps, "\n"), strings.Split(full, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("in steps and full rebuild differ at line %d:\n  steps: %s\n  full:  %s", i+1, a[i], b[i])
			}
		}
		t.Fatalf("in steps: %d lines, full rebuild: %d", len(a), len(b))
	}
	if strings.Count(steps, "\n") < 100 {
		t.Fatalf("too little derived: %d rows", strings.Count(steps, "\n"))
	}
}

// TestFullRebuildIndexes: a full rebuild drops the derived tables' indexes
// while it loads and creates the same ones again; a rebuild that fails half
// way leaves the indexes and the previous result as they were.
func TestFullRebuildIndexes(t *testing.T) {
	ctx := context.Background()
	s := ingestFixture(t)
	before, rows := indexes(t, s), derivedDump(t, s)
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Full: true, Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	if after := indexes(t, s); !slices.Equal(after, before) {
		t.Fatalf("indexes after a full rebuild:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if got := derivedDump(t, s); got != rows {
		t.Fatal("a second full rebuild changed the result")
	}
	cctx, cancel := context.WithCancel(ctx)
	testHookSave = func() { cancel() }
	_, err := reconstruct.Run(cctx, s, reconstruct.Options{Full: true, Family: ingest.Family})
	testHookSave = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled rebuild: %v", err)
	}
	if after := indexes(t, s); !slices.Equal(after, before) {
		t.Fatalf("indexes after a failed rebuild:\n%s", strings.Join(after, "\n"))
	}
	if got := derivedDump(t, s); got != rows {
		t.Fatal("a failed rebuild changed the result")
	}
}

// TestBulkMergelogsOnce: a controller that logged the same mergelog twice
// (the same CPID and origin, at two times) gets one row from a rebuild in
// one transaction, the first, and the unique index the rebuild dropped is
// created again over them (the engine marks the second: Emitted.Again).
func TestBulkMergelogsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	line := func(ts string) string {
		return `{"time":"` + ts + `","level":"INFO","msg":"cpid.mergelog","cpid.format":1,` +
			`"cpid":"0b7f0c1e-5d0a-4a37-9a40-2f0e8c7a1d11","sources":["5a3c2d7e-1b4f-4c8a-8e2d-6f7a9b0c1d2e"],"service":"ctl",` +
			`"object":{"apiVersion":"v1","kind":"ConfigMap","resource":"","namespace":"default","name":"x","uid":""}}` + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "ctl.log"),
		[]byte(line("2026-11-22T16:26:40.000000001Z")+line("2026-11-22T16:26:41.000000002Z")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle", dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	var n int
	var ts int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*), min(ts_ns) FROM mergelogs
		WHERE cpid = '0b7f0c1e-5d0a-4a37-9a40-2f0e8c7a1d11' AND origin = 'log'`).Scan(&n, &ts); err != nil {
		t.Fatal(err)
	}
	if n != 1 || ts != 1795364800000000001 {
		t.Errorf("the mergelog logged twice: %d rows, the first at %d; want 1, at 1795364800000000001", n, ts)
	}
}
