package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestSameNameOtherGroup: a custom resource named like a core resource
// ("pods" in example.com) with an object of the same namespace and name
// stays apart from the core one, in revisions, causes, changes and reads.
func TestSameNameOtherGroup(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	event := func(id, group, verb, user, uid string, rv, at int) string {
		apiVersion, objAPI := "v1", "v1"
		if group != "" {
			apiVersion, objAPI = "v1", group+"/v1"
		}
		return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":%q,"stage":"ResponseComplete",`+
			`"verb":%q,"user":{"username":%q},"userAgent":"x","objectRef":{"resource":"pods","namespace":"default","name":"web","apiGroup":%q,"apiVersion":%q},`+
			`"responseStatus":{"code":200},"responseObject":{"kind":"Pod","apiVersion":%q,"metadata":{"name":"web","namespace":"default","uid":%q,"resourceVersion":"%d"}},`+
			`"requestReceivedTimestamp":"2026-11-22T16:00:%02d.000000Z","stageTimestamp":"2026-11-22T16:00:%02d.001000Z"}`,
			id, verb, user, group, apiVersion, objAPI, uid, rv, at, at)
	}
	const ctl = "system:serviceaccount:kube-system:widget-controller"
	lines := []string{
		event("core-create", "", "create", "alice", "u-core", 10, 1),
		event("crd-create", "example.com", "create", "bob", "u-crd", 11, 2),
		event("crd-update", "example.com", "update", ctl, "u-crd", 12, 3),
		event("core-update", "", "update", ctl, "u-core", 13, 4),
	}
	in := &ingest.Ingester{Sink: s, Walker: ingest.Walker{Stdin: strings.NewReader(strings.Join(lines, "\n") + "\n")}}
	if _, err := in.Run(ctx, []string{"-"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"", "example.com"} {
		k := cpid.ObjectKey{Group: group, Resource: "pods", Namespace: "default", Name: "web"}
		revs, _, err := s.ObjectRevisions(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(revs) != 2 || revs[0].Seq != 1 || revs[1].Seq != 2 {
			t.Fatalf("%s: %d revisions %+v, want its own 2", k, len(revs), revs)
		}
		for _, r := range revs {
			want := "u-core"
			if group != "" {
				want = "u-crd"
			}
			if !strings.Contains(r.Object, want) {
				t.Errorf("%s: revision of event %d is another object's: %s", k, r.EventID, r.Object)
			}
		}
	}
	// Each controller update is caused by the create of its own object.
	changes, err := s.Changes(ctx, cpid.ChangeQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 {
		t.Fatalf("%d changes, want 2: %+v", len(changes), changes)
	}
	for _, c := range changes {
		tl, err := s.Timeline(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(tl) != 2 {
			t.Fatalf("change of %s/%s (group %q): %d writes, want 2", c.Resource, c.Name, c.APIGroup, len(tl))
		}
		for _, e := range tl {
			if e.APIGroup != c.APIGroup {
				t.Errorf("change in group %q has a write in group %q (event %d)", c.APIGroup, e.APIGroup, e.EventID)
			}
		}
	}
}
