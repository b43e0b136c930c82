package clientgo

import (
	"context"

	"github.com/cpid-dev/cpid/instrument"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// Reactor returns a reaction that stamps the creates, updates and patches of
// a fake clientset (k8s.io/client-go/kubernetes/fake, dynamic/fake) and
// stores them in tracker, as the fake's default reaction would:
//
//	cs := fake.NewClientset()
//	cs.PrependReactor("*", "*", stamper.Reactor(cs.Tracker(), func() context.Context { return ctx }))
//
// A fake clientset drops the context of each call before any reaction sees
// it, so ctx stands in for it: it returns the context the code under test is
// running with (nil means none). The object of a patch, or of an update without a trace context, is
// read from tracker rather than from the Stamper's lookup; owners still come
// from the lookup. Reactors prepended later run first and can still fail a
// write (a conflict, say), in which case no mergelog is written.
func (s *Stamper) Reactor(tracker k8stesting.ObjectTracker, ctx func() context.Context) k8stesting.ReactionFunc {
	store := k8stesting.ObjectReaction(tracker)
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		return s.react(store, tracker, callContext(ctx), action)
	}
}

func callContext(f func() context.Context) context.Context {
	if f != nil {
		if ctx := f(); ctx != nil {
			return ctx
		}
	}
	return context.Background()
}

// react stamps the write of action, if it is one, and stores it.
func (s *Stamper) react(store k8stesting.ReactionFunc, tracker k8stesting.ObjectTracker, ctx context.Context,
	action k8stesting.Action) (bool, runtime.Object, error) {
	gvr := action.GetResource()
	if action.GetSubresource() != "" || unstored(gvr.Resource) {
		return false, nil, nil
	}
	tgt := target{gv: gvr.GroupVersion(), resource: gvr.Resource, namespace: action.GetNamespace()}
	current := func() (metav1.Object, bool) {
		obj, err := tracker.Get(gvr, tgt.namespace, tgt.name)
		if err != nil {
			return nil, false
		}
		acc, err := meta.Accessor(obj)
		return acc, err == nil
	}

	var m instrument.Mergelog
	var commit bool
	switch a := action.(type) {
	case k8stesting.CreateActionImpl:
		obj, err := meta.Accessor(a.GetObject())
		if err != nil {
			return false, nil, nil
		}
		m, commit = s.stampObject(ctx, obj, tgt, noCurrent)
	case k8stesting.UpdateActionImpl:
		obj, err := meta.Accessor(a.GetObject())
		if err != nil {
			return false, nil, nil
		}
		tgt.name = obj.GetName()
		m, commit = s.stampObject(ctx, obj, tgt, current)
	case k8stesting.PatchActionImpl:
		kind, ok := patchKinds[a.GetPatchType()]
		if !ok {
			s.skipped.Add(1)
			return false, nil, nil
		}
		tgt.name = a.GetName()
		a.Patch, m, commit = s.stampBody(ctx, a.Patch, kind, tgt, current)
		action = a
	default:
		return false, nil, nil
	}
	handled, ret, err := store(action)
	if handled && err == nil && commit {
		s.t.Commit(m)
	}
	return handled, ret, err
}

// patchKinds are the patch types a Stamper edits.
var patchKinds = map[types.PatchType]bodyKind{
	types.MergePatchType:          bodyMergePatch,
	types.StrategicMergePatchType: bodyMergePatch,
	types.ApplyYAMLPatchType:      bodyApply,
}
