package sqlite

import (
	"strings"
	"testing"
)

// TestWritesIndexUsed: the queries of the writes find them through the
// partial index audit_events_writes, which SQLite uses only when a query
// repeats its WHERE word for word (writeTerms, migration 0011). A change
// to either alone makes reconstruct read every event and sort. They name
// the cluster first (migration 0020): by time alone, a cluster's read
// went through every other cluster's writes of its range.
func TestWritesIndexUsed(t *testing.T) {
	s := openTest(t)
	for _, q := range []string{
		`SELECT e.id FROM audit_events e WHERE e.received_ns > 1 AND e.id <= 9 AND e.cluster = 'c' AND ` +
			writeTerms("e") + ` ORDER BY e.received_ns, e.id`,
		latestWriteSQL,
	} {
		if p := queryPlan(t, s, q, 9, "c"); !strings.Contains(p, "INDEX audit_events_writes (cluster=?") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s, want the index audit_events_writes by the cluster, in its order", q, p)
		}
	}
}

// TestLateReadsNewRows: the check for rows older than the last run's
// cutoff reads the rows stored since (by id), not every write older than
// the cutoff.
func TestLateReadsNewRows(t *testing.T) {
	s := openTest(t)
	if p := queryPlan(t, s, lateSQL, 1, 2, 3, "m", "c"); strings.Count(p, "INTEGER PRIMARY KEY (rowid>?)") != 2 {
		t.Errorf("plan: %s, want both tables read by id from the last run's", p)
	}
}

// TestProvisionalReadsNewWrites: what an incremental run deletes before
// it redoes it is found down the writes' index, from the cutoff on, not
// by a scan of every event.
func TestProvisionalReadsNewWrites(t *testing.T) {
	s := openTest(t)
	for _, q := range provisionalSQL {
		p := queryPlan(t, s, q, 1, "c")
		if strings.Contains(p, "SCAN audit_events") || strings.Contains(q, "audit_events") && !strings.Contains(p, "audit_events_writes (cluster=? AND received_ns>?)") {
			t.Errorf("%s\nplan: %s, want the cluster's writes after the cutoff down audit_events_writes", q, p)
		}
	}
}
