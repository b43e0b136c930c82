// Package clientgo stamps the writes of an unmodified client-go controller
// with CPIDs.
//
// A Stamper merges, for every create, update and patch, the trace contexts of
// the write's causes with the paper's Algorithm 1 (instrument.Tracer.Merge):
//
//   - the trace context of the request's context.Context, when the caller put
//     one there with instrument.NewContext;
//   - the object's previous context: the annotations in the body of a create
//     or update, or for a patch (and an update without them) the object as
//     the caller's cache holds it;
//   - the contexts of the object's owners (metadata.ownerReferences), looked
//     up in the caller's cache.
//
// and writes the result into the object's annotations. Nothing else about the
// write changes: the body is the same apart from the two annotations, errors
// and conflicts come back as they were, and a mergelog is written only once
// the apiserver has accepted the write. Writes to other subresources (scale,
// binding...) pass through untouched.
//
// One line adopts it for every client made from a rest.Config (typed,
// dynamic, controller-runtime):
//
//	cfg.Wrap(clientgo.New(tracer, lookup).Wrap)
//
// For a controller-runtime manager, whose cache is made after its config,
// instrument/controllerruntime (a module of its own) does both, the wrap and
// a lookup over the manager's cache, in one line: cpidctrl.NewManager in
// place of ctrl.NewManager.
//
// Controllers that copy annotations between objects must not see the trace
// context: the deployment controller copies a Deployment's annotations onto
// its ReplicaSets and rewrites a ReplicaSet whose annotations differ, so
// once the Stamper merged a ReplicaSet's own CPID with its Deployment's, the
// controller would write it again, and again (forever with N=0). Give such
// a controller's informers Hidden.Transform and the Stamper Hidden.Lookup.
// Status updates (PUT .../status) keep the object's context: a body that
// lacks it gets it back, since some resources store the metadata of status
// writes.
//
// Fake clientsets do not go through a transport and drop the context of each
// call; Stamper.Reactor stamps their writes instead, for tests.
//
// Bodies are edited in JSON, and in protobuf (what recent client-go sends for
// built-in types by default) on the wire, so that fields this package does
// not know keep their bytes. What passes through unstamped, counted in
// Stats.Skipped: CBOR bodies and YAML apply patches, JSON patches (an "add" to
// a missing annotations map would fail the write), dry runs, and reviews and
// bindings, which are not stored.
package clientgo
