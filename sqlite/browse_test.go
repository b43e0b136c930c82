package sqlite

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// rollout finds the fixture's rolling update: the user's patch of the
// Deployment's pod template (not a /scale).
func rollout(t *testing.T, s *Store) cpid.ChangeRow {
	t.Helper()
	cs, err := s.Changes(context.Background(), cpid.ChangeQuery{Filter: "web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Resource == "deployments" && c.Verb == "patch" && c.Subresource == "" {
			return c
		}
	}
	t.Fatalf("no rolling update among %+v", cs)
	return cpid.ChangeRow{}
}

func TestBrowseQueries(t *testing.T) {
	s := ingestFixture(t)
	ctx := context.Background()
	ch := rollout(t, s)

	t.Run("count", func(t *testing.T) {
		for _, f := range []string{"", "web", "deployments", "kwok-node", "no-such-thing"} {
			n, err := s.CountChanges(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := s.Changes(ctx, cpid.ChangeQuery{Filter: f, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(cs) {
				t.Errorf("CountChanges(%q) = %d, Changes lists %d", f, n, len(cs))
			}
		}
	})

	t.Run("page", func(t *testing.T) {
		for _, q := range []cpid.ChangeQuery{{}, {Sort: "duration"}, {Sort: "size", Limit: 3, Offset: 2}, {Filter: "web", Limit: 2, Offset: 1},
			{Sort: "duration", Filter: "deployments", Offset: 1}} {
			// The page must be the same slice of the whole, unpaged list.
			all, err := s.Changes(ctx, cpid.ChangeQuery{Filter: q.Filter, Sort: q.Sort, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			limit := q.Limit
			if limit == 0 {
				limit = 100
			}
			want := all[min(q.Offset, len(all)):min(q.Offset+limit, len(all))]
			got, err := s.Changes(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Changes(%+v) = %v\nthe same slice of the whole list is %v", q, got, want)
			}
		}
		if _, err := s.Changes(ctx, cpid.ChangeQuery{Sort: "nope"}); err == nil {
			t.Error("an unknown sort is accepted")
		}
	})

	t.Run("by id", func(t *testing.T) {
		got, err := s.ChangesByID(ctx, []string{ch.ID, "not-a-change"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != ch {
			t.Errorf("ChangesByID = %+v, want [%+v]", got, ch)
		}
	})

	var outside string
	t.Run("graph", func(t *testing.T) {
		g, err := s.ChangeGraph(ctx, ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) < 2 || g.Nodes[0].CPID != ch.ID || g.Nodes[0].Origin != "root" {
			t.Fatalf("nodes = %+v, want the root CPID first", g.Nodes)
		}
		writes := 0
		// The Deployment under each CPID it carried in the change: the
		// user's write under the root, the controller's status writes under
		// the CPIDs they merged.
		var deploy []cpid.GraphObject
		for _, n := range g.Nodes {
			for _, o := range n.Objects {
				writes += o.Writes
				if o.Resource == "deployments" && o.Name == "web" {
					deploy = append(deploy, o)
				}
			}
		}
		if writes != ch.Writes {
			t.Errorf("objects hold %d writes, the change has %d", writes, ch.Writes)
		}
		var writers []string
		attempts := 0
		for _, o := range deploy {
			if o.Kind != "Deployment" {
				t.Errorf("Deployment web has kind %q", o.Kind)
			}
			writers = append(writers, o.Writers...)
			attempts += o.Attempts
		}
		if len(writers) == 0 || writers[0] != "kubectl (kubernetes-admin)" || !slices.Contains(writers, "deployment-controller") ||
			attempts == 0 {
			t.Errorf("Deployment web = %+v, want kubectl first, then deployment-controller, with its 409s", deploy)
		}
		merged := 0
		for _, n := range g.Nodes[1:] {
			for _, m := range n.Merges {
				if len(m.Sources) > 1 {
					merged++
				}
			}
		}
		if merged == 0 {
			t.Error("no merge with several sources")
		}
		if len(g.Outside) == 0 {
			t.Fatal("no merge source from another change")
		}
		for src, chs := range g.Outside {
			if len(chs) == 0 || slices.Contains(chs, ch.ID) {
				t.Errorf("Outside[%s] = %v", src, chs)
			}
			outside = chs[0]
		}
		if _, err := s.ChangeGraph(ctx, "not-a-change"); err == nil {
			t.Error("ChangeGraph of an unknown change: no error")
		}
	})

	t.Run("linked", func(t *testing.T) {
		anc, err := s.LinkedChanges(ctx, ch.ID, ch.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(anc) != 0 {
			t.Errorf("the root CPID of a user's write has origins %+v", anc)
		}
		desc, err := s.LinkedChanges(ctx, ch.ID, ch.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range desc {
			if c.ID == ch.ID || c.StartedNS < ch.StartedNS {
				t.Errorf("descendant change %+v is the change itself or older", c)
			}
		}
		// A merge source from another change: its CPIDs are among the
		// origins of the merge's CPID.
		g, _ := s.ChangeGraph(ctx, ch.ID)
		var merged string
		for _, n := range g.Nodes {
			for _, m := range n.Merges {
				for _, src := range m.Sources {
					if slices.Contains(g.Outside[src], outside) {
						merged = n.CPID
					}
				}
			}
		}
		anc, err = s.LinkedChanges(ctx, ch.ID, merged, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(anc, func(c cpid.ChangeRow) bool { return c.ID == outside }) {
			t.Errorf("origins of %s = %+v, want change %s among them", merged, anc, outside)
		}
		ids, err := s.ChangesCarrying(ctx, []string{merged})
		if err != nil || !slices.Contains(ids, ch.ID) {
			t.Errorf("ChangesCarrying(%s) = %v, %v; want %s", merged, ids, err, ch.ID)
		}
	})

	t.Run("revisions", func(t *testing.T) {
		ref := cpid.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "default", Name: "web"}
		all, more, err := s.ObjectRevisions(ctx, ref, 0)
		if err != nil {
			t.Fatal(err)
		}
		if more || len(all) < 5 {
			t.Fatalf("%d revisions (more %v)", len(all), more)
		}
		if all[0].Verb != "create" || all[0].Seq != 1 || !strings.Contains(all[0].Object, `"kind":"Deployment"`) {
			t.Errorf("first revision = %+v, want the create with its body", all[0])
		}
		attempts := 0
		for i, r := range all {
			if i > 0 && r.Seq < all[i-1].Seq {
				t.Errorf("revision %d has seq %d after %d", i, r.Seq, all[i-1].Seq)
			}
			if r.Attempt {
				attempts++
				if r.Object != "" || r.Code < 400 {
					t.Errorf("attempt %+v has an object body or no failure code", r)
				}
			}
			if r.Subresource == "scale" && r.Object != "" {
				t.Errorf("a /scale write's Scale body was taken for the Deployment: %.80s", r.Object)
			}
		}
		if attempts == 0 {
			t.Error("no failed attempt among the Deployment's writes")
		}
		last, more, err := s.ObjectRevisions(ctx, ref, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !more || len(last) != 3 || last[2].EventID != all[len(all)-1].EventID || last[0].EventID != all[len(all)-3].EventID {
			t.Errorf("last 3 revisions = %v (more %v), want the last 3 of %d", last, more, len(all))
		}
	})

	t.Run("logs guessed", func(t *testing.T) {
		set, err := s.ChangeLogs(ctx, ch.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if set.Exact {
			t.Fatal("the fixture's controllers are not instrumented, yet lines matched by CPID")
		}
		for _, w := range []string{"deployment-controller", "replicaset-controller", "kube-scheduler", "kwok"} {
			if !slices.Contains(set.Writers, w) {
				t.Errorf("writers %v lack %s", set.Writers, w)
			}
		}
		if slices.ContainsFunc(set.Writers, func(w string) bool { return strings.HasPrefix(w, "kubectl") }) {
			t.Errorf("writers %v include the user", set.Writers)
		}
		files := map[string]bool{}
		msgs := map[string]bool{}
		for i, l := range set.Lines {
			if l.TimeNS < set.FromNS || l.TimeNS > set.ToNS || set.FromNS != ch.StartedNS {
				t.Errorf("line %+v outside [%d, %d]", l, set.FromNS, set.ToNS)
			}
			if i > 0 && l.TimeNS < set.Lines[i-1].TimeNS {
				t.Error("lines out of time order")
			}
			files[l.File[strings.LastIndex(l.File, "/")+1:]] = true
			msgs[l.Msg] = true
		}
		for _, f := range []string{"kube-controller-manager.log", "kube-scheduler.log", "kwok.log"} {
			if !files[f] {
				t.Errorf("no line from %s (files %v)", f, files)
			}
		}
		if files["kube-apiserver.log"] {
			t.Error("the apiserver, which wrote nothing of the change, has lines")
		}
		if !msgs["Too few replicas"] || !msgs["Successfully bound pod to node"] {
			t.Errorf("messages %v lack the replicaset controller's and the scheduler's", msgs)
		}
		small, err := s.ChangeLogs(ctx, ch.ID, 2)
		if err != nil || len(small.Lines) != 2 || !small.Truncated {
			t.Errorf("ChangeLogs limit 2: %d lines, truncated %v, %v", len(small.Lines), small.Truncated, err)
		}
	})

	t.Run("logs exact and data version", func(t *testing.T) {
		before, err := s.DataVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if before.Events == 0 || before.Logs == 0 || before.NewestNS == 0 || before.Reconstructed != before.Events || before.CutoffNS == 0 {
			t.Fatalf("DataVersion = %+v", before)
		}
		again, _ := s.DataVersion(ctx)
		if again != before {
			t.Errorf("DataVersion moved without a write: %+v, then %+v", before, again)
		}
		g, _ := s.ChangeGraph(ctx, ch.ID)
		id := g.Nodes[len(g.Nodes)-1].CPID
		fields, _ := json.Marshal(map[string]any{"msg": "synced", "cpid": id})
		rec := cpid.Log{LogRecord: cpid.LogRecord{Hash: [16]byte{1, 2, 3}, TimeNS: ch.StartedNS + 1, Level: "info",
			Component: "my-operator", Msg: "synced", CPID: id, Fields: fields}, Pos: cpid.Pos{File: "op.log", Line: 1}}
		if _, err := s.Write(ctx, &cpid.Batch{Logs: []cpid.Log{rec}}); err != nil {
			t.Fatal(err)
		}
		after, _ := s.DataVersion(ctx)
		if after == before || after.Logs != before.Logs+1 {
			t.Errorf("DataVersion after a log line: %+v, before %+v", after, before)
		}
		set, err := s.ChangeLogs(ctx, ch.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The line carrying the CPID, and the writers' lines of the window
		// as before.
		op := slices.IndexFunc(set.Lines, func(l cpid.LogLine) bool { return l.CPID == id })
		if !set.Exact || op < 0 || set.Lines[op].File != "op.log" || len(set.Lines) < 2 {
			t.Fatalf("ChangeLogs = %+v, want the line carrying %s among the writers'", set, id)
		}

		// A span of one of the change's CPIDs, as reconstruct stores it.
		if _, err := s.w.ExecContext(ctx, `INSERT INTO controller_spans(span_id, parent_id, cpid, service, name, start_ns, end_ns, attrs, log_id) VALUES ('s1', '', ?, 'my-operator', 'reconcile', ?, ?, NULL, ?)`,
			id, ch.StartedNS+10, ch.StartedNS+20, set.Lines[op].ID); err != nil {
			t.Fatal(err)
		}
		spans, err := s.ChangeSpans(ctx, ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(spans) != 1 || spans[0].Service != "my-operator" || spans[0].EndNS-spans[0].StartNS != 10 {
			t.Errorf("ChangeSpans = %+v", spans)
		}
		other, _ := s.Changes(ctx, cpid.ChangeQuery{Filter: "kwok-node"})
		if spans, _ := s.ChangeSpans(ctx, other[0].ID); len(spans) != 0 {
			t.Errorf("another change has the span: %+v", spans)
		}
	})
}
