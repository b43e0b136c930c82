package export

import (
	"cmp"
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestBuild checks the rules of Build on plain values: parents follow the
// causes within the CPIDs' lineage, merges link to their other sources
// (in another trace, or a span of their own when no write carries one),
// a failed write's unmerged CPID is no span's CPID, and a traced client's
// change is part of its trace.
func TestBuild(t *testing.T) {
	const (
		a, b, m, o, z = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002",
			"cccccccc-0000-0000-0000-000000000003", "dddddddd-0000-0000-0000-000000000004", "eeeeeeee-0000-0000-0000-000000000005"
		tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	w := func(id int64, c string, cause int64, attempt bool) cpid.TimelineEntry {
		return cpid.TimelineEntry{EventID: id, NS: id * 10, ReceivedNS: id*10 - 5, Writer: "w", Verb: "update", Resource: "pods",
			Namespace: "default", Name: "p", Kind: "Pod", CPID: c, CauseID: cause, Attempt: attempt, Code: map[bool]int{false: 200, true: 409}[attempt]}
	}
	x := Change{
		Row: cpid.ChangeRow{ID: a, Traceparent: tp, Trigger: cpid.TriggerUser},
		Timeline: []cpid.TimelineEntry{
			w(1, a, 0, false),
			w(2, a, 1, false),
			w(3, m, 2, false), // merges a, b and o
			w(4, a, 3, false), // caused by 3, whose CPID a does not descend from
			w(5, z, 2, true),  // failed: its merge never happened
		},
		Graph: cpid.ChangeGraph{Change: a, Nodes: []cpid.GraphNode{
			{CPID: a, Merges: []cpid.Merge{{Origin: "log", Service: "kubectl", TimeNS: 1}}},
			{CPID: m, Merges: []cpid.Merge{{Origin: "inferred", Service: "w", TimeNS: 30, Sources: []string{a, b, o}}}},
			{CPID: z},
		}},
	}
	x.Spans = []cpid.ChangeSpan{
		{SpanID: "reconcile", CPID: a, Service: "ctl", Name: "reconcile", StartNS: 21, EndNS: 29}, // after write 2 completed
		{SpanID: "sync", ParentID: "reconcile", CPID: a, Service: "ctl", Name: "sync", StartNS: 22, EndNS: 23},
		{SpanID: "early", CPID: m, Service: "ctl", Name: "early", StartNS: 1, EndNS: 2}, // before any write of m
	}
	y := cpid.ChangeRow{ID: b}
	s := &Set{Changes: []Change{x}, Carriers: map[string][]Carrier{
		a: {{Change: a, Trace: TraceOf(x.Row), EventID: 1, ReceivedNS: 5}},
		b: {{Change: b, Trace: TraceOf(y), EventID: 7, ReceivedNS: 1}, {Change: b, Trace: TraceOf(y), EventID: 8, ReceivedNS: 40}},
		o: nil,
	}}
	tr := Build(s)[0]
	if tr.ID.String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace %s, want the traceparent's", tr.ID)
	}
	spans := map[SpanID]Span{}
	for _, sp := range tr.Spans {
		spans[sp.ID] = sp
	}
	get := func(id int64) Span { return spans[WriteSpan(id)] }
	orphan := hashSpan("cpid", a, o)
	if sp := get(1); sp.Parent.String() != "b7ad6b7169203331" || !sp.ParentRemote {
		t.Errorf("first write: parent %s (remote %v), want the traced client's span", sp.Parent, sp.ParentRemote)
	}
	for id, want := range map[int64]SpanID{2: WriteSpan(1), 3: WriteSpan(2), 4: WriteSpan(2), 5: WriteSpan(2)} {
		if got := get(id).Parent; got != want {
			t.Errorf("write %d: parent %s, want %s", id, got, want)
		}
	}
	links := get(3).Links
	if len(links) != 2 || links[0] != (Link{TraceOf(y), WriteSpan(7), b, "inferred"}) || links[1] != (Link{tr.ID, orphan, o, "inferred"}) {
		t.Errorf("write 3 links %+v; want b's write received before it and o's own span", links)
	}
	if sp, ok := spans[orphan]; !ok || sp.Kind != KindCPID || sp.CPID != o || sp.StartNS != 30 || sp.Service != "w" {
		t.Errorf("o's span %+v", sp)
	}
	if attrs(get(4))["cpid.cause.event_id"] != int64(3) {
		t.Errorf("write 4: attributes %v, want its cause 3", attrs(get(4)))
	}
	if sp := get(5); sp.CPID != "" || attrs(sp)["cpid.unmerged_cpid"] != z || sp.Error != "HTTP 409" {
		t.Errorf("failed write: CPID %q, attributes %v, error %q", sp.CPID, attrs(sp), sp.Error)
	}
	// Controller spans: under their parent span, else the latest write of
	// their CPID completed before they started, else its first write.
	for name, want := range map[string]SpanID{"reconcile": WriteSpan(2), "sync": hashSpan("controller", a, "reconcile"), "early": WriteSpan(3)} {
		sp, ok := spans[hashSpan("controller", a, name)]
		if !ok || sp.Kind != KindController || sp.Parent != want {
			t.Errorf("controller span %s: %+v, want parent %s", name, sp, want)
		}
	}
	if !slices.IsSortedFunc(tr.Spans, func(x, y Span) int { return cmp.Compare(x.StartNS, y.StartNS) }) {
		t.Errorf("spans are not in the order of their start")
	}
}

func attrs(s Span) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attrs {
		m[a.Key] = a.Value
	}
	return m
}

func TestTraceOf(t *testing.T) {
	for _, tc := range []struct {
		row  cpid.ChangeRow
		want string
	}{
		{cpid.ChangeRow{ID: "4a01429c-8c13-4acc-9de6-b22fac6e727d"}, "4a01429c8c134acc9de6b22fac6e727d"},
		{cpid.ChangeRow{ID: "4a01429c-8c13-4acc-9de6-b22fac6e727d", Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
			"0af7651916cd43dd8448eb211c80319c"},
		{cpid.ChangeRow{ID: "4a01429c-8c13-4acc-9de6-b22fac6e727d", Traceparent: "garbage"}, "4a01429c8c134acc9de6b22fac6e727d"},
	} {
		if got := TraceOf(tc.row).String(); got != tc.want {
			t.Errorf("TraceOf(%+v) = %s, want %s", tc.row, got, tc.want)
		}
	}
	// Not a UUID: a hash, the same every time.
	if a, b := TraceOf(cpid.ChangeRow{ID: "x"}), TraceOf(cpid.ChangeRow{ID: "x"}); a != b || a == (TraceID{}) {
		t.Errorf("TraceOf(x) = %s, %s", a, b)
	}
	if WriteSpan(42).String() != "000000000000002a" {
		t.Errorf("WriteSpan(42) = %s", WriteSpan(42))
	}
}
