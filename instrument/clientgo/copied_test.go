package clientgo

import (
	"context"
	"fmt"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestUpdateWithCopiedContext: the deployment controller copies a
// Deployment's annotations, CPID included, onto its ReplicaSet before it
// updates it. The ReplicaSet's own previous context (in the cache) is still a
// cause: the write must merge both, not take the copied one as the object's.
func TestUpdateWithCopiedContext(t *testing.T) {
	n := 0
	tracer := instrument.New("deployment-controller", nil, instrument.WithIDs(func() instrument.ID { n++; return tid(fmt.Sprint("m", n)) }))
	s := New(tracer, nil)
	old, dep := tid("rs-old"), tid("dep-new")
	cached := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default",
		Annotations: map[string]string{instrument.KeyCPID: old.String()}}}
	body := cached.DeepCopy()
	body.Annotations[instrument.KeyCPID] = dep.String() // copied from the Deployment
	tgt := target{gv: schema.GroupVersion{Group: "apps", Version: "v1"}, resource: "replicasets", namespace: "default", name: "web-1"}
	m, commit := s.stampObject(context.Background(), body, tgt, func() (metav1.Object, bool) { return cached, true })
	got := tracer.Extract(body)
	if !commit || got.CPID == old || got.CPID == dep {
		t.Fatalf("CPID %s (commit %v): want a new CPID merging %s and %s", got.CPID, commit, old, dep)
	}
	srcs := map[instrument.ID]bool{}
	for _, s := range m.Sources {
		srcs[s] = true
	}
	if len(m.Sources) != 2 || !srcs[old] || !srcs[dep] {
		t.Errorf("mergelog sources %v, want %s and %s", m.Sources, old, dep)
	}
}

func tid(s string) instrument.ID {
	var x instrument.ID
	copy(x[16-len(s):], s)
	x[6], x[8] = 0x40, 0x80
	return x
}
