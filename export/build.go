package export

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/cpid-dev/cpid"
)

// Build makes one trace per change of s, in the order of s.Changes.
//
// Every write of a change is one span (KindWrite), from the apiserver
// receiving the request to its completion, in the writer's name. The
// spans' parents and links are the merge DAG of the CPIDs (what `cpid-tui
// query related` walks), laid over the causes reconstruct found:
//
//   - a write's parent is the write that caused it when that write carries
//     the same CPID or one this write's CPID descends from (nearly always);
//     otherwise the nearest write up the chain of causes that does, else
//     the latest earlier write of the change that carries the CPID or an
//     ancestor of it. The cause is then an attribute
//     (cpid.cause.event_id), not the parent, so that parents never join
//     CPIDs the merge DAG does not join;
//   - the first write of the change carrying a merged CPID links to a
//     write carrying each other source of the merge (the latest received
//     before it, else the first; of this change or another, so the link
//     may point into another trace);
//   - a source no write carries (a root that `cpid-tui stamp` logged and
//     merged with the object's CPID) becomes a span of its own (KindCPID),
//     at the time of the merge that names it;
//   - a controller span's parent is its parent span when that is a span of
//     the change, else the latest write of its CPID before it started.
func Build(s *Set) []Trace {
	out := make([]Trace, 0, len(s.Changes))
	for i := range s.Changes {
		out = append(out, build(s, &s.Changes[i]))
	}
	return out
}

// trace is the state of one Build of a change.
type trace struct {
	set *Set
	c   *Change
	// tl is the change's timeline, with the CPIDs that no mergelog has
	// (a failed write's: its merge never happened) left out, in unmerged.
	tl       []cpid.TimelineEntry
	unmerged map[int64]string
	id       TraceID
	remote   SpanID // the traced client's span (remoteParent), else zero
	spans    []Span
	byEvent  map[int64]int // event id -> index in c.Timeline
	sources  map[string][]merge
	anc      map[string]map[string]bool
	orphans  map[string]int // CPID no write carries -> index in spans
}

// merge is one source of a CPID's merges.
type merge struct {
	source, origin, service string
	timeNS                  int64
}

func build(s *Set, c *Change) Trace {
	t := &trace{set: s, c: c, id: TraceOf(c.Row), byEvent: map[int64]int{}, sources: map[string][]merge{},
		anc: map[string]map[string]bool{}, orphans: map[string]int{}}
	var flags byte
	t.remote, flags = remoteParent(c.Row)
	merged := map[string]bool{}
	for _, n := range c.Graph.Nodes {
		merged[n.CPID] = len(n.Merges) > 0
	}
	t.tl, t.unmerged = slices.Clone(c.Timeline), map[int64]string{}
	for i, w := range t.tl {
		t.byEvent[w.EventID] = i
		if w.CPID != "" && !merged[w.CPID] {
			t.unmerged[w.EventID] = w.CPID
			t.tl[i].CPID = ""
		}
	}
	for _, n := range c.Graph.Nodes {
		for _, m := range n.Merges {
			for _, src := range m.Sources {
				if !slices.ContainsFunc(t.sources[n.CPID], func(x merge) bool { return x.source == src }) {
					t.sources[n.CPID] = append(t.sources[n.CPID], merge{src, m.Origin, m.Service, m.TimeNS})
				}
			}
		}
	}
	first := map[string]bool{}
	for i, w := range t.tl {
		sp, p := t.write(i)
		if w.CPID != "" && !first[w.CPID] {
			first[w.CPID] = true
			parent := ""
			if p >= 0 {
				parent = t.tl[p].CPID
			}
			t.link(&sp, w.ReceivedNS, parent)
		}
		t.spans = append(t.spans, sp)
	}
	t.controllers()
	// Start order; a parent before its children when they start together.
	order := make([]int, len(t.spans))
	for i := range order {
		order[i] = i
	}
	depth := t.depths()
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := t.spans[a], t.spans[b]
		if x.StartNS != y.StartNS {
			return cmp.Compare(x.StartNS, y.StartNS)
		}
		return depth[a] - depth[b]
	})
	spans := make([]Span, len(order))
	for i, j := range order {
		spans[i] = t.spans[j]
	}
	return Trace{ID: t.id, Change: c.Row, Remote: t.remote, Sampled: flags&1 == 1, Spans: spans}
}

// depths are the spans' depths in the parent tree.
func (t *trace) depths() []int {
	idx := map[SpanID]int{}
	for i, s := range t.spans {
		idx[s.ID] = i
	}
	d := make([]int, len(t.spans))
	for i := range t.spans {
		for p, n := t.spans[i].Parent, 0; !p.IsZero() && n < len(t.spans); n++ {
			j, ok := idx[p]
			if !ok {
				break
			}
			d[i]++
			p = t.spans[j].Parent
		}
	}
	return d
}

// ancestors are the CPIDs c descends from, as far as the change's merges
// tell.
func (t *trace) ancestors(c string) map[string]bool {
	if a, ok := t.anc[c]; ok {
		return a
	}
	a := map[string]bool{}
	t.anc[c] = a // a cycle (an anomaly reconstruct reports) ends here
	for _, m := range t.sources[c] {
		a[m.source] = true
		for x := range t.ancestors(m.source) {
			a[x] = true
		}
	}
	return a
}

// lineage reports whether a write carrying from may be the parent of one
// carrying to: the same CPID, or one to descends from.
func (t *trace) lineage(from, to string) bool {
	return from == to || to == "" || t.ancestors(to)[from]
}

// write is the span of the i-th write of the change, and the index of
// the write that is its parent (-1 for none).
func (t *trace) write(i int) (Span, int) {
	w := t.tl[i]
	start := w.ReceivedNS
	if start == 0 || start > w.NS {
		start = w.NS
	}
	sp := Span{ID: WriteSpan(w.EventID), Kind: KindWrite, Service: w.Writer, Name: w.Verb + " " + w.Resource + sub(w.Subresource),
		StartNS: start, EndNS: w.NS, CPID: w.CPID, EventID: w.EventID}
	if w.Code >= 400 {
		sp.Error = "HTTP " + strconv.Itoa(w.Code)
	}
	p := t.parent(i)
	if p >= 0 {
		sp.Parent = WriteSpan(t.tl[p].EventID)
	} else if i == 0 {
		sp.Parent = t.remote
		sp.ParentRemote = !sp.Parent.IsZero()
	}
	sp.Attrs = writeAttrs(t.c.Row, w, i == 0)
	if c := t.unmerged[w.EventID]; c != "" {
		sp.Attrs = append(sp.Attrs, str("cpid.unmerged_cpid", c))
	}
	if w.CauseID != 0 && sp.Parent != WriteSpan(w.CauseID) {
		sp.Attrs = append(sp.Attrs, num("cpid.cause.event_id", w.CauseID), str("cpid.cause.span_id", WriteSpan(w.CauseID).String()))
	}
	return sp, p
}

// parent is the index of the write that is the i-th write's parent, -1
// for none.
func (t *trace) parent(i int) int {
	w := t.tl[i]
	// Up the chain of causes, within the change.
	seen := 0
	for id := w.CauseID; id != 0 && seen < len(t.tl); seen++ {
		j, ok := t.byEvent[id]
		if !ok || j == i {
			break
		}
		if t.lineage(t.tl[j].CPID, w.CPID) {
			return j
		}
		id = t.tl[j].CauseID
	}
	if w.CauseID == 0 && i == 0 {
		return -1
	}
	// The latest earlier write of the same CPID, else of an ancestor.
	for _, same := range []bool{true, false} {
		for j := i - 1; j >= 0; j-- {
			c := t.tl[j].CPID
			if (same && c == w.CPID) || (!same && t.lineage(c, w.CPID)) {
				return j
			}
		}
	}
	return -1
}

// link adds to sp, the first span of the trace carrying its CPID, a link
// to a span carrying each source of the CPID's merges that its parent (a
// write carrying parent, "" for none) does not carry.
func (t *trace) link(sp *Span, at int64, parent string) {
	var srcs []string
	for _, m := range t.sources[sp.CPID] {
		srcs = append(srcs, m.source)
		if m.source == parent {
			continue
		}
		if tr, id, ok := t.carrier(m.source, at); ok {
			sp.Links = append(sp.Links, Link{Trace: tr, Span: id, Source: m.source, Origin: m.origin})
			continue
		}
		o := t.orphan(m)
		if sp.Parent.IsZero() {
			sp.Parent = o
			parent = m.source
			continue
		}
		sp.Links = append(sp.Links, Link{Trace: t.id, Span: o, Source: m.source, Origin: m.origin})
	}
	if len(srcs) > 0 {
		sp.Attrs = append(sp.Attrs, Attr{"cpid.merge.sources", srcs})
	}
}

// carrier is the span of the write carrying cpid that a span starting at
// ns links to: the latest received before it, else the first.
func (t *trace) carrier(cpid string, ns int64) (TraceID, SpanID, bool) {
	cs := t.set.Carriers[cpid]
	if len(cs) == 0 {
		return TraceID{}, SpanID{}, false
	}
	pick := cs[0]
	for _, c := range cs {
		if c.ReceivedNS < ns && c.ReceivedNS >= pick.ReceivedNS {
			pick = c
		}
	}
	return pick.Trace, WriteSpan(pick.EventID), true
}

// orphan is the span of a merge source no write carries, made once per
// trace, with links to the writes carrying what it descends from.
func (t *trace) orphan(m merge) SpanID {
	if i, ok := t.orphans[m.source]; ok {
		return t.spans[i].ID
	}
	sp := Span{ID: hashSpan("cpid", t.c.Row.ID, m.source), Kind: KindCPID, Service: m.service, Name: "cpid",
		StartNS: m.timeNS, EndNS: m.timeNS, CPID: m.source,
		Attrs: []Attr{str("cpid.cpid", m.source), str("cpid.change", t.c.Row.ID), str("cpid.origin", m.origin)}}
	for _, a := range t.set.Ancestors[m.source] {
		if tr, id, ok := t.carrier(a, m.timeNS); ok {
			sp.Links = append(sp.Links, Link{Trace: tr, Span: id, Source: a, Origin: "ancestor"})
		}
	}
	t.orphans[m.source] = len(t.spans)
	t.spans = append(t.spans, sp)
	return sp.ID
}

// controllers adds the controller spans of the change.
func (t *trace) controllers() {
	ids, cpidOf := map[string]SpanID{}, map[string]string{}
	for _, s := range t.c.Spans {
		ids[s.SpanID] = hashSpan("controller", t.c.Row.ID, s.SpanID)
		cpidOf[s.SpanID] = s.CPID
	}
	for _, s := range t.c.Spans {
		sp := Span{ID: ids[s.SpanID], Kind: KindController, Service: s.Service, Name: s.Name, StartNS: s.StartNS, EndNS: s.EndNS,
			CPID: s.CPID, Attrs: []Attr{str("cpid.cpid", s.CPID), str("cpid.change", t.c.Row.ID), str("cpid.span_id", s.SpanID)}}
		if p, ok := ids[s.ParentID]; ok && s.ParentID != s.SpanID && t.lineage(cpidOf[s.ParentID], s.CPID) {
			sp.Parent = p
		} else if j := t.writeBefore(s.CPID, s.StartNS); j >= 0 {
			sp.Parent = WriteSpan(t.tl[j].EventID)
		}
		t.spans = append(t.spans, sp)
	}
}

// writeBefore is the latest write of the change carrying cpid (else an
// ancestor of it) completed by ns, else the first carrying cpid; -1 for
// none.
func (t *trace) writeBefore(cpid string, ns int64) int {
	for _, same := range []bool{true, false} {
		best := -1
		for j, w := range t.tl {
			ok := w.CPID == cpid
			if !same {
				ok = t.lineage(w.CPID, cpid) && w.CPID != ""
			}
			if ok && w.NS <= ns {
				best = j
			}
		}
		if best >= 0 {
			return best
		}
	}
	for j, w := range t.tl {
		if w.CPID == cpid {
			return j
		}
	}
	return -1
}

// writeAttrs are the attributes of a write: OpenTelemetry's semantic
// conventions where one fits, cpid's own (cpid.*) for the rest.
func writeAttrs(c cpid.ChangeRow, w cpid.TimelineEntry, root bool) []Attr {
	var a []Attr
	if w.Namespace != "" {
		a = append(a, str("k8s.namespace.name", w.Namespace))
	}
	if k := objectKey(w.APIGroup, w.Resource); k != "" {
		a = append(a, str(k, w.Name))
	}
	if m := cpid.Method(w.Verb); m != "" {
		a = append(a, str("http.request.method", m))
	}
	if w.Code != 0 {
		a = append(a, num("http.response.status_code", int64(w.Code)))
	}
	a = append(a,
		str("cpid.change", c.ID),
		num("cpid.event_id", w.EventID),
		str("cpid.writer", w.Writer),
		str("cpid.verb", w.Verb),
		str("cpid.object", object(w.Kind, w.Namespace, w.Name)),
		str("cpid.kind", w.Kind),
		str("cpid.resource", w.Resource))
	if w.APIGroup != "" {
		a = append(a, str("cpid.api_group", w.APIGroup))
	}
	if w.Subresource != "" {
		a = append(a, str("cpid.subresource", w.Subresource))
	}
	if w.CPID != "" {
		a = append(a, str("cpid.cpid", w.CPID))
	}
	a = append(a, str("cpid.origin", w.Origin))
	if w.Attempt {
		a = append(a, flag("cpid.attempt", true))
	}
	if w.Critical {
		a = append(a, flag("cpid.critical", true))
	}
	if w.CauseID != 0 {
		a = append(a, str("cpid.rule", w.Rule), num("cpid.hop_ns", w.HopNS), str("cpid.explain", string(w.Explain)),
			str("cpid.confidence", string(w.Confidence)))
		if w.ExplainDetail != "" {
			a = append(a, str("cpid.explain_detail", w.ExplainDetail))
		}
	}
	if root {
		a = append(a, str("cpid.trigger", string(c.Trigger)))
		if c.TriggerDetail != "" {
			a = append(a, str("cpid.trigger_detail", c.TriggerDetail))
		}
	}
	return a
}

// objectKeys are the semantic conventions' attributes naming an object of
// a resource (its API group, then the resource).
var objectKeys = map[string]string{
	"/pods": "k8s.pod.name", "/nodes": "k8s.node.name", "/namespaces": "k8s.namespace.name",
	"/replicationcontrollers": "k8s.replicationcontroller.name", "/resourcequotas": "k8s.resourcequota.name",
	"apps/deployments": "k8s.deployment.name", "apps/replicasets": "k8s.replicaset.name",
	"apps/statefulsets": "k8s.statefulset.name", "apps/daemonsets": "k8s.daemonset.name",
	"batch/jobs": "k8s.job.name", "batch/cronjobs": "k8s.cronjob.name", "autoscaling/horizontalpodautoscalers": "k8s.hpa.name",
}

func objectKey(group, resource string) string { return objectKeys[group+"/"+resource] }

// object names an object: "Kind namespace/name".
func object(kind, ns, name string) string { return cpid.ObjectName(kind, ns, name) }

func sub(s string) string {
	if s == "" {
		return ""
	}
	return "/" + strings.TrimPrefix(s, "/")
}
