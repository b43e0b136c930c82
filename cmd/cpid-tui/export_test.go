package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/sqlite"
)

// spanRef names a span: its trace and span ids, in hex.
type spanRef struct{ trace, span string }

// exportSpan is what a test reads of a span of an export.
type exportSpan struct {
	kind    string // write, controller, cpid
	cpid    string
	change  string
	eventID int64
}

// exportGraph is an export file read back: its spans, and an edge from
// each span's parent (link false) and links (link true) to it.
type exportGraph struct {
	spans map[spanRef]exportSpan
	edges map[[2]spanRef]bool // from, to -> link
	// remote are the spans whose parent is outside the file (a traced
	// client's span), with that parent.
	remote map[spanRef]string
}

func newExportGraph() *exportGraph {
	return &exportGraph{spans: map[spanRef]exportSpan{}, edges: map[[2]spanRef]bool{}, remote: map[spanRef]string{}}
}

func (g *exportGraph) add(t *testing.T, r spanRef, s exportSpan) {
	t.Helper()
	if !isHex(r.trace, 32) || !isHex(r.span, 16) {
		t.Fatalf("span %v: ids are not lower-case hex of 16 and 8 bytes", r)
	}
	if _, dup := g.spans[r]; dup {
		t.Fatalf("span %v appears twice", r)
	}
	g.spans[r] = s
}

func isHex(s string, n int) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == n/2 && strings.ToLower(s) == s && strings.Trim(s, "0") != ""
}

// readOTLPFile reads an OTLP file (JSON lines of TracesData) with nothing
// of package export: every line one trace, ids in hex, times in ns as
// strings.
func readOTLPFile(t *testing.T, path string) *exportGraph {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := newExportGraph()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var d otlpTracesData
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		traces, changes := map[string]bool{}, map[string]bool{}
		for _, rs := range d.ResourceSpans {
			if otlpAttrs(rs.Resource.Attributes)["service.name"] == "" {
				t.Errorf("%s:%d: a resource without service.name", path, n)
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					a := otlpAttrs(s.Attributes)
					traces[s.TraceID], changes[a["cpid.change"]] = true, true
					for _, ns := range []string{s.StartTimeUnixNano, s.EndTimeUnixNano} {
						if _, err := strconv.ParseInt(ns, 10, 64); err != nil {
							t.Fatalf("%s:%d: time %q is not ns in a string", path, n, ns)
						}
					}
					r := spanRef{s.TraceID, s.SpanID}
					g.add(t, r, readSpan(t, a))
					if s.ParentSpanID != "" {
						g.edges[[2]spanRef{{s.TraceID, s.ParentSpanID}, r}] = false
						if s.Flags&0x300 == 0x300 {
							g.remote[r] = s.ParentSpanID
						}
					}
					for _, l := range s.Links {
						g.edges[[2]spanRef{{l.TraceID, l.SpanID}, r}] = true
					}
				}
			}
		}
		if len(traces) != 1 || len(changes) != 1 {
			t.Errorf("%s:%d: %d traces and %d changes on one line, want one of each", path, n, len(traces), len(changes))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return g
}

// otlpTracesData is OTLP/JSON's TracesData, as far as the tests read it.
type otlpTracesData struct {
	ResourceSpans []struct {
		Resource   struct{ Attributes []otlpKV }
		ScopeSpans []struct {
			Spans []otlpSpan
		}
	}
}

type otlpSpan struct {
	TraceID           string `json:"traceId"`
	SpanID            string `json:"spanId"`
	ParentSpanID      string `json:"parentSpanId"`
	Flags             uint32
	Name              string
	Kind              int
	StartTimeUnixNano string
	EndTimeUnixNano   string
	Attributes        []otlpKV
	Links             []struct {
		TraceID    string `json:"traceId"`
		SpanID     string `json:"spanId"`
		Attributes []otlpKV
	}
	Status struct {
		Code    int
		Message string
	}
}

type otlpKV struct {
	Key   string
	Value struct {
		StringValue *string
		IntValue    *string
		BoolValue   *bool
		ArrayValue  *struct{ Values []json.RawMessage }
	}
}

// otlpAttrs are attributes as strings (lists as JSON).
func otlpAttrs(kvs []otlpKV) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value; {
		case v.StringValue != nil:
			m[kv.Key] = *v.StringValue
		case v.IntValue != nil:
			m[kv.Key] = *v.IntValue
		case v.BoolValue != nil:
			m[kv.Key] = strconv.FormatBool(*v.BoolValue)
		case v.ArrayValue != nil:
			b, _ := json.Marshal(v.ArrayValue.Values)
			m[kv.Key] = string(b)
		}
	}
	return m
}

// readSpan is the span that attributes describe.
func readSpan(t *testing.T, a map[string]string) exportSpan {
	t.Helper()
	s := exportSpan{kind: "controller", cpid: a["cpid.cpid"], change: a["cpid.change"]}
	if id := a["cpid.event_id"]; id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			t.Fatalf("cpid.event_id %q", id)
		}
		s.kind, s.eventID = "write", n
	} else if a["cpid.span_id"] == "" {
		s.kind = "cpid"
	}
	return s
}

// readJaegerFile reads a Jaeger JSON file: CHILD_OF references are
// parents, FOLLOWS_FROM ones links.
func readJaegerFile(t *testing.T, path string) *exportGraph {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f jaegerData
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	g := newExportGraph()
	for _, tr := range f.Data {
		for _, s := range tr.Spans {
			if s.TraceID != tr.TraceID {
				t.Fatalf("span %s of trace %s says trace %s", s.SpanID, tr.TraceID, s.TraceID)
			}
			if _, ok := tr.Processes[s.ProcessID]; !ok {
				t.Fatalf("span %s: no process %q", s.SpanID, s.ProcessID)
			}
			r := spanRef{s.TraceID, s.SpanID}
			g.add(t, r, readSpan(t, s.tags()))
			for _, ref := range s.References {
				g.edges[[2]spanRef{{ref.TraceID, ref.SpanID}, r}] = ref.RefType == "FOLLOWS_FROM"
			}
		}
	}
	return g
}

// jaegerData is the Jaeger UI's JSON (and its query API's answer).
type jaegerData struct {
	Data []struct {
		TraceID   string `json:"traceID"`
		Spans     []jaegerSpan
		Processes map[string]struct{ ServiceName string }
	}
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string
	StartTime     int64
	Duration      int64
	ProcessID     string `json:"processID"`
	References    []struct {
		RefType string
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	Tags []struct {
		Key   string
		Value any
	}
}

func (s jaegerSpan) tags() map[string]string {
	m := map[string]string{}
	for _, tg := range s.Tags {
		m[tg.Key] = fmt.Sprint(tg.Value)
	}
	return m
}

// readPerfettoFile reads a Chrome JSON trace as Perfetto would: each flow
// event binds to the slice of its thread that encloses it (exactly one
// must), "cause" flows are parents, "merge" flows links; every write is
// also one async slice on its object's track.
func readPerfettoFile(t *testing.T, path string) *exportGraph {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []struct {
			Ph, Name, Cat, ID, BP string
			Pid, Tid              int
			Ts, Dur               json.Number
			Args                  map[string]any
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	type slice struct {
		ref        spanRef
		start, end int64
	}
	threads := map[[2]int][]slice{}
	flows := map[string][2][3]int64{} // id -> s, f: pid, tid, ts
	flowName := map[string]string{}
	objects := map[int64]int{}
	g := newExportGraph()
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "X":
			start, dur := nsOf(t, e.Ts), nsOf(t, e.Dur)
			a := map[string]string{}
			for k, v := range e.Args {
				a[k] = fmt.Sprint(v)
			}
			r := spanRef{a["trace_id"], a["span_id"]}
			g.add(t, r, readSpan(t, a))
			threads[[2]int{e.Pid, e.Tid}] = append(threads[[2]int{e.Pid, e.Tid}], slice{r, start, start + dur})
			if p := a["parent_span_id"]; p != "" {
				// Parents come from flows; one outside the file is the
				// traced client's.
				g.remote[r] = p
			}
		case "b":
			if e.Cat == "object" {
				id, _ := e.Args["event_id"].(float64)
				objects[int64(id)]++
			}
		case "s", "f":
			fl := flows[e.ID]
			i := 0
			if e.Ph == "f" {
				i = 1
				if e.BP != "e" {
					t.Fatalf("flow %s ends without bp e", e.ID)
				}
			}
			fl[i] = [3]int64{int64(e.Pid), int64(e.Tid), nsOf(t, e.Ts)}
			flows[e.ID], flowName[e.ID] = fl, e.Name
		}
	}
	bind := func(at [3]int64) spanRef {
		var in []spanRef
		for _, s := range threads[[2]int{int(at[0]), int(at[1])}] {
			if s.start < at[2] && at[2] < s.end {
				in = append(in, s.ref)
			}
		}
		if len(in) != 1 {
			t.Fatalf("a flow at %v binds to %d slices, want 1", at, len(in))
		}
		return in[0]
	}
	for id, fl := range flows {
		from, to := bind(fl[0]), bind(fl[1])
		switch flowName[id] {
		case "cause":
			g.edges[[2]spanRef{from, to}] = false
			delete(g.remote, to)
		case "merge":
			g.edges[[2]spanRef{from, to}] = true
		default:
			t.Fatalf("flow %s named %q", id, flowName[id])
		}
	}
	for _, s := range g.spans {
		if s.kind == "write" && objects[s.eventID] != 1 {
			t.Errorf("write %d is on its object's track %d times, want 1", s.eventID, objects[s.eventID])
		}
	}
	return g
}

// nsOf reads µs with up to three decimals as ns.
func nsOf(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	if s == "" {
		return 0
	}
	us, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000")[:3]
	v, err := strconv.ParseInt(us+frac, 10, 64)
	if err != nil {
		t.Fatalf("time %q", s)
	}
	return v
}

// TestExportDAG exports every change of every real fixture in each format
// and reads the files back: every write of a change is one span (and one
// async slice in Perfetto), of its change's trace; parents and links
// join the CPIDs as the merge DAG does (from every CPID, what the edges
// reach is what `query related` lists); the formats agree edge for edge.
func TestExportDAG(t *testing.T) {
	t.Parallel()
	bundles, _ := filepath.Glob("../../fixtures/*/bundle")
	if len(bundles) == 0 {
		t.Fatal("no fixtures")
	}
	for _, b := range bundles {
		fixture := filepath.Base(filepath.Dir(b))
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			checkExportDAG(t, b)
		})
	}
}

func checkExportDAG(t *testing.T, bundle string) {
	dbPath := reconstructedFixture(t, bundle)
	dir := t.TempDir()
	graphs := map[string]*exportGraph{}
	for format, read := range map[string]func(*testing.T, string) *exportGraph{
		"otlp": readOTLPFile, "jaeger": readJaegerFile, "perfetto": readPerfettoFile} {
		path := filepath.Join(dir, format)
		if code, _, e := runCmd(t, nil, "export", "--db", dbPath, "--all", "--format", format, "-o", path); code != 0 {
			t.Fatalf("export --format %s: %d %s", format, code, e)
		}
		graphs[format] = read(t, path)
	}
	db := openDB(t, dbPath)
	// The writes of changes, and the traced clients' spans.
	want := map[int64][2]string{} // event id -> change, cpid
	// (A failed write's CPID that no mergelog has is no span's CPID: the
	// merge never happened.)
	rows, err := db.Query(`SELECT event_id, change_id, CASE WHEN cpid IN (SELECT cpid FROM mergelogs) THEN cpid ELSE '' END
		FROM revisions WHERE change_id IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var ch, c string
		if err := rows.Scan(&id, &ch, &c); err != nil {
			t.Fatal(err)
		}
		want[id] = [2]string{ch, c}
	}
	rows.Close()
	clients := map[string]string{} // change -> the traceparent's span id
	rows, err = db.Query(`SELECT id, COALESCE(traceparent, '') FROM changes`)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for rows.Next() {
		var id, tp string
		if err := rows.Scan(&id, &tp); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, id)
		if p, err := cpid.ParseTraceparent(tp); err == nil {
			clients[id] = hex.EncodeToString(p.SpanID[:])
		}
	}
	rows.Close()

	st, err := sqlite.Open(context.Background(), dbPath, cpid.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	related := map[string][]string{}
	relatedOf := func(c string) []string {
		if r, ok := related[c]; ok {
			return r
		}
		r, err := st.Related(context.Background(), c)
		if err != nil {
			t.Fatalf("related %s: %v", c, err)
		}
		slices.Sort(r)
		related[c] = r
		return r
	}
	// `query related` itself, from the roots of 25 changes spread over
	// the fixture (of every change when it has fewer: the load fixture's
	// hundreds took 8 s of the test's 18).
	for i, id := range changes {
		if !spread(i, len(changes), 25) {
			continue
		}
		code, out, e := runCmd(t, nil, "query", "related", id, "--db", dbPath, "--output", "json")
		if code != 0 {
			t.Fatalf("query related %s: %d %s", id, code, e)
		}
		var rows []struct{ CPID string }
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.CPID)
		}
		slices.Sort(ids)
		if r := relatedOf(id); !slices.Equal(ids, r) {
			t.Fatalf("query related %s lists %v, the store %v", id, ids, r)
		}
	}

	for format, g := range graphs {
		// Every write of a change, once, in its change.
		seen := map[int64]bool{}
		for _, s := range g.spans {
			if s.kind != "write" {
				continue
			}
			w, ok := want[s.eventID]
			switch {
			case !ok:
				t.Errorf("%s: span of event %d, which is no change's write", format, s.eventID)
			case seen[s.eventID]:
				t.Errorf("%s: write %d appears twice", format, s.eventID)
			case s.change != w[0] || s.cpid != w[1]:
				t.Errorf("%s: write %d: change %s, CPID %s; want %s, %s", format, s.eventID, s.change, s.cpid, w[0], w[1])
			}
			seen[s.eventID] = true
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d writes exported, want %d", format, len(seen), len(want))
		}
		// Edges end at spans of the file; a parent outside it is the
		// traced client's span of a change's first write.
		down := map[string]map[string]bool{}
		for e, link := range g.edges {
			from, okFrom := g.spans[e[0]]
			to, okTo := g.spans[e[1]]
			if !okTo {
				t.Fatalf("%s: an edge to %v, which is not in the file", format, e[1])
			}
			if !okFrom {
				if link || clients[to.change] != e[0].span {
					t.Errorf("%s: %v's parent %v is not in the file (link %v)", format, e[1], e[0], link)
				}
				continue
			}
			if from.cpid != "" && to.cpid != "" && from.cpid != to.cpid {
				if down[from.cpid] == nil {
					down[from.cpid] = map[string]bool{}
				}
				down[from.cpid][to.cpid] = true
			}
		}
		for r, p := range g.remote {
			if s := g.spans[r]; clients[s.change] != p {
				t.Errorf("%s: %v's parent %s is remote, but not the traced client's span of change %s", format, r, p, s.change)
			}
		}
		// From every CPID the edges reach what query related lists.
		cpids := map[string]bool{}
		for _, s := range g.spans {
			if s.cpid != "" {
				cpids[s.cpid] = true
			}
		}
		for c := range cpids {
			reach := map[string]bool{c: true}
			todo := []string{c}
			for len(todo) > 0 {
				x := todo[len(todo)-1]
				todo = todo[:len(todo)-1]
				for y := range down[x] {
					if !reach[y] {
						reach[y] = true
						todo = append(todo, y)
					}
				}
			}
			got := make([]string, 0, len(reach))
			for x := range reach {
				got = append(got, x)
			}
			slices.Sort(got)
			if r := relatedOf(c); !slices.Equal(got, r) {
				t.Errorf("%s: from %s the parents and links reach %d CPIDs, query related lists %d:\n  reached %v\n  related %v",
					format, c, len(got), len(r), got, r)
			}
		}
	}
	// The formats agree span for span and edge for edge.
	inner := func(g *exportGraph) map[[2]spanRef]bool {
		m := map[[2]spanRef]bool{}
		for e, link := range g.edges {
			if _, ok := g.spans[e[0]]; ok {
				m[e] = link
			}
		}
		return m
	}
	ref := inner(graphs["otlp"])
	for format, g := range graphs {
		if len(g.spans) != len(graphs["otlp"].spans) {
			t.Errorf("%s: %d spans, otlp %d", format, len(g.spans), len(graphs["otlp"].spans))
		}
		if got := inner(g); !maps.Equal(got, ref) {
			t.Errorf("%s: %d parents and links within the file, otlp %d, or they differ", format, len(got), len(ref))
		}
	}
}

// TestExportUsage: what export refuses, and how it says so.
func TestExportUsage(t *testing.T) {
	dbPath := reconstructedFixture(t, "../../fixtures/figure-5/bundle")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing chosen", nil, 2, "give change IDs, --all, or filters"},
		{"ids and --all", []string{"4a01429c", "--all"}, 2, "not both"},
		{"unknown format", []string{"--all", "--format", "zipkin"}, 2, `--format "zipkin": want one of otlp, jaeger, perfetto`},
		{"endpoint without scheme", []string{"--all", "--otlp-endpoint", "localhost:4318"}, 2, "give an http:// or https:// URL"},
		{"header without endpoint", []string{"--all", "--otlp-header", "a=b"}, 2, "--otlp-header needs --otlp-endpoint"},
		{"header without value", []string{"--all", "--otlp-endpoint", "http://127.0.0.1:1", "--otlp-header", "a"}, 2, "give KEY=VALUE"},
		{"unknown id", []string{"ffffffff"}, 1, `no change "ffffffff"`},
		{"no match", []string{"--filter", "no-such-thing"}, 1, "no change matches the filters"},
		{"bad trigger", []string{"--trigger", "moon"}, 2, "--trigger"},
		{"receiver not listening", []string{"--all", "--otlp-endpoint", "http://127.0.0.1:1", "--otlp-attempts", "1"}, 1,
			"connection refused (gave up after 1 attempts)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := runCmd(t, nil, append([]string{"export", "--db", dbPath}, tc.args...)...)
			if code != tc.code || !strings.Contains(e, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, e, tc.code, tc.want)
			}
		})
	}
	// A prefix names its change; -o writes the file whole.
	out := filepath.Join(t.TempDir(), "web.json")
	code, _, e := runCmd(t, nil, "export", "--db", dbPath, "4a01429c", "--format", "jaeger", "-o", out)
	if code != 0 || !strings.Contains(e, "1 changes, 23 spans, jaeger to "+out) {
		t.Fatalf("export 4a01429c: %d %s", code, e)
	}
	if g := readJaegerFile(t, out); len(g.spans) != 23 {
		t.Errorf("%d spans in %s, want 23", len(g.spans), out)
	}
}
