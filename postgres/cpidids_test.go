package postgres

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestCPIDIdsKept: the statement triggers of cpid_ids (migration 0014)
// keep it equal to what it is by definition, counted from every CPID of
// the merge graph (its references and what it shares with the next in
// byte order), with two clusters in the database, after full rebuilds
// (a batch's mergelogs and sources each one INSERT), an incremental run,
// a prune (DeleteMergelogs), an expiry and the rebuild after it (a
// cluster's rows deleted in one statement each), and statements of
// thousands of rows. It fails when a statement adds or removes a
// reference twice or misses a neighbour.
func TestCPIDIdsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	a, b := st.InCluster("a"), st.InCluster("b")
	check := func(when string) {
		t.Helper()
		var kept, counted string
		var n int
		if err := st.pool.QueryRow(ctx, `SELECT count(*), COALESCE(string_agg(cpid || ' ' || refs || ' ' || shared, E'\n' ORDER BY cpid), '')
			FROM cpid_ids`).Scan(&n, &kept); err != nil {
			t.Fatal(err)
		}
		if err := st.pool.QueryRow(ctx, `SELECT COALESCE(string_agg(cpid || ' ' || refs || ' ' || cpid_shared(cpid, next), E'\n' ORDER BY cpid), '')
			FROM (SELECT cpid, refs, lead(cpid) OVER (ORDER BY cpid) AS next
				FROM (SELECT cpid COLLATE "C" AS cpid, count(*) AS refs
					FROM (SELECT cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources) x GROUP BY 1) c) d`).Scan(&counted); err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			t.Fatalf("%s: %d CPIDs; the fixtures have more", when, n)
		}
		if kept != counted {
			t.Errorf("%s: cpid_ids (%d rows) differs from the CPIDs counted from the merge graph", when, n)
		}
	}
	run := func(s *Store, bundles ...string) {
		t.Helper()
		if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, bundles); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	run(a, "../fixtures/basic/bundle")
	run(b, "../fixtures/instrumented/bundle")
	check("after two clusters' first runs")
	run(a, "../fixtures/daemonset/bundle")
	check("after another bundle in one cluster")
	if _, _, err := reconstruct.PruneStore(ctx, b, reconstruct.Budget{MaxCPIDs: 5}, false); err != nil {
		t.Fatal(err)
	}
	check("after a prune")
	var mid int64
	if err := st.pool.QueryRow(ctx, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns) FROM audit_events
		WHERE cluster = 'a'`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Expire(ctx, mid, false); err != nil {
		t.Fatal(err)
	}
	check("after an expiry")
	if _, err := reconstruct.Run(ctx, a, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, b, reconstruct.Options{Full: true, Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	check("after rebuilds")
	// A statement that adds or removes thousands (a large cluster's
	// merge graph: the removal recomputes every CPID's neighbour, where a
	// few are probed), some sharing long prefixes with the fixtures'.
	if _, err := st.pool.Exec(ctx, `INSERT INTO mergelogs(cpid, ts_ns, service, origin, cluster)
		SELECT CASE WHEN i % 3 = 0 THEN left(m.cpid, 6) || md5(i::text) ELSE md5(i::text) END, i, 'x', 'inferred', 'c'
		FROM generate_series(1, 3000) i, (SELECT min(cpid) AS cpid FROM mergelogs) m`); err != nil {
		t.Fatal(err)
	}
	check("after 3000 mergelogs in one statement")
	if _, err := st.pool.Exec(ctx, `DELETE FROM mergelogs WHERE cluster = 'c' AND ts_ns % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	check("after 1500 of them deleted in one statement")
	if _, err := st.pool.Exec(ctx, `DELETE FROM mergelogs WHERE cluster = 'c' AND ts_ns % 10 = 1`); err != nil {
		t.Fatal(err)
	}
	check("after 300 more deleted in one statement")
}
