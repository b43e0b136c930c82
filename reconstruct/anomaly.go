package reconstruct

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cpid-dev/cpid"
)

// anomalies flags what a reconstruction must not hide (seed 003: time travel
// in Kubernetes):
//   - rv-backwards: a successful write stored a resourceVersion lower than an
//     earlier one of the same object, in apiserver time order (a replayed
//     watch);
//   - clock-skew: the same, with the two writes in the logs of two
//     apiservers: their clocks disagree;
//   - repeated-write: the same writer sent the same request body to the
//     same object twice in a row (a controller re-processing old state);
//   - transition-backwards: a status condition's lastTransitionTime moved
//     earlier than the one before (a kubelet reusing a cached time);
//   - merge-cycle (from emit): a mergelog that would close a cycle in the
//     merge graph, refused.
func (en *Engine) anomalies(o *Object, e *Event) {
	if rv, err := strconv.ParseInt(e.ResourceVersion, 10, 64); err == nil && e.Verb != "delete" {
		switch {
		case rv < o.LastRV && e.Source != o.LastSource:
			// Writes reach the object in etcd order; if their apiserver
			// times say otherwise and they come from two logs, the
			// apiservers' clocks disagree.
			en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "clock-skew", EventID: e.ID, Key: o.Key,
				Detail: fmt.Sprintf("resourceVersion %d from %s is earlier than %d from %s, but its time is later",
					rv, e.Source, o.LastRV, o.LastSource)})
		case rv < o.LastRV:
			en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "rv-backwards", EventID: e.ID, Key: o.Key,
				Detail: fmt.Sprintf("resourceVersion %d after %d", rv, o.LastRV)})
		default:
			o.LastRV, o.LastSource = rv, e.Source
		}
	}
	if e.hashRequest(); e.hasReq && e.Verb != "delete" {
		h := e.reqHash
		if h == o.LastReq {
			en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "repeated-write", EventID: e.ID, Key: o.Key,
				Detail: "same request as the previous write by " + e.Writer().Name})
		}
		o.LastReq = h
	}
	if o.Key.Resource == "pods" || o.Key.Resource == "nodes" {
		en.transitions(o, e)
	}
}

func (en *Engine) transitions(o *Object, e *Event) {
	e.DecodeObject()
	if e.body == nil {
		return
	}
	for _, c := range e.body.Status.Conditions {
		t, err := time.Parse(time.RFC3339, c.LastTransitionTime)
		if err != nil {
			continue
		}
		if o.Conds == nil {
			o.Conds = map[string]int64{}
		}
		prev, ok := o.Conds[c.Type]
		if ok && t.UnixNano() < prev {
			en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "transition-backwards", EventID: e.ID, Key: o.Key,
				Detail: fmt.Sprintf("condition %s lastTransitionTime %s before %s", c.Type,
					t.UTC().Format(time.RFC3339), time.Unix(0, prev).UTC().Format(time.RFC3339))})
		}
		if !ok || t.UnixNano() > prev {
			o.Conds[c.Type] = t.UnixNano()
		}
	}
}
