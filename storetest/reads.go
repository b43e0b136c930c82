package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/reconstruct"
)

// Reads writes to w, section by section, what every read of the read side
// answers on the database e: the changes (every sort, every filter, ids by
// prefix), each change's timeline (alone and read together), graph, logs,
// spans, the merge DAG around each CPID, the history and revisions of each
// object written, the objects a reference finds, the SLIs' pod writes and
// hops, the anomalies, and the evidence reconstruct reads. An error is
// written as the section's answer (its code and text), so that engines
// must fail alike. Bodies are written as their digest.
func Reads(ctx context.Context, e Engine, w io.Writer) error {
	p := &printer{w: w}
	for _, sort := range []string{"time", "duration", "size", "nope"} {
		p.read("changes by "+sort+", 3 after the first", func() (any, error) {
			return e.Changes(ctx, cpid.ChangeQuery{Sort: sort, Limit: 3, Offset: 1})
		})
	}
	p.read("changes, no limit given", func() (any, error) { return e.Changes(ctx, cpid.ChangeQuery{}) })
	p.read("count web", func() (any, error) { return e.CountChanges(ctx, "web") })
	p.read("count WEB", func() (any, error) { return e.CountChanges(ctx, "WEB") })
	p.read("changes past the last", func() (any, error) { return e.Changes(ctx, cpid.ChangeQuery{Offset: 1 << 20}) })
	changes, err := e.Changes(ctx, cpid.ChangeQuery{Limit: 1000})
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		return fmt.Errorf("no change")
	}
	p.read("changes", func() (any, error) { return changes, nil })
	mid := changes[len(changes)/2]
	for _, c := range []struct {
		name string
		q    cpid.ChangeQuery
	}{
		{"filter WEB", cpid.ChangeQuery{Filter: "WEB"}},
		{"of deployments in default by a controller", cpid.ChangeQuery{Namespace: "default", Writer: "CONTROLLER", MinDurationNS: 1,
			Kind: &cpid.ResourceMatch{Resources: []string{"deployments", "deployment"}, Group: "apps"}}},
		{"of any group's deployments by an admin", cpid.ChangeQuery{User: "Admin",
			Kind: &cpid.ResourceMatch{Resources: []string{"deployments"}, AnyGroup: true}}},
		{"in a window, by a user", cpid.ChangeQuery{SinceNS: mid.StartedNS, UntilNS: changes[0].StartedNS + 1, Trigger: cpid.TriggerUser}},
		{"by a prefix of the middle one", cpid.ChangeQuery{IDPrefix: mid.ID[:1]}},
		{"by the whole id of the middle one", cpid.ChangeQuery{IDPrefix: mid.ID}},
		{"by an unknown prefix", cpid.ChangeQuery{IDPrefix: "zz"}},
		{"a writer, in the filter", cpid.ChangeQuery{Filter: "Scheduler"}},
		{"a verb, in the filter", cpid.ChangeQuery{Filter: "update/status"}},
		{"a code, in the filter", cpid.ChangeQuery{Filter: "409"}},
		{"a success code, in the filter", cpid.ChangeQuery{Filter: "201"}},
		{"a name's part, in the filter", cpid.ChangeQuery{Filter: "-7"}},
	} {
		q := c.q
		q.Limit = 1000
		p.read("changes "+c.name, func() (any, error) { return e.Changes(ctx, q) })
	}
	ids := make([]string, len(changes))
	for i, c := range changes {
		ids[i] = c.ID
	}
	p.read("changes by id", func() (any, error) { return e.ChangesByID(ctx, append(slices.Clone(ids), "nope")) })
	p.read("changes by no id", func() (any, error) { return e.ChangesByID(ctx, nil) })
	p.read("changes carrying no CPID", func() (any, error) { return e.ChangesCarrying(ctx, nil) })
	p.read("logs of "+changes[0].ID+", 2 lines at most", func() (any, error) { return e.ChangeLogs(ctx, changes[0].ID, 2) })
	all, err := e.Timelines(ctx, append(slices.Clone(ids), "nope"))
	if err != nil {
		return err
	}
	p.read("timelines read together: how many", func() (any, error) { return len(all), nil })
	// The objects and CPIDs read one by one: the first ones of the
	// timelines, enough to cover every kind of answer while the golden
	// files stay readable.
	const most = 25
	objects := map[cpid.ObjectKey]bool{}
	resources := map[string]bool{}
	cpids := map[string]bool{}
	for _, c := range changes {
		id := c.ID
		tl, err := e.Timeline(ctx, id)
		p.read("timeline "+id, func() (any, error) { return tl, err })
		if !reflect.DeepEqual(all[id], tl) {
			p.read("timeline "+id+" read with the others", func() (any, error) { return all[id], nil })
		}
		p.read("graph "+id, func() (any, error) { return e.ChangeGraph(ctx, id) })
		p.read("logs "+id, func() (any, error) { return e.ChangeLogs(ctx, id, 50) })
		p.read("spans "+id, func() (any, error) { return e.Spans(ctx, id) })
		p.read("controller spans "+id, func() (any, error) { return e.ChangeSpans(ctx, id) })
		// Of one change, how many: what they are is read of all changes
		// below.
		p.read("pod writes of "+id+": how many", func() (any, error) { return count(e.PodWrites(ctx, id)) })
		p.read("hops of "+id+": how many", func() (any, error) { return count(e.Hops(ctx, id)) })
		p.read("anomalies of "+id+": how many", func() (any, error) { return count(e.Anomalies(ctx, id)) })
		for _, t := range tl {
			k := cpid.ObjectKey{Group: t.APIGroup, Resource: t.Resource, Namespace: t.Namespace, Name: t.Name}
			if !objects[k] && len(objects) < most {
				objects[k] = true
				p.objectReads(ctx, e, k, t, id, len(objects) == 1)
			}
			resources[k.Resource] = true
			if t.CPID != "" && !cpids[t.CPID] && len(cpids) < most {
				cpids[t.CPID] = true
				p.cpidReads(ctx, e, t.CPID, id)
			}
		}
	}
	for _, r := range sortedKeys(resources) {
		p.read("objects of "+r, func() (any, error) {
			return e.Objects(ctx, cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{r}, AnyGroup: true},
				AllNamespaces: true})
		})
	}
	p.read("resources written", func() (any, error) { return e.WrittenResources(ctx) })
	for _, q := range []cpid.ObjectNameQuery{
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{"deployments"}, Group: "apps"}, AllNamespaces: true},
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods", "x"}, AnyGroup: true}, Prefix: "web-", Namespace: "default"},
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{"pods"}}, Prefix: "web-", Namespace: "default", Limit: 2},
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, AllNamespaces: true},
	} {
		p.read(fmt.Sprintf("object names %+v", q), func() (any, error) { return e.ObjectNames(ctx, q) })
	}
	p.read("all pod writes", func() (any, error) { return e.PodWrites(ctx, "") })
	p.read("all hops", func() (any, error) { return e.Hops(ctx, "") })
	p.read("all anomalies", func() (any, error) { return e.Anomalies(ctx, "") })
	p.read("newest mergelog", func() (any, error) { return e.NewestMergelog(ctx) })
	p.read("data version", func() (any, error) { return e.DataVersion(ctx) })
	p.read("tail sources", func() (any, error) { return e.TailSources(ctx) })
	p.read("cpids, every one", func() (any, error) { return e.CPIDs(ctx, "", math.MaxInt32) })
	p.read("an unknown change's timeline", func() (any, error) { return e.Timeline(ctx, "nope") })
	p.read("an unknown change's graph", func() (any, error) { return e.ChangeGraph(ctx, "nope") })
	p.read("an unknown change's logs", func() (any, error) { return e.ChangeLogs(ctx, "nope", 0) })
	p.read("an unknown change's spans", func() (any, error) { return e.Spans(ctx, "nope") })
	p.read("an unknown change's controller spans", func() (any, error) { return e.ChangeSpans(ctx, "nope") })
	p.read("the changes linked to an unknown CPID", func() (any, error) { return changeIDs(e.LinkedChanges(ctx, "", "nope", false)) })
	p.read("an unknown CPID's descendants", func() (any, error) { return e.Related(ctx, "nope") })
	p.read("an unknown CPID's origins", func() (any, error) { return e.Origins(ctx, "nope") })
	p.read("an unknown object's history", func() (any, error) {
		ws, more, err := e.ObjectHistory(ctx, cpid.HistoryQuery{Object: cpid.ObjectKey{Resource: "pods", Name: "nope"}})
		return []any{ws, more}, err
	})
	p.evidence(ctx, e)
	return p.err
}

// objectReads reads what is known of one object that the timeline entry t
// of change wrote.
// With defaults, it reads with the limits left to the engine's defaults
// too.
func (p *printer) objectReads(ctx context.Context, e Engine, k cpid.ObjectKey, t cpid.TimelineEntry, change string, defaults bool) {
	p.read("revisions of "+k.String(), func() (any, error) {
		revs, more, err := e.ObjectRevisions(ctx, k, 5)
		return []any{revs, more}, err
	})
	if defaults {
		p.read("revisions of "+k.String()+", no limit given", func() (any, error) {
			revs, more, err := e.ObjectRevisions(ctx, k, 0)
			return []any{revs, more}, err
		})
	}
	p.read("objects named "+k.Name, func() (any, error) {
		return e.Objects(ctx, cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource, "x"}, AnyGroup: true},
			Name: k.Name, AllNamespaces: true})
	})
	p.read("the object "+k.String(), func() (any, error) {
		return e.Objects(ctx, cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, Group: k.Group},
			Name: k.Name, Namespace: k.Namespace})
	})
	if defaults {
		p.read("history of "+k.String()+", every write", func() (any, error) {
			ws, more, err := e.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, Bodies: true})
			return []any{ws, more}, err
		})
	}
	p.read("history of "+k.String()+", the last 20", func() (any, error) {
		ws, more, err := e.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, Bodies: true, Limit: 20})
		return []any{ws, more}, err
	})
	p.read("history of "+k.String()+", the last 2", func() (any, error) {
		ws, more, err := e.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, Limit: 2})
		return []any{ws, more}, err
	})
	p.read("filtered history of "+k.String(), func() (any, error) {
		ws, more, err := e.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, Limit: 2, SinceNS: t.NS, UntilNS: t.NS + 1e9,
			Writer: "CONTROLLER", User: "system", Trigger: cpid.TriggerUser})
		return []any{ws, more}, err
	})
}

// cpidReads reads the merge DAG around a CPID of change.
func (p *printer) cpidReads(ctx context.Context, e Engine, id, change string) {
	p.read("descendants of "+id, func() (any, error) { return e.Related(ctx, id) })
	p.read("origins of "+id, func() (any, error) { return e.Origins(ctx, id) })
	p.read("cpids "+id[:4], func() (any, error) { return e.CPIDs(ctx, id[:4], 1000) })
	p.read("linked below "+id, func() (any, error) { return changeIDs(e.LinkedChanges(ctx, change, id, false)) })
	p.read("linked above "+id, func() (any, error) { return changeIDs(e.LinkedChanges(ctx, change, id, true)) })
	p.read("changes carrying "+id, func() (any, error) { return e.ChangesCarrying(ctx, []string{id}) })
}

// evidence reads the evidence reconstruct reads, over the whole recording:
// informer starts and the leader leases' writes, each node's lease, and
// the clients' throttles.
func (p *printer) evidence(ctx context.Context, e Engine) {
	msgs := []string{reconstruct.AcquiredMsg}
	for _, l := range reconstruct.LeaderLeases {
		msgs = append(msgs, "successfully acquired lease "+reconstruct.LeaseNamespace+"/"+l)
	}
	scan := func(q cpid.EvidenceScan) (any, error) {
		var out []cpid.Evidence
		err := e.ScanEvidence(ctx, q, func(ev cpid.Evidence) error {
			out = append(out, ev)
			return nil
		})
		return out, err
	}
	all := cpid.EvidenceScan{UpToID: math.MaxInt64, UpToLogID: math.MaxInt64}
	q := all
	q.StartMarkers, q.LeaseNamespace, q.Leases, q.AcquiredMsgs = reconstruct.StartMarkers, reconstruct.LeaseNamespace,
		reconstruct.LeaderLeases, msgs
	p.read("evidence: starts, leases, acquisitions", func() (any, error) { return scan(q) })
	q.Program = "kube-controller-manager"
	p.read("evidence of kube-controller-manager", func() (any, error) { return scan(q) })
	nodes, _ := e.Objects(ctx, cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, AllNamespaces: true})
	for _, n := range nodes {
		q := all
		q.LeaseNamespace, q.Leases = reconstruct.NodeLeaseNamespace, []string{n.Name}
		p.read("evidence: node lease "+n.Name, func() (any, error) { return scan(q) })
	}
	q = all
	q.Throttles, q.ThrottleMsg = true, reconstruct.ThrottleMsg
	p.read("evidence: throttles", func() (any, error) { return scan(q) })
}

// printer writes sections: a heading, then the answer as JSON, one line
// per element of a list.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) read(what string, f func() (any, error)) {
	if p.err != nil {
		return
	}
	v, err := f()
	fmt.Fprintf(p.w, "== %s\n", what)
	if err != nil {
		_, p.err = fmt.Fprintf(p.w, "error %s: %v\n", cpid.ErrorCode(err), err)
		return
	}
	p.value(v)
}

// value writes v: each element of a list on its line, each value of a
// map by its sorted key.
func (p *printer) value(v any) {
	rv := reflect.ValueOf(v)
	switch {
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8:
		if rv.Len() == 0 {
			p.line("[]")
		}
		for i := range rv.Len() {
			p.value(rv.Index(i).Interface())
		}
	case rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String:
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmpString(a.String(), b.String()) })
		for _, k := range keys {
			p.line("-- " + k.String())
			p.value(rv.MapIndex(k).Interface())
		}
	default:
		p.line(digestBodies(v))
	}
}

func (p *printer) line(v any) {
	if p.err != nil {
		return
	}
	if s, ok := v.(string); ok && (s == "[]" || len(s) > 3 && s[:3] == "-- ") {
		_, p.err = fmt.Fprintln(p.w, s)
		return
	}
	b, err := compact(v)
	if err != nil {
		p.err = err
		return
	}
	_, p.err = fmt.Fprintf(p.w, "%s\n", b)
}

// compact is v as JSON without its zero fields ("", 0, false, null, [],
// {}), keys sorted: a row says what it holds.
func compact(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	return json.Marshal(dropZero(x))
}

func dropZero(x any) any {
	switch x := x.(type) {
	case map[string]any:
		for k, v := range x {
			v = dropZero(v)
			if isZero(v) {
				delete(x, k)
			} else {
				x[k] = v
			}
		}
	case []any:
		for i, v := range x {
			x[i] = dropZero(v)
		}
	}
	return x
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		return v.String() == "0"
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// digestBodies replaces the bodies a value carries (an object's JSON, a
// request) by their digest: the golden files stay small, and a body that
// differs still fails.
func digestBodies(v any) any {
	switch x := v.(type) {
	case cpid.ObjectWrite:
		x.Object, x.Request = digest(x.Object), digest(x.Request)
		return x
	case cpid.Revision:
		x.Object, x.Request = digest(x.Object), digest(x.Request)
		return x
	case cpid.PodWrite:
		if len(x.Object) > 0 {
			x.Object = json.RawMessage(strconv.Quote(digest(string(x.Object))))
		}
		return x
	case cpid.ChangeLogSet:
		x.Lines = slices.Clone(x.Lines)
		for i := range x.Lines {
			x.Lines[i].Fields = digest(x.Lines[i].Fields)
		}
		return x
	}
	return v
}

func digest(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("sha256:%x (%d bytes)", sum[:6], len(s))
}

// count is how many rows a read returned.
func count[T any](rows []T, err error) (int, error) { return len(rows), err }

// changeIDs are the ids of changes, in order: the rows themselves are
// read by ChangesByID.
func changeIDs(cs []cpid.ChangeRow, err error) ([]string, error) {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids, err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
