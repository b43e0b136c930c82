package ingest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTailKlogText: the live tailer reads klog text as ingest does: a
// record whose value spans lines is one record, dated by the file's year,
// named by the file's component, completed when the next record comes or
// when the file has nothing more for now; records written while the tailer
// was stopped are read once.
func TestTailKlogText(t *testing.T) {
	t.Parallel()
	bubble(t, testTailKlogText)
}

func testTailKlogText(t *testing.T) {
	h := newHarness(t, "kube-controller-manager.log")
	h.write("kube-controller-manager.log", []byte(strings.Join([]string{
		`I1124 05:55:09.000001       1 a.go:1] "single" k="v"`,
		`I1124 05:55:09.000002       1 configfile.go:94] "Using component config" config=<`,
		"\tapiVersion: v1",
		"\tkind: X",
		" >",
		`I1124 05:55:09.000003       1 b.go:2] "last, completed when the file is idle" n=3`,
	}, "\n")+"\n"))
	h.start()
	logs := waitLogs(t, h, 3)
	if !strings.Contains(logs[1], "apiVersion: v1") || !strings.Contains(logs[1], "kind: X") {
		t.Errorf("the multi-line record was not joined: %q", logs)
	}
	if len(h.notices()) > 0 {
		t.Errorf("notices: %v", h.notices())
	}
	h.stop()

	// Written while stopped: read once after the restart, joined.
	h.write("kube-controller-manager.log", []byte(strings.Join([]string{
		`E1124 05:55:10.000004       1 c.go:3] "after the restart" err=<`,
		"\tline one",
		"\tline two",
		" >",
	}, "\n")+"\n"))
	h.start()
	logs = waitLogs(t, h, 4)
	if !strings.Contains(logs[3], "line one") || !strings.Contains(logs[3], "line two") {
		t.Errorf("the record written while stopped was not joined: %q", logs)
	}
	if len(h.notices()) > 0 {
		t.Errorf("notices: %v", h.notices())
	}
}

// waitLogs lets fake time pass until n log records are stored (see until),
// and returns their messages with their
// fields, component and time, in time order.
func waitLogs(t *testing.T, h *harness, n int) []string {
	t.Helper()
	var got []string
	h.until(fmt.Sprintf("%d log records", n), func() bool {
		got = nil
		if h.r != nil {
			rows, err := h.r.Query(`SELECT component, ts_ns, msg, fields FROM log_records ORDER BY ts_ns`)
			if err == nil {
				for rows.Next() {
					var comp, msg, fields string
					var ts int64
					rows.Scan(&comp, &ts, &msg, &fields)
					when := time.Unix(0, ts).UTC()
					if when.Year() < 2026 || comp == "" {
						t.Fatalf("record %q: component %q, time %v", msg, comp, when)
					}
					got = append(got, comp+" "+msg+" "+fields)
				}
				rows.Close()
			}
		}
		if len(got) > n {
			t.Fatalf("%d log records, want %d: %q", len(got), n, got)
		}
		return len(got) == n
	}, func() string { return fmt.Sprintf("%d log records: %q; notices %v", len(got), got, h.notices()) })
	return got
}
