package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestWriteDuplicates: a record twice in one batch, or already stored, is
// skipped and counted against the checkpoint that covers it; ids number
// the stored records in the batch's order, with no gap for a skipped one;
// every body reference points at a stored event and block.
func TestWriteDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t).InCluster("c1")
	audit := func(n byte, verb string) cpid.Audit {
		a := cpid.Audit{Pos: cpid.Pos{File: "audit.log", Line: int(n)}}
		a.Hash[0] = n
		a.AuditID, a.Stage, a.Level, a.Verb = fmt.Sprint("id-", n), "ResponseComplete", "RequestResponse", verb
		a.Resource, a.Namespace, a.Name = "pods", "default", fmt.Sprint("p", n)
		a.SourceIPs = []string{"10.0.0.1", `<"x">`}
		a.RequestObject = []byte(fmt.Sprintf(`{"n":%d}`, n))
		a.OwnerRefs = []byte("null")
		return a
	}
	logRec := func(n byte) cpid.Log {
		l := cpid.Log{Pos: cpid.Pos{File: "kcm.log", Line: int(n)}}
		l.Hash[0] = n
		l.Msg, l.Fields = fmt.Sprint("m", n), []byte(`{}`)
		return l
	}
	b := &cpid.Batch{
		Audits: []cpid.Audit{audit(1, "create"), audit(2, "get"), audit(1, "create"), audit(3, "update")},
		Logs:   []cpid.Log{logRec(1), logRec(1)},
		Checkpoints: []cpid.Checkpoint{
			{Source: "audit.log", Audits: 2, Lines: 2},
			{Source: "audit.log.2", Audits: 2, Logs: 2, Lines: 4},
		},
	}
	w, err := s.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpid.Written{Audits: 3, AuditDups: 1, Logs: 1, LogDups: 1}); w != want {
		t.Fatalf("first write: %+v, want %+v", w, want)
	}
	w, err = s.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpid.Written{AuditDups: 4, LogDups: 2}); w != want {
		t.Fatalf("second write: %+v, want %+v", w, want)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, get_byte(hash, 0), source_ips, owner_refs, code FROM audit_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int64
		var h int
		var ips, owners *string
		var code *int64
		if err := rows.Scan(&id, &h, &ips, &owners, &code); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%d %v %v %v", id, h, *ips, owners, code))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{`1:1 ["10.0.0.1","\u003c\"x\"\u003e"] <nil> <nil>`, `2:2 ["10.0.0.1","\u003c\"x\"\u003e"] <nil> <nil>`,
		`3:3 ["10.0.0.1","\u003c\"x\"\u003e"] <nil> <nil>`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit events:\n got %q\nwant %q", got, want)
	}
	var cks []string
	rows, err = s.pool.Query(ctx, `SELECT source, records, dups, lines FROM tail_checkpoints ORDER BY source`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var src string
		var rec, dups, lines int64
		if err := rows.Scan(&src, &rec, &dups, &lines); err != nil {
			t.Fatal(err)
		}
		cks = append(cks, fmt.Sprintf("%s %d/%d/%d", src, rec, dups, lines))
	}
	// audit.log: 2 stored, then 2 dups; audit.log.2: 2 stored and 2 dups
	// (events 1 again and log 1 again), then 4 dups.
	if want := "[audit.log 2/2/4 audit.log.2 2/6/8]"; fmt.Sprint(cks) != want {
		t.Errorf("checkpoints %v, want %s", cks, want)
	}
	var bodies, orphans int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE e.id IS NULL OR k.id IS NULL)
		FROM audit_body_refs r LEFT JOIN audit_events e ON e.id = r.event_id LEFT JOIN body_blocks k ON k.id = r.block_id`).
		Scan(&bodies, &orphans); err != nil {
		t.Fatal(err)
	}
	if bodies != 3 || orphans != 0 {
		t.Errorf("%d body references, %d orphans; want 3, 0", bodies, orphans)
	}
	var body string
	if err := s.pool.QueryRow(ctx, `SELECT request_object FROM audit_bodies WHERE event_id = 3`).Scan(&body); err != nil || body != `{"n":3}` {
		t.Errorf("body of event 3: %q, %v", body, err)
	}
}

// TestWriteConcurrentSameRecords: writers of one cluster storing the same
// batches at once (two tailers of an HA control plane's apiservers) store
// each record once, and every write succeeds.
func TestWriteConcurrentSameRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	const writers, batches, size = 4, 20, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total cpid.Written
	for range writers {
		s := st.InCluster("ha")
		wg.Go(func() {
			for i := range batches {
				b := &cpid.Batch{}
				for j := range size {
					a := cpid.Audit{Pos: cpid.Pos{File: "audit.log", Line: i*size + j + 1}}
					a.Hash[0], a.Hash[1], a.Hash[2] = byte(i), byte(j), 7
					a.Verb, a.Stage = "update", "ResponseComplete"
					a.ResponseObject = []byte(fmt.Sprintf(`{"i":%d,"j":%d}`, i, j))
					b.Audits = append(b.Audits, a)
				}
				w, err := s.Write(ctx, b)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total.Add(w)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if total.Audits != batches*size || total.AuditDups != (writers-1)*batches*size {
		t.Errorf("stored %d and skipped %d, want %d and %d", total.Audits, total.AuditDups, batches*size, (writers-1)*batches*size)
	}
	var n, refs int
	if err := st.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_events), (SELECT count(DISTINCT event_id) FROM audit_body_refs)`).
		Scan(&n, &refs); err != nil {
		t.Fatal(err)
	}
	if n != batches*size || refs != n {
		t.Errorf("%d events with %d bodies, want %d of each", n, refs, batches*size)
	}
}
