package cpid

import (
	"cmp"
	"encoding/json"
	"slices"
)

// ObjectKey names an object: the subresource of a write is a write of its
// object (a binding or a status update changes the Pod). Group is the API
// group ("" for the core group), so that two resources of the same name in
// different groups stay apart.
type ObjectKey struct {
	Group, Resource, Namespace, Name string
	// Cluster names the object's cluster where a reader asks for it;
	// reconstruct, which derives one cluster at a time, leaves it empty.
	Cluster string
}

// String is the key as resource[.group]/namespace/name, or
// resource[.group]/name for a cluster-scoped object; it leaves out the
// cluster.
func (k ObjectKey) String() string {
	r := k.Resource
	if k.Group != "" {
		r += "." + k.Group
	}
	if k.Namespace != "" {
		return r + "/" + k.Namespace + "/" + k.Name
	}
	return r + "/" + k.Name
}

// ObjectName names an object for people: "Kind namespace/name", or "Kind
// name" when it is cluster-scoped.
func ObjectName(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// OwnerRef is one metadata.ownerReferences entry.
type OwnerRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller bool   `json:"controller,omitempty"`
}

// Writer is who made a write, as a person would name it.
type Writer struct {
	Name string // "deployment-controller", "kube-scheduler", "kubectl (kubernetes-admin)"
	// User is true for a person or their automation (kubectl, helm, CI): their
	// writes start changes. Controllers, nodes and the apiserver itself react.
	User bool
}

// Origin says where a mergelog comes from.
type Origin string

const (
	// OriginLog marks a mergelog that an instrumented controller wrote to
	// its log; it is exact.
	OriginLog Origin = "log"
	// OriginAnnotation marks a mergelog derived from the ancestor CPIDs on
	// an object; it is exact when the list was not truncated.
	OriginAnnotation Origin = "annotation"
	// OriginInferred marks a mergelog inferred from the audit log for a
	// writer that carries no CPID.
	OriginInferred Origin = "inferred"
)

// Mergelog is one merge (paper Table 1): Sources -> CPID. A root, the start
// of a change, has no sources.
type Mergelog struct {
	CPID    string
	Sources []string
	TimeNS  int64
	Service string // the controller (or user) that wrote the merge
	Origin  Origin
}

// Emitted is a mergelog reconstruct derived and the write that showed it (0
// for a mergelog read from a controller's log). Again is set when the run
// already emitted a mergelog of the same CPID and origin: a store keeps
// the first (its key is the cluster, the CPID and the origin).
type Emitted struct {
	Mergelog
	EventID int64
	Again   bool
}

// Span is a controller span (paper Table 3, plus a name and attributes).
type Span struct {
	CPID     string
	SpanID   string
	ParentID string
	Service  string
	Name     string
	StartNS  int64
	EndNS    int64
	Attrs    json.RawMessage
	LogID    int64 // log_records.id it was read from
}

// Write is the reconstruction of one write (a row of revisions): who,
// which CPID it carries and where that came from, what caused it, and the
// change it belongs to.
type Write struct {
	EventID int64
	StageNS int64
	// ResourceVersion is the event's, for ordering the object's revisions.
	ResourceVersion string
	Key             ObjectKey
	Writer          Writer
	Attempt         bool // failed: not a revision
	CPID            string
	// CPIDOrigin: "root" (a user's change), "annotation" (the object carried
	// it), "inferred" (derived from the causes), "background" (a
	// controller write nothing explains: it has no CPID).
	CPIDOrigin   string
	CauseEventID int64
	Rule         string
	ChangeID     string
	// HopNS is the hop latency: from the cause becoming visible to this
	// write completing.
	HopNS int64
	// Explain says why the hop took HopNS, ExplainDetail with what
	// evidence; Confidence how the cause was found. All empty for a write
	// without a cause.
	Explain       Explain
	ExplainDetail string
	Confidence    Confidence
	// Seq is the write's place among its object's writes (1-based) and
	// OrderBy what it was ordered by, "resourceVersion" or "time". When a
	// write arrives out of that order, its object is listed in
	// Derived.Reorder and its writes are renumbered.
	Seq     int
	OrderBy string
}

// Trigger says what started a change.
type Trigger string

const (
	// TriggerUser: a person's or their automation's write.
	TriggerUser Trigger = "user"
	// TriggerNode: a Node went NotReady or Unknown, or came back; the root
	// is the node lifecycle controller's or the kubelet's Node write.
	TriggerNode Trigger = "node"
	// TriggerControllerStart: a controller's first writes after it started
	// or took leadership, re-listing and resyncing what it found.
	TriggerControllerStart Trigger = "controller-start"
	// TriggerSchedule: a timer fired (a CronJob's schedule).
	TriggerSchedule Trigger = "schedule"
	// TriggerGC: the garbage collector deleted dependents.
	TriggerGC Trigger = "gc"
	// TriggerUnknown: a controller write that no rule explains within its
	// reaction window.
	TriggerUnknown Trigger = "unknown"
)

// Change is a root change: a user's write, or what the environment did
// (Trigger), and everything it caused.
type Change struct {
	ID      string // the root CPID: the object's when the user stamped one, else the write's auditID
	EventID int64
	StartNS int64
	Trigger Trigger
	// Detail says what happened, for people ("Ready True -> Unknown").
	Detail string
	// Traceparent is the W3C trace context (KeyTraceparent) the root write
	// set: a traced client started the change. "" otherwise.
	Traceparent string
}

// Explain says why a write waited as long as it did after its cause.
type Explain string

const (
	// ExplainInformer: an ordinary reaction, within the rule's window.
	ExplainInformer Explain = "informer"
	// ExplainRequeue: the same writer retried after a conflict or an error.
	ExplainRequeue Explain = "requeue"
	// ExplainBackoff: a retry after the writer's own write failed otherwise
	// (a 429, a 5xx, a 4xx other than 409).
	ExplainBackoff Explain = "backoff"
	// ExplainLeaderGap: leadership changed hands, or nobody held it, while
	// the hop waited.
	ExplainLeaderGap Explain = "leader-gap"
	// ExplainRestart: the writer restarted and re-listed while the hop waited.
	ExplainRestart Explain = "restart"
	// ExplainMinReady: spec.minReadySeconds held the write back.
	ExplainMinReady Explain = "min-ready"
	// ExplainProgressDeadline: spec.progressDeadlineSeconds ran out.
	ExplainProgressDeadline Explain = "progress-deadline"
	// ExplainToleration: a taint's tolerationSeconds ran out (eviction).
	ExplainToleration Explain = "toleration"
	// ExplainNodeGrace: the node monitor grace period ran out.
	ExplainNodeGrace Explain = "node-grace"
	// ExplainPodGC: the pod garbage collector deletes a Pod whose Node is
	// gone after a 40 s quarantine, checking every 20 s.
	ExplainPodGC Explain = "pod-gc"
	// ExplainDeletionGrace: the namespace controller waits 5 s after a
	// namespace's event before it deletes the namespace's content, and
	// again between its passes.
	ExplainDeletionGrace Explain = "deletion-grace"
	// ExplainUnschedulable: the Pod could not be scheduled meanwhile.
	ExplainUnschedulable Explain = "unschedulable"
	// ExplainKubelet: the node's side (the kubelet starting or stopping
	// containers, probes).
	ExplainKubelet Explain = "kubelet"
	// ExplainAPIServer: the apiserver itself (etcd, webhooks, priority and
	// fairness queueing): the request took most of the hop, from its
	// receive to its completion in the audit log.
	ExplainAPIServer Explain = "apiserver"
	// ExplainThrottled: the writer's client held the request back before
	// sending it (client-side rate limiting; its log says for how long),
	// and the rest of the wait is within the window.
	ExplainThrottled Explain = "throttled"
	// ExplainUnexplained: nothing in the logs says why.
	ExplainUnexplained Explain = "unexplained"
)

// Confidence says how a cause was found.
type Confidence string

const (
	// ConfidenceExact: a CPID or an owner reference names the cause.
	ConfidenceExact Confidence = "exact"
	// ConfidenceHeuristic: the cause was found by a time window.
	ConfidenceHeuristic Confidence = "heuristic"
)

// Anomaly is something in the logs that a reconstruction must not hide.
type Anomaly struct {
	Kind    string // rv-backwards, repeated-write, transition-backwards
	EventID int64
	Key     ObjectKey
	Detail  string
}

// Derived is what a reconstruct run derived from a stretch of writes: the
// rows it stores.
type Derived struct {
	Writes    []Write
	Mergelogs []Emitted
	Changes   []Change
	Anomalies []Anomaly
	Spans     []Span
	// Reorder lists the objects a write reached out of order: their
	// writes must be renumbered from all of them.
	Reorder map[ObjectKey]bool
	// Relabel lists the objects turned to time order whose earlier writes
	// keep their places: their order_by becomes "time".
	Relabel map[ObjectKey]bool
	// Objects are engine states of objects a full rebuild saves as it goes
	// (an incremental run saves them with its watermark: Watermark.Objects).
	Objects []ObjectState
}

// Rows is how many rows d stores, about.
func (d *Derived) Rows() int {
	n := len(d.Writes) + len(d.Changes) + len(d.Anomalies) + len(d.Spans) + len(d.Objects)
	for _, m := range d.Mergelogs {
		n += 1 + len(m.Sources)
	}
	return n
}

// PodWrite is a write of a Pod created by a change, for the SLIs.
type PodWrite struct {
	Change        string
	ChangeStartNS int64
	Namespace     string
	Name          string
	Verb          string
	Subresource   string
	StageNS       int64
	Object        json.RawMessage // the Pod after the write, when the audit log has it
}

// MergelogRows assembles mergelogs from the rows of a join of mergelogs and
// their sources: one row per source in order, one row with no source ("")
// for a root, rows of one mergelog (its id) together.
type MergelogRows struct {
	cur  Mergelog
	id   int64
	have bool
}

// Add takes a row and returns the mergelog it completed, if any.
func (r *MergelogRows) Add(id int64, m Mergelog, src string) (done Mergelog, ok bool) {
	if !r.have || id != r.id {
		done, ok = r.cur, r.have
		r.cur, r.id, r.have = m, id, true
		r.cur.Sources = nil
	}
	if src != "" {
		r.cur.Sources = append(r.cur.Sources, src)
	}
	return done, ok
}

// Last returns the mergelog of the last rows, if any.
func (r *MergelogRows) Last() (Mergelog, bool) { return r.cur, r.have }

// MergelogRow is one row of a join of mergelogs and their sources: a
// mergelog without sources has one row with Source "".
type MergelogRow struct {
	ID      int64
	CPID    string
	TimeNS  int64
	Service string
	Origin  Origin
	Source  string
	Pos     int64
}

// MergelogsOf are the rows of a few mergelogs read in no order.
type MergelogsOf []MergelogRow

// Each sorts the rows by mergelog and source position and calls fn for
// each mergelog, in the order they were stored.
func (rs MergelogsOf) Each(fn func(Mergelog) error) error {
	slices.SortFunc(rs, func(a, b MergelogRow) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Pos, b.Pos)) })
	var mr MergelogRows
	for _, r := range rs {
		if done, ok := mr.Add(r.ID, Mergelog{CPID: r.CPID, TimeNS: r.TimeNS, Service: r.Service, Origin: r.Origin}, r.Source); ok {
			if err := fn(done); err != nil {
				return err
			}
		}
	}
	if last, ok := mr.Last(); ok {
		return fn(last)
	}
	return nil
}
