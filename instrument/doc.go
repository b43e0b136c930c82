// Package instrument is what a controller author imports to trace cascading
// changes with Change Propagation IDs (CPIDs), after Ehira, Kotani and Okabe,
// "Tracing cascading changes in the Kubernetes control plane" (sections 3
// and 4).
//
// Every object carries a trace context in two annotations (KeyCPID and
// KeyAncestors): the CPID of the change that last wrote it, and up to N CPIDs
// that change descends from, closest first. A controller that writes an object
// after observing others merges their trace contexts with the object's own
// (Tracer.Merge, the paper's Algorithm 1): when one CPID already descends from
// all the others it is reused; otherwise a new CPID is minted and a mergelog
// {sources} -> new is written. A change that starts outside the control plane,
// such as a user's apply, gets a root CPID (Tracer.Root).
//
// There is no trace server: mergelogs and spans are JSON log records written
// through an Emitter, to an io.Writer or to the controller's own slog or logr
// logger, without blocking the reconcile. NewLogHandler and Logr put the CPID
// of the reconcile on every ordinary log line too. The record formats are
// documented in docs/FORMATS.md and versioned by Format.
//
// A reconcile typically reads:
//
//	tc := tracer.Extract(deployment)
//	ctx = instrument.NewContext(ctx, tc)
//	ctx, span := tracer.StartSpan(ctx, "sync")
//	defer span.End()
//	rs := rs.DeepCopy()
//	tracer.MergeInto(rs, tc)  // rs's own context merged with the deployment's
//	_, err := client.AppsV1().ReplicaSets(ns).Update(ctx, rs, metav1.UpdateOptions{})
//
// Controllers that should not change at all can wrap their client-go
// transport instead, see package instrument/clientgo.
//
// This package depends only on the standard library, k8s.io/apimachinery,
// github.com/google/uuid and github.com/go-logr/logr.
package instrument
