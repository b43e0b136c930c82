package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestTracedFixture: on a recording where a traced CI job created a
// Deployment (cpid-tui stamp with TRACEPARENT), an untraced user scaled it
// and a traced GitOps tool without CPIDs scaled it again, each change
// carries exactly the traceparent the ground truth gives its action (none
// for the untraced one), and the instrumented controllers carried the
// CI job's trace context on to every ReplicaSet and Pod the change wrote.
func TestTracedFixture(t *testing.T) {
	checkAttribution(t, "traced", 1, 1)

	dir := "../../fixtures/traced"
	var tr struct {
		Actions []struct {
			ID          string
			Traceparent string
			StartNS     int64 `json:"start_ns"`
			EndNS       int64 `json:"command_end_ns"`
		}
	}
	readTruthInto(t, dir, &tr)
	dbPath := reconstructedFixture(t, filepath.Join(dir, "bundle"))
	code, out, e := runCmd(t, nil, "query", "changes", "--db", dbPath, "--output", "json")
	if code != 0 {
		t.Fatalf("query changes: %d %s", code, e)
	}
	var changes []struct {
		ID          string
		StartedNS   int64 `json:"started_ns"`
		Trigger     string
		User        string
		Traceparent string
	}
	if err := json.Unmarshal([]byte(out), &changes); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	db := openDB(t, dbPath)
	traced := 0
	for _, a := range tr.Actions {
		var found []string
		for _, c := range changes {
			if c.Trigger == "user" && c.StartedNS >= a.StartNS && c.StartedNS <= a.EndNS {
				found = append(found, c.ID)
				if c.Traceparent != a.Traceparent {
					t.Errorf("%s: change %s has traceparent %q, want %q", a.ID, c.ID, c.Traceparent, a.Traceparent)
				}
			}
		}
		if len(found) != 1 {
			t.Errorf("%s: %d user changes in its window, want 1", a.ID, len(found))
			continue
		}
		checkExportTrace(t, dbPath, found[0], a.Traceparent)
		if a.Traceparent == "" {
			continue
		}
		traced++
		// The controllers' writes of the change went on in its trace:
		// what they created, updated or patched. (A delete's object, a
		// Binding, carries the trace context it had, or none.)
		var writes, carried int
		if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE e.traceparent = ?) FROM revisions r
			JOIN audit_events e ON e.id = r.event_id
			WHERE r.change_id = ? AND r.attempt = 0 AND r.writer_is_user = 0 AND r.resource IN ('replicasets', 'pods')
			  AND e.verb IN ('create', 'update', 'patch') AND e.subresource != 'binding'`,
			a.Traceparent, found[0]).Scan(&writes, &carried); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d of %d controller writes of ReplicaSets and Pods carry the action's traceparent", a.ID, carried, writes)
		if writes == 0 || carried != writes {
			t.Errorf("%s: %d of %d controller writes of ReplicaSets and Pods carry %s", a.ID, carried, writes, a.Traceparent)
		}
	}
	if traced < 2 {
		t.Errorf("the ground truth has %d traced actions, want 2", traced)
	}
}

// checkExportTrace exports a change as OTLP and checks that a traced
// client's change is in the client's trace, its root write's span a child
// of the client's span, and an untraced change in a trace of its own.
func checkExportTrace(t *testing.T, dbPath, change, traceparent string) {
	t.Helper()
	code, out, e := runCmd(t, nil, "export", change, "--format", "otlp", "-o", "-", "--db", dbPath)
	if code != 0 {
		t.Fatalf("export %s: %d %s", change, code, e)
	}
	var td struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					ParentSpanID string `json:"parentSpanId"`
				}
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &td) != nil {
		t.Fatalf("export %s: want one TracesData line, got %d:\n%.300s", change, len(lines), out)
	}
	tp, _ := cpid.ParseTraceparent(traceparent)
	var spans, inTrace, underClient int
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans++
				if s.TraceID == tp.TraceIDString() {
					inTrace++
				}
				if s.ParentSpanID == tp.SpanIDString() {
					underClient++
				}
			}
		}
	}
	t.Logf("export of %s: %d spans, %d in the traceparent's trace, %d under its span", change, spans, inTrace, underClient)
	switch {
	case spans == 0:
		t.Errorf("export of %s has no spans", change)
	case traceparent != "" && (inTrace != spans || underClient != 1):
		t.Errorf("export of %s: %d of %d spans in trace %s, %d under the client's span %s; want all, and one",
			change, inTrace, spans, tp.TraceIDString(), underClient, tp.SpanIDString())
	case traceparent == "" && inTrace != 0:
		t.Errorf("export of untraced %s: %d spans in a traced client's trace", change, inTrace)
	}
}
