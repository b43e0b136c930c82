package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestExpireWriterGoesOn: while an expiry deletes the older half of the
// real fixture in batches, a writer of the same cluster stores a batch
// between two of them without waiting for any lock (the server's lock
// table shows no request of the database waiting), and the result is
// exactly-once: every old record is deleted once (the batches add up to
// what was there, and nothing older is left), the writer's records newer
// than the horizon are all kept, its older ones skipped as duplicates, and
// every body left reads back.
func TestExpireWriterGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := openTest(t)
	if _, err := (&ingest.Ingester{Sink: a}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, a, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	count := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := a.pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	cutoff := count(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns) FROM audit_events`)
	oldAudits := count(`SELECT count(*) FROM audit_events WHERE received_ns < $1`, cutoff)
	oldLogs := count(`SELECT count(*) FROM log_records WHERE ts_ns < $1`, cutoff)
	newAudits := count(`SELECT count(*) FROM audit_events WHERE received_ns >= $1`, cutoff)
	newLogs := count(`SELECT count(*) FROM log_records WHERE ts_ns >= $1`, cutoff)
	const batch = 100
	if oldAudits < 4*batch {
		t.Fatalf("fixture: %d events before the cutoff, want several batches of %d", oldAudits, batch)
	}

	// The writer's batch: records on both sides of the horizon, each with
	// a body.
	var b cpid.Batch
	const each = 50
	for i := range 2 * each {
		x := cpid.Audit{Pos: cpid.Pos{File: "late-audit.log", Line: i + 1}}
		x.Hash[0], x.Hash[1], x.Hash[15] = 0xee, byte(i), 0x5a
		x.AuditID, x.Stage, x.Level, x.Verb = fmt.Sprint("late-", i), "ResponseComplete", "RequestResponse", "update"
		x.Resource, x.Namespace, x.Name = "configmaps", "default", fmt.Sprint("late-", i)
		x.ReceivedNS, x.StageNS = cutoff+int64(i), cutoff+int64(i)+1
		if i < each {
			x.ReceivedNS, x.StageNS = cutoff-1-int64(i), cutoff-int64(i)
		}
		x.RequestObject = []byte(fmt.Sprintf(`{"late":%d}`, i))
		b.Audits = append(b.Audits, x)
	}
	s := a.InCluster(a.own())
	var batches, deleted int64
	var wrote cpid.Written
	var writeErr error
	written := false
	done := make(chan struct{})
	x, err := s.expire(ctx, cutoff, false, batch, func(table string, n int64) error {
		batches++
		deleted += n
		if written {
			return nil
		}
		written = true
		// Expire is between two batches: the writer must commit now. It
		// runs beside, and the lock table says whether it waits.
		go func() {
			defer close(done)
			wrote, writeErr = s.Write(ctx, &b)
		}()
		for {
			select {
			case <-done:
				return nil
			case <-time.After(2 * time.Millisecond):
			}
			if w := count(`SELECT count(*) FROM pg_locks WHERE NOT granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); w > 0 {
				// The expiry fails here and lets it go.
				return fmt.Errorf("a writer waited for a lock between two batches of an expiry (%d requests waiting)", w)
			}
		}
	})
	if written {
		<-done
	}
	if err != nil {
		t.Fatal(err)
	}
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if !written || batches < 4 {
		t.Fatalf("%d batches, writer ran: %v; want several batches with the writer between two", batches, written)
	}
	if want := (cpid.Written{Audits: each, AuditDups: each}); wrote != want {
		t.Errorf("writer during expire: %+v, want %+v (older than the horizon: duplicates)", wrote, want)
	}
	if x.Audits != oldAudits || x.Logs != oldLogs || deleted != oldAudits+oldLogs {
		t.Errorf("expire deleted %+v in batches adding up to %d; want %d events and %d logs", x, deleted, oldAudits, oldLogs)
	}
	for q, want := range map[string]int64{
		`SELECT count(*) FROM audit_events WHERE received_ns < $1`:                                                0,
		`SELECT count(*) FROM log_records WHERE ts_ns < $1`:                                                       0,
		`SELECT count(*) FROM audit_events WHERE received_ns >= $1`:                                               newAudits + each,
		`SELECT count(*) FROM log_records WHERE ts_ns >= $1`:                                                      newLogs,
		`SELECT count(*) FROM audit_events WHERE audit_id LIKE 'late-%' AND received_ns >= $1`:                    each,
		`SELECT count(*) FROM audit_body_refs r LEFT JOIN audit_events e ON e.id = r.event_id WHERE e.id IS NULL`: 0,
		`SELECT count(*) FROM audit_body_refs r LEFT JOIN body_blocks k ON k.id = r.block_id WHERE k.id IS NULL`:  0,
		`SELECT count(*) FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
			WHERE b.event_id IS NULL AND e.verb IN ('create', 'update', 'patch')`: 0,
		`SELECT count(*) FROM revisions`:         0,
		`SELECT count(*) FROM reconstruct_state`: 0,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, cutoff)
		}
		if n := count(q, args...); n != want {
			t.Errorf("after expire: %s: %d, want %d", q, n, want)
		}
	}
	var body string
	if err := a.pool.QueryRow(ctx, `SELECT b.request_object FROM audit_bodies b JOIN audit_events e ON e.id = b.event_id
		WHERE e.audit_id = $1`, fmt.Sprint("late-", each)).Scan(&body); err != nil || body != fmt.Sprintf(`{"late":%d}`, each) {
		t.Errorf("body of the writer's first new event: %q, %v", body, err)
	}
	// Again: nothing left to delete, nothing counted twice.
	if again, err := s.Expire(ctx, cutoff, false); err != nil || again.Audits != 0 || again.Logs != 0 {
		t.Errorf("expire again: %+v, %v; want nothing", again, err)
	}
}
