package reconstruct

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// Rule finds what caused a write by a controller that carries no CPID of its
// own: the objects whose latest writes it reacted to. Rules only name
// objects; the engine looks up the writes and merges their CPIDs the way
// Algorithm 1 does.
type Rule struct {
	Name string
	// Doc is the rule in one sentence, for people.
	Doc string
	// Exact: the write itself names the objects (owner references), so
	// the cause is exact when no heuristic had to choose between changes;
	// the other rules find causes by time (confidence heuristic).
	Exact bool
	// Timed: the rule picks its causes among several objects by time alone
	// (the dependents written last, a sibling deleted last), so a write
	// still in flight when the effect arrived is not one of them, however
	// close: only writes completed by then count.
	Timed bool
	// Spec: for the create or delete of an object (not a subresource),
	// the cause is the latest write that may have changed the cause's
	// spec: an owner's controller creates and deletes dependents for its
	// spec, and a label or an annotation put on the owner meanwhile
	// (kubectl annotate) did not cause them.
	Spec bool
	// Causes returns the objects that w reacted to, or nil when the rule
	// does not apply.
	Causes func(w *Event, o *Object, s *State) []cpid.ObjectKey
}

// Rules is the table of inference rules, applied in order to every write of a
// controller. It is a variable so that a program embedding reconstruct can
// append rules of its own; owner references need none (custom resources with
// ownerReferences work as they are).
var Rules = []Rule{
	{
		Name: "self",
		Doc:  "a write to an existing object (update, patch, status, binding, delete) follows the object's previous write",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if w.Verb == "create" && w.Subresource == "" {
				return nil
			}
			return []cpid.ObjectKey{o.Key}
		},
	},
	{
		Name:  "owner",
		Exact: true,
		Spec:  true,
		Doc:   "a write to an object with ownerReferences (ReplicaSet of a Deployment, Pod of a ReplicaSet, EndpointSlice of a Service, any custom resource) follows its owners' latest writes (for the create or delete of a dependent, the latest that may have changed the owner's spec), unless it writes a subresource (a binding, a status, an eviction: those follow the object itself) or a node agent wrote it (a kubelet reacts to its Pods, not to their owners)",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if w.Subresource != "" || nodeAgent(w.Writer().Name) {
				return nil
			}
			var out []cpid.ObjectKey
			for _, r := range o.OwnerRefs {
				if k, ok := s.ByUID(r.UID); ok {
					out = append(out, k)
				}
			}
			return out
		},
	},
	{
		Name:  "dependents",
		Timed: true,
		Doc:   "a controller's write to an owner's status (a ReplicaSet's, a Deployment's) follows the latest writes of its dependents (its Pods, its ReplicaSets)",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if o.UID == "" || w.Subresource != "status" {
				return nil
			}
			return s.LatestDependents(o.UID, o.Key)
		},
	},
	{
		Name:  "siblings",
		Timed: true,
		Doc:   "a controller's create or delete of a dependent follows the deletion of another dependent of the same owner by someone else (a ReplicaSet replacing an evicted Pod); not a node agent's write, and not between the writes of one controller (the deletes of one sync)",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if w.Subresource != "" || w.Verb != "create" && w.Verb != "delete" {
				return nil
			}
			writer := w.Writer().Name
			if nodeAgent(writer) {
				return nil
			}
			var out []cpid.ObjectKey
			for _, r := range o.OwnerRefs {
				if !r.Controller || r.UID == "" {
					continue
				}
				for _, k := range s.LatestDependents(r.UID, o.Key) {
					if d := s.Object(k); d != nil && d.Deleted && d.DeletedBy != writer {
						out = append(out, k)
					}
				}
			}
			return out
		},
	},
	{
		Name: "service",
		Doc:  "an EndpointSlice (label kubernetes.io/service-name) or Endpoints (same name) follows its Service",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			switch {
			case o.Key.Resource == "endpointslices" && o.ServiceName != "":
				return []cpid.ObjectKey{{Resource: "services", Namespace: o.Key.Namespace, Name: o.ServiceName}}
			case o.Key.Resource == "endpoints" && o.Key.Group == "":
				return []cpid.ObjectKey{{Resource: "services", Namespace: o.Key.Namespace, Name: o.Key.Name}}
			}
			return nil
		},
	},
	{
		Name: "targets",
		Doc:  "an EndpointSlice or Endpoints follows the Pods it lists (targetRefs), before and after the write: a Pod that became ready, or went away",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if len(o.Targets) == 0 && len(o.PrevTargets) == 0 {
				return nil
			}
			out := append([]cpid.ObjectKey(nil), o.Targets...)
			return append(out, o.PrevTargets...)
		},
	},
	{
		Name: "node",
		Doc:  "a Pod written by the node lifecycle controller (marked NotReady, evicted), the taint eviction controller, the pod garbage collector (its Node gone) or its node's kubelet, or created by the DaemonSet controller for a node (its required node affinity on metadata.name), follows its Node",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if o.Key.Resource != "pods" || o.Key.Group != "" || o.NodeName == "" {
				return nil
			}
			switch wr := w.Writer().Name; {
			case wr == NodeController, wr == TaintEvictionController, wr == PodGarbageCollector, wr == Kubelet(o.NodeName), wr == KWOK,
				wr == DaemonSetController && w.Verb == "create" && w.Subresource == "":
				return []cpid.ObjectKey{{Resource: "nodes", Name: o.NodeName}}
			}
			return nil
		},
	},
	{
		Name: "namespace",
		Doc:  "a write of the namespace controller (the deletecollections that empty a namespace being deleted), or a namespace's defaults created by the root CA publisher (kube-root-ca.crt) or the service account controller (default), follows the Namespace's latest write",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if o.Key.Namespace == "" {
				return nil
			}
			switch wr := w.Writer().Name; {
			case wr == NamespaceController,
				(wr == RootCAPublisher || wr == ServiceAccountController) && w.Verb == "create":
				return []cpid.ObjectKey{{Resource: "namespaces", Name: o.Key.Namespace}}
			}
			return nil
		},
	},
	{
		Name: "disruption",
		Doc:  "a PodDisruptionBudget's status written by the disruption controller, or by the apiserver within an eviction (it spends one allowed disruption), follows the latest written Pod of its namespace (the Pods its selector counts, the Pod evicted)",
		Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
			if wr := w.Writer().Name; o.Key.Resource != "poddisruptionbudgets" || wr != DisruptionController && wr != APIServer {
				return nil
			}
			if k, ok := s.mem.LatestPods.Get(o.Key.Namespace); ok {
				return []cpid.ObjectKey{k}
			}
			return nil
		},
	},
}

// body holds the few fields of an object body the rules and the anomaly
// checks read.
type body struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
		// Affinity is kept as it came, for the node a DaemonSet's Pod is
		// made for (pinnedNode): the DaemonSet controller pins it with a
		// required node affinity on metadata.name, and the scheduler binds
		// it there.
		Affinity json.RawMessage `json:"affinity"`
		// Tolerations are kept as they came, for how long a Pod stays on
		// a Node that went NotReady or unreachable (tolerationFor).
		Tolerations json.RawMessage `json:"tolerations"`
	} `json:"spec"`
	// Pods and Nodes
	Status struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
	Endpoints []endpoint `json:"endpoints"` // EndpointSlice
	Subsets   []subset   `json:"subsets"`   // Endpoints
}

type condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
	LastTransitionTime string `json:"lastTransitionTime"`
}

type endpoint struct {
	TargetRef *targetRef `json:"targetRef"`
}

type subset struct {
	Addresses         []address `json:"addresses"`
	NotReadyAddresses []address `json:"notReadyAddresses"`
}

type address struct{ TargetRef *targetRef }

type targetRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// readsBody lists the resources whose object after the write the rules and
// the anomaly checks read (the fields of body); Run fetches no other body.
var readsBody = cpid.BodiedResources

// Digest decodes the fields of e.Object the engine reads and hashes
// e.Request, then drops both bodies: a reader may call it ahead of Process,
// in another goroutine, to share the work and keep less memory; Process
// does the same work otherwise. The bodies may then be reused.
func (e *Event) Digest() {
	e.DecodeObject()
	e.hashRequest()
	e.hasObject = e.hasObject || len(e.Object) > 0
	e.Object, e.Request = nil, nil
}

// HasObject reports whether the audit log holds the object after the write
// (before Digest drops it, and after).
func (e *Event) HasObject() bool { return e.hasObject || len(e.Object) > 0 }

// hashRequest hashes the request body with the writer and subresource, to
// spot a writer sending the same request twice (repeated-write), and notes
// whether it was a metadata-only patch (metadataOnly) and the hash of the
// spec it sent (hashSpec).
func (e *Event) hashRequest() {
	if e.hashed {
		return
	}
	e.hashed = true
	e.metaOnly = metadataOnly(e)
	e.hashSpec()
	if len(e.Request) > 0 {
		h := sha1.New()
		h.Write([]byte(e.Username))
		h.Write([]byte{0})
		h.Write([]byte(e.Subresource))
		h.Write([]byte{0})
		h.Write(e.Request)
		h.Sum(e.reqHash[:0])
		e.hasReq = true
	}
}

// DecodeObject decodes the fields of e.Object the engine reads, once. An
// Object that does not decode is dropped.
func (e *Event) DecodeObject() {
	if e.decoded {
		return
	}
	e.decoded = true
	if len(e.Object) == 0 || !readsBody[e.Resource] {
		return
	}
	e.body = decodeBody(e.Object)
}

// readBody updates what o knows of its object from a write's body.
func readBody(o *Object, e *Event) {
	e.DecodeObject()
	b := e.body
	if b == nil {
		return
	}
	switch o.Key.Resource {
	case "pods":
		if b.Spec.NodeName != "" {
			o.NodeName = b.Spec.NodeName
		} else if n := pinnedNode(b); n != "" {
			o.NodeName = n
		}
		if len(b.Spec.Tolerations) > 0 && !bytes.Equal(b.Spec.Tolerations, o.tolerations) {
			o.tolerations, o.tolDone = b.Spec.Tolerations, false
		}
		for _, c := range b.Status.Conditions {
			switch {
			case c.Type != "PodScheduled":
			case c.Status == "False" && c.Reason == "Unschedulable":
				if o.UnschedNS == 0 {
					o.UnschedNS, o.Unsched = e.StageNS, c.Message
				}
			default:
				o.UnschedNS, o.Unsched = 0, ""
			}
		}
	case "nodes":
		for _, c := range b.Status.Conditions {
			if c.Type == "Ready" && c.Status != "" {
				o.Ready = c.Status
			}
		}
	case "endpointslices":
		o.ServiceName = b.Metadata.Labels["kubernetes.io/service-name"]
		o.PrevTargets, o.Targets = o.Targets, nil
		for _, e := range b.Endpoints {
			o.Targets = appendTarget(o.Targets, e.TargetRef, o.Key.Namespace)
		}
	case "endpoints":
		o.PrevTargets, o.Targets = o.Targets, nil
		for _, s := range b.Subsets {
			for _, a := range s.Addresses {
				o.Targets = appendTarget(o.Targets, a.TargetRef, o.Key.Namespace)
			}
			for _, a := range s.NotReadyAddresses {
				o.Targets = appendTarget(o.Targets, a.TargetRef, o.Key.Namespace)
			}
		}
	}
}

// pinnedNode returns the one node a Pod's required node affinity allows by
// name (metadata.name In [NODE]: a DaemonSet's Pod), "" when there is none.
func pinnedNode(b *body) string {
	if len(b.Spec.Affinity) == 0 || !bytes.Contains(b.Spec.Affinity, []byte("metadata.name")) {
		return ""
	}
	var a *struct {
		NodeAffinity *struct {
			Required *struct {
				Terms []struct {
					MatchFields []struct {
						Key      string   `json:"key"`
						Operator string   `json:"operator"`
						Values   []string `json:"values"`
					} `json:"matchFields"`
				} `json:"nodeSelectorTerms"`
			} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `json:"nodeAffinity"`
	}
	if json.Unmarshal(b.Spec.Affinity, &a) != nil || a == nil || a.NodeAffinity == nil || a.NodeAffinity.Required == nil ||
		len(a.NodeAffinity.Required.Terms) != 1 {
		return ""
	}
	for _, f := range a.NodeAffinity.Required.Terms[0].MatchFields {
		if f.Key == "metadata.name" && f.Operator == "In" && len(f.Values) == 1 {
			return f.Values[0]
		}
	}
	return ""
}

// tolerationFor says how long a Pod tolerates the NoExecute taints the node
// lifecycle controller puts on a Node that is not ready or unreachable, as
// its spec says: "node.kubernetes.io/unreachable:NoExecute for 10s";
// "" when the spec is not known.
func tolerationFor(tolerations json.RawMessage) string {
	var ts []struct {
		Key               string `json:"key"`
		Operator          string `json:"operator"`
		Effect            string `json:"effect"`
		TolerationSeconds *int64 `json:"tolerationSeconds"`
	}
	if len(tolerations) == 0 || json.Unmarshal(tolerations, &ts) != nil {
		return ""
	}
	var out []string
	for _, t := range ts {
		if t.Effect != "NoExecute" || t.Key != "node.kubernetes.io/unreachable" && t.Key != "node.kubernetes.io/not-ready" {
			continue
		}
		d := "forever"
		if t.TolerationSeconds != nil {
			d = "for " + (time.Duration(*t.TolerationSeconds) * time.Second).String()
		}
		out = append(out, t.Key+":NoExecute "+d)
	}
	return strings.Join(out, ", ")
}

func appendTarget(ks []cpid.ObjectKey, t *targetRef, ns string) []cpid.ObjectKey {
	if t == nil || t.Kind != "Pod" || t.Name == "" {
		return ks
	}
	if t.Namespace != "" {
		ns = t.Namespace
	}
	return append(ks, cpid.ObjectKey{Resource: "pods", Namespace: ns, Name: t.Name})
}

// hashSpec reads the spec a create or an update sends (the whole object,
// of a status write too): it hashes that of an object, so that comparing it
// with the object's previous one tells an update that changed only metadata
// (a controller copying annotations) from one that changed the spec, and
// reads the fields that make a controller wait on purpose
// (minReadySeconds, progressDeadlineSeconds).
func (e *Event) hashSpec() {
	if e.Subresource != "" && e.Subresource != "status" || e.Verb != "create" && e.Verb != "update" ||
		len(e.Request) == 0 || e.Request[0] != '{' {
		return
	}
	d := jsonscan.Get()
	defer d.Release()
	if d.Parse(e.Request) != nil {
		return
	}
	for i := range d.Members {
		m := &d.Members[i]
		if string(m.Key(d.Buf)) != "spec" {
			continue
		}
		if e.Subresource == "" {
			e.specHash, e.hasSpec = sha1.Sum(d.Buf[m.ValStart:m.ValEnd]), true
		}
		if d.Buf[m.ValStart] != '{' {
			continue
		}
		var f jsonscan.Member
		for it := d.Index.Members(d.Buf, m.ValStart); it.Next(&f); {
			switch string(f.Key(d.Buf)) {
			case "minReadySeconds":
				e.minReady = seconds(d.Buf[f.ValStart:f.ValEnd])
			case "progressDeadlineSeconds":
				e.deadline = seconds(d.Buf[f.ValStart:f.ValEnd])
			}
		}
	}
	e.deadlineExceeded = e.Subresource == "status" && bytes.Contains(e.Request, []byte(`"ProgressDeadlineExceeded"`))
}

// seconds reads a number of seconds, 0 when it is not a small integer.
func seconds(b []byte) time.Duration {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n > 1<<20 {
		return 0
	}
	return time.Duration(n) * time.Second
}
