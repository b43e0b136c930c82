package reconstruct

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/google/uuid"
)

// Object is what the engine knows of one object: its identity, the fields
// the rules read, and its latest writes.
type Object struct {
	Key       cpid.ObjectKey
	UID       string
	OwnerRefs []cpid.OwnerRef
	NodeName  string // Pods: spec.nodeName
	// ServiceName, Targets and PrevTargets are for EndpointSlices and
	// Endpoints: the Service and the Pods listed now and before the write.
	ServiceName string
	Targets     []cpid.ObjectKey
	PrevTargets []cpid.ObjectKey

	// last and prev are the two latest successful writes, so that a write
	// received while another to the same object was in flight finds the one
	// it could have observed. specLast and specPrev are the same among the
	// writes that may have changed the spec (specChanged): what an owner's
	// controller creates or deletes dependents for.
	last, prev         *Ref
	specLast, specPrev *Ref
	specHash           [20]byte // of the spec the latest update or create sent
	hasSpec            bool
	// minReady and deadline are the spec's minReadySeconds and
	// progressDeadlineSeconds, as the latest create or update sent them.
	minReady, deadline time.Duration
	// unschedNS is when the scheduler marked this Pod Unschedulable (0:
	// it is not), unsched its message.
	unschedNS  int64
	unsched    string
	lastRV     int64
	lastSource string   // the log of the write that stored lastRV
	lastReq    [20]byte // hash of the latest request body, to spot repeats
	conds      map[string]int64

	// revs numbers the object's writes (revisions and attempts) as they
	// come; byTime is set once one resourceVersion does not parse; maxRV
	// and maxTime are the greatest ordering keys so far (see number).
	revs    int
	byTime  bool
	maxRV   ordKey
	maxTime ordKey
	// unordered: the writes' places may differ from their arrival order
	// (one came out of time order, or the object was reordered).
	unordered bool
	// failed holds, per writer, its latest failed write to the object that
	// it has not yet followed with a successful one: the next is a retry.
	failed map[string]failure
	// ready is a Node's Ready condition status ("True", "False",
	// "Unknown") after its latest write, "" before the first.
	ready string
	// deleted: the latest successful write was a delete, by deletedBy.
	deleted   bool
	deletedBy string
	// tolerations are a Pod's spec.tolerations as its latest write with a
	// body sent them; tolSummary what tolerationFor makes of them, once
	// tolDone (the saved state keeps only the summary).
	tolerations json.RawMessage
	tolSummary  string
	tolDone     bool
	// agent is a Node's latest status write by its node agent (a kubelet,
	// KWOK): its last heartbeat the audit log shows.
	agent *Ref
	// marked: the node lifecycle controller wrote this Node's status and
	// the audit log hides its conditions; its node agent has not written
	// since.
	marked bool
	// trace and annCPID are the traceparent and the CPID annotation the
	// object carried after its latest successful write.
	trace, annCPID string
}

// ordKey orders an object's writes: by resourceVersion (rv), then stage
// time, then event ID; with rv left 0 when ordering by time.
type ordKey struct{ RV, NS, ID int64 }

func (a ordKey) less(b ordKey) bool {
	if a.RV != b.RV {
		return a.RV < b.RV
	}
	if a.NS != b.NS {
		return a.NS < b.NS
	}
	return a.ID < b.ID
}

// Ref is a write as later writes see it: its CPID and the change it belongs to.
type Ref struct {
	EventID     int64
	ReceivedNS  int64
	StageNS     int64
	CPID        string
	Change      string
	ChangeStart int64
}

// tolerated is tolerationFor of the Pod's tolerations, decoded once.
func (o *Object) tolerated() string {
	if !o.tolDone {
		o.tolSummary, o.tolDone = tolerationFor(o.tolerations), true
	}
	return o.tolSummary
}

// observed returns the latest write of o that a write received at t could
// have reacted to. Watchers see a write when etcd commits it, which is
// before the apiserver's ResponseComplete stage time (a Service's delete
// completes after its ClusterIP is released, its Endpoints deleted
// meanwhile); so the test is that the write was received before t. Rules
// that pick among several objects by time alone (TimedRules) take only
// writes that had completed by t (completed).
func (o *Object) observed(t int64) *Ref { return observed(o.last, o.prev, t) }

// completed is observed among the writes that had completed by t.
func (o *Object) completed(t int64) *Ref {
	switch {
	case o.last != nil && o.last.StageNS <= t:
		return o.last
	case o.prev != nil && o.prev.StageNS <= t:
		return o.prev
	}
	return nil
}

// observedSpec is observed among the writes that could change the object's
// spec; the latest write when none is known.
func (o *Object) observedSpec(t int64) *Ref {
	if o.specLast == nil {
		return o.observed(t)
	}
	return observed(o.specLast, o.specPrev, t)
}

// specChanged reports whether the write e may have changed o's spec, and
// remembers the spec it sent: not when it was a metadata-only patch, or an
// update whose spec is the one o had.
func (o *Object) specChanged(e *Event) bool {
	if e.metaOnly {
		return false
	}
	same := e.hasSpec && o.hasSpec && e.specHash == o.specHash
	if e.Subresource == "" || e.Subresource == "scale" {
		// A spec written without being read (a patch, a scale) is
		// unknown until the next update sends it whole.
		o.specHash, o.hasSpec = e.specHash, e.hasSpec
	}
	return !same
}

func observed(last, prev *Ref, t int64) *Ref {
	switch {
	case last != nil && last.ReceivedNS < t:
		return last
	case prev != nil && prev.ReceivedNS < t:
		return prev
	}
	return nil
}

// State is the engine's view of the cluster: objects by key and by UID.
type State struct {
	objects map[cpid.ObjectKey]*Object
	byUID   map[string]cpid.ObjectKey
	// children holds, per owner UID, the two dependents written last (the
	// latest first): what an owner's controller reacts to when it writes
	// the owner's status or replaces a dependent.
	children map[string][2]cpid.ObjectKey
	// latestPod holds, per namespace, the Pod written last: what a
	// PodDisruptionBudget's status counts.
	latestPod map[string]cpid.ObjectKey
}

// LatestDependents returns the dependents of the owner with that UID
// written last, the latest first, none of them skip.
func (s *State) LatestDependents(uid string, skip cpid.ObjectKey) []cpid.ObjectKey {
	var out []cpid.ObjectKey
	for _, k := range s.children[uid] {
		if k != (cpid.ObjectKey{}) && k != skip {
			out = append(out, k)
		}
	}
	return out
}

// wrote records a successful write of o among its owners' dependents.
func (s *State) wrote(o *Object) {
	if o.Key.Resource == "pods" && o.Key.Group == "" && o.Key.Name != "" {
		s.latestPod[o.Key.Namespace] = o.Key
	}
	for _, r := range o.OwnerRefs {
		if r.UID == "" {
			continue
		}
		c := s.children[r.UID]
		if c[0] != o.Key {
			c[0], c[1] = o.Key, c[0]
		}
		s.children[r.UID] = c
	}
}

// ByUID finds an object by metadata.uid.
func (s *State) ByUID(uid string) (cpid.ObjectKey, bool) {
	k, ok := s.byUID[uid]
	return k, ok
}

// Object returns the object of key, nil when the engine has not seen it.
func (s *State) Object(k cpid.ObjectKey) *Object { return s.objects[k] }

// Engine turns writes, fed in apiserver order, into Writes, Mergelogs,
// Changes and Anomalies. It is not safe for concurrent use.
type Engine struct {
	State
	Graph *Graph
	// recorded says, per CPID, which origins already have a mergelog for it.
	recorded map[string]uint8
	// Windows are the reaction windows hops are explained by (nil:
	// DefaultWindows).
	Windows   []Window
	bandCache map[[3]string][]Window
	// IgnoreCPIDs drops the CPIDs writes carry (Options.IgnoreCPIDs).
	IgnoreCPIDs bool
	// Evidence reads what explains a controller's silence; epochs holds
	// the first write of each start of a process that continued
	// interrupted work (the root of its controller-start change), and
	// epoch the start the write being processed opens.
	Evidence  Evidence
	Throttles Throttles // client-side throttling from the controllers' logs
	// NodeLeases reads the writes of a Node's Lease in NodeLeaseNamespace
	// (its heartbeats) after afterNS and at most atNS; nil reads none.
	NodeLeases  func(node string, afterNS, atNS int64) ([]cpid.Evidence, error)
	thr         throttleCache
	evidenceErr error
	evCache     map[string]*evCache
	epochs      map[string]*Ref
	epoch       string
	// Bodies counts, per resource whose objects the rules read, the
	// successful creates, updates and patches with the object after the
	// write in the audit log [0] and without it [1] (Metadata level, or
	// truncated): what the data cannot tell.
	Bodies map[string]*[2]int

	// programs holds when each program (a user agent's) wrote, and
	// changeLast each change's latest write: whether a change was still
	// going when its controller stopped (pending).
	programs   map[string]*activity
	changeLast map[string]int64
	// Unexplained counts the writes kept in their changes after a hop past
	// every window with nothing in the logs to say why, and names the
	// longest (the run's data warning).
	Unexplained UnexplainedHops
	// BadOwnerRefs counts the writes whose owner references were not
	// valid JSON (the owner rule could not use them), and names the first
	// (the run's data warning; set by Run once its scan ends).
	BadOwnerRefs BadInput

	// Derived accumulates what Process emits until Drain takes it.
	cpid.Derived
}

// Drain returns what the engine emitted since the last Drain and starts
// afresh, so that a long run can be stored while it goes on.
func (en *Engine) Drain() cpid.Derived {
	out := en.Derived
	en.Derived = cpid.Derived{Writes: make([]cpid.Write, 0, cap(out.Writes))}
	return out
}

// NewEngine returns an engine with an empty state and graph.
func NewEngine() *Engine {
	return &Engine{
		State: State{objects: map[cpid.ObjectKey]*Object{}, byUID: map[string]cpid.ObjectKey{}, children: map[string][2]cpid.ObjectKey{},
			latestPod: map[string]cpid.ObjectKey{}},
		Graph:      NewGraph(),
		recorded:   map[string]uint8{},
		epochs:     map[string]*Ref{},
		Bodies:     map[string]*[2]int{},
		programs:   map[string]*activity{},
		changeLast: map[string]int64{},
	}
}

func originBit(o cpid.Origin) uint8 {
	switch o {
	case cpid.OriginLog:
		return 1
	case cpid.OriginAnnotation:
		return 2
	}
	return 4
}

// has reports whether a mergelog of that origin was recorded for cpid; a
// CPID known only as the source of another's mergelog has none.
func (en *Engine) has(cpid string, o cpid.Origin) bool { return en.recorded[cpid]&originBit(o) != 0 }

// hasAny reports whether any mergelog was recorded for cpid.
func (en *Engine) hasAny(cpid string) bool { return en.recorded[cpid] != 0 }

// AddMergelog adds a mergelog read from a controller's log (origin log) or
// elsewhere to the graph and the output.
func (en *Engine) AddMergelog(m cpid.Mergelog) error {
	if err := en.Graph.Add(m); err != nil {
		return err
	}
	en.recorded[m.CPID] |= originBit(m.Origin)
	en.Mergelogs = append(en.Mergelogs, cpid.Emitted{Mergelog: m})
	return nil
}

// AddSpan adds a controller span read from a log.
func (en *Engine) AddSpan(s cpid.Span) { en.Spans = append(en.Spans, s) }

// inferredCPID derives the CPID of an inferred merge from the write, so that
// a rebuild mints the same one: a version 5 UUID of the auditID.
func inferredCPID(e *Event) string {
	return uuid.NewHash(sha1.New(), cpidSpace, []byte(e.AuditID+"/"+strconv.FormatInt(e.StageNS, 10)), 5).String()
}

var cpidSpace = uuid.MustParse("6f1b6d4e-3c2a-4f0e-9a57-2f8d0c1e5b33")

// Process reconstructs one write. Writes must come in the order the
// apiserver received them (then ID); ignored resources and non-writes are
// skipped.
func (en *Engine) Process(e *Event) {
	if !IsWrite(e.Verb) || Ignored[e.Resource] || (e.Subresource != "" && Ignored[e.Resource+"/"+e.Subresource]) {
		return
	}
	if en.IgnoreCPIDs {
		e.CPID, e.Ancestors = "", nil
	}
	key := e.Key()
	o := en.objects[key]
	if o == nil {
		o = &Object{Key: key}
		en.objects[key] = o
	}
	w := cpid.Write{EventID: e.ID, StageNS: e.StageNS, ResourceVersion: e.ResourceVersion, Key: key, Writer: e.Writer(), Attempt: e.Failed()}
	en.active(agentName(e.UserAgent), e.ReceivedNS)
	en.number(o, e, &w)
	wasReady := o.ready
	if !w.Attempt {
		en.learn(o, e)
	}

	var causes []cause
	var root rootOf
	switch {
	case w.Writer.User:
		root = rootOf{trigger: cpid.TriggerUser}
	case !w.Attempt && nodeTransition(o, wasReady):
		root = rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s Ready %s -> %s", o.Key.Name, wasReady, o.ready)}
		en.lastHeartbeat(e, o, &w)
	case !w.Attempt && blindNodeStatus(o, e, w.Writer.Name):
		o.marked = true
		root = rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s status written by the node lifecycle controller "+
			"(its conditions are not in the audit log: nodes audited at Metadata level)", o.Key.Name)}
		en.lastHeartbeat(e, o, &w)
	case !w.Attempt && o.marked && e.Subresource == "status" && nodeAgent(w.Writer.Name) && !e.HasObject():
		o.marked = false
		root = rootOf{trigger: cpid.TriggerNode, detail: fmt.Sprintf("Node %s status written by its node agent again after the "+
			"node lifecycle controller marked it (its conditions are not in the audit log: nodes audited at Metadata level)", o.Key.Name)}
	default:
		causes = en.causes(e, o)
		root = en.decide(e, o, &w, causes)
	}
	if root.trigger != "" {
		w.CPIDOrigin = "root"
		// The root's CPID is the one its writer stamped: a CPID the object
		// carried already belongs to the change that put it there.
		w.CPID = e.CPID
		if w.CPID == "" || o.last != nil && (o.last.CPID == e.CPID || o.annCPID == e.CPID) {
			w.CPID = e.AuditID
		}
		w.ChangeID = w.CPID
	}

	if w.Attempt {
		if o.failed == nil {
			o.failed = map[string]failure{}
		}
		o.failed[w.Writer.Name] = failure{Writer: w.Writer.Name, Code: e.Code, StageNS: e.StageNS}
		en.Writes = append(en.Writes, w)
		return
	}
	if w.CPIDOrigin == "root" {
		if !en.hasAny(w.CPID) {
			en.emit(e, cpid.Mergelog{CPID: w.CPID, TimeNS: e.StageNS, Service: w.Writer.Name, Origin: cpid.OriginInferred})
		}
		en.Changes = append(en.Changes, cpid.Change{ID: w.CPID, EventID: e.ID, StartNS: e.ReceivedNS, Trigger: root.trigger,
			Detail: root.detail, Traceparent: setTrace(o, e)})
	}
	ref := &Ref{EventID: e.ID, ReceivedNS: e.ReceivedNS, StageNS: e.StageNS, CPID: w.CPID, Change: w.ChangeID}
	switch {
	case w.CPIDOrigin == "root":
		ref.ChangeStart = e.ReceivedNS
	case w.ChangeID != "":
		ref.ChangeStart = root.changeStart
	}
	o.prev, o.last = o.last, ref
	if e.hashRequest(); o.specChanged(e) {
		o.specPrev, o.specLast = o.specLast, ref
	}
	if e.minReady > 0 || e.hasSpec {
		o.minReady = e.minReady
	}
	if e.deadline > 0 || e.hasSpec {
		o.deadline = e.deadline
	}
	o.trace, o.annCPID = e.Traceparent, e.CPID
	if w.ChangeID != "" {
		en.changeLast[w.ChangeID] = max(en.changeLast[w.ChangeID], e.StageNS)
	}
	delete(o.failed, w.Writer.Name) // retried: the failure is explained
	if en.epoch != "" {
		en.epochs[en.epoch] = ref
		en.epoch = ""
	}
	// An eviction deletes the Pod (gracefully, once its
	// PodDisruptionBudget allows it): its controller replaces it.
	if o.Key.Resource == "nodes" && o.Key.Group == "" && e.Subresource == "status" && nodeAgent(w.Writer.Name) {
		o.agent = ref
	}
	o.deleted, o.deletedBy = e.Verb == "delete" && e.Subresource == "" || e.Verb == "create" && e.Subresource == "eviction", ""
	if o.deleted {
		o.deletedBy = w.Writer.Name
	}
	en.wrote(o)
	en.Writes = append(en.Writes, w)
}

// lastHeartbeat gives a Node's loss, a root written by the node lifecycle
// controller, the node agent's last status write before it as its cause:
// the story starts where the heartbeats stopped (Lease renewals, which
// are not read, may have gone on a little longer).
func (en *Engine) lastHeartbeat(e *Event, o *Object, w *cpid.Write) {
	if w.Writer.Name != "node-controller" || o.agent == nil || o.agent.StageNS > e.ReceivedNS {
		return
	}
	d := time.Duration(e.StageNS - o.agent.StageNS)
	w.CauseEventID, w.Rule, w.HopNS = o.agent.EventID, "self", int64(d)
	w.Explain, w.Confidence = cpid.ExplainNodeGrace, cpid.ConfidenceHeuristic
	w.ExplainDetail = fmt.Sprintf("its node agent last wrote the Node's status %s before, at %s; %s", d.Round(time.Millisecond),
		clockOf(o.agent.StageNS), bandDetail(Window{Explain: cpid.ExplainNodeGrace}, d))
	if en.NodeLeases == nil {
		return
	}
	evs, err := en.NodeLeases(o.Key.Name, o.agent.StageNS, e.ReceivedNS)
	if err != nil {
		en.evidenceErr = err
		return
	}
	var renewed int64
	for _, ev := range evs {
		if ev.Code < 400 {
			renewed = max(renewed, ev.AtNS)
		}
	}
	if renewed > 0 {
		q := time.Duration(e.StageNS - renewed)
		w.ExplainDetail = fmt.Sprintf("its Lease %s/%s was last renewed %s before, at %s, and its node agent last wrote the "+
			"Node's status at %s; %s", NodeLeaseNamespace, o.Key.Name, q.Round(time.Millisecond), clockOf(renewed),
			clockOf(o.agent.StageNS), bandDetail(Window{Explain: cpid.ExplainNodeGrace}, q))
	}
}

type cause struct {
	ref  *Ref
	rule string
}

// causes applies the rules: the latest write of every object w reacted to
// that completed before w was received.
func (en *Engine) causes(e *Event, o *Object) []cause {
	var out []cause
	seen := map[int64]bool{}
	for i := range Rules {
		for _, k := range Rules[i].Causes(e, o, &en.State) {
			c := en.objects[k]
			if c == nil {
				continue
			}
			r := c.observed(e.ReceivedNS)
			if timedRules[Rules[i].Name] {
				r = c.completed(e.ReceivedNS)
			}
			if Rules[i].Name == "owner" && e.Subresource == "" && (e.Verb == "create" || e.Verb == "delete") {
				// An owner's controller creates and deletes dependents
				// for its spec: a label or an annotation put on the owner
				// meanwhile (kubectl annotate) did not cause them.
				r = c.observedSpec(e.ReceivedNS)
			}
			// A deletecollection of the object's resource in its namespace
			// (the namespace controller emptying a namespace) stands for
			// the delete of every object it held: the audit log has one
			// event for the collection, none for each object.
			if coll := en.objects[collectionOf(k)]; coll != nil && k.Name != "" && !(e.Verb == "create" && e.Subresource == "" && k == o.Key) {
				if cr := coll.observed(e.ReceivedNS); cr != nil && (r == nil || cr.ReceivedNS > r.StageNS) {
					r = cr
				}
			}
			if r == nil || seen[r.EventID] || r.EventID == e.ID {
				continue
			}
			seen[r.EventID] = true
			out = append(out, cause{ref: r, rule: Rules[i].Name})
		}
	}
	return out
}

// collectionOf is the key of the collection k belongs to: its resource in
// its namespace, the key of a deletecollection.
func collectionOf(k cpid.ObjectKey) cpid.ObjectKey {
	k.Name = ""
	return k
}

// rootOf says that a write starts a change, and why; the zero value says
// it does not. For a write that joins a change, changeStart is when that
// change started.
type rootOf struct {
	trigger     cpid.Trigger
	detail      string
	changeStart int64
}

// decide gives a controller's write its CPID, change and cause. The CPIDs of
// the causes, with the one the object carries, are merged as Algorithm 1
// does: reuse the CPID that descends from all others, else mint one and
// emit a mergelog whose sources are the maximal CPIDs. A write whose causes
// belong to changes, none of them within its reaction window or explained
// by evidence, starts a change of its own: it returns why.
func (en *Engine) decide(e *Event, o *Object, w *cpid.Write, causes []cause) rootOf {
	// The change: the most recent change among the causes whose hop is
	// accepted; the cause: the latest write of that change, the one that
	// triggered this write.
	var best *cause
	var why explanation
	var late *cause // the most recent change's cause, when no hop is accepted
	for i := range causes {
		c := &causes[i]
		if c.ref.Change == "" {
			continue
		}
		if best != nil && !(c.ref.ChangeStart > best.ref.ChangeStart ||
			(c.ref.ChangeStart == best.ref.ChangeStart && c.ref.StageNS > best.ref.StageNS)) {
			continue
		}
		x := en.explain(e, o, w.Writer.Name, c.rule, hopOf(e, c.ref), c.ref.StageNS)
		if x.explain == cpid.ExplainUnexplained || x.start != 0 && !en.pending(e, c.ref, x.start) {
			// Past every window, or the process started again after the
			// change had settled: what the start did is decided below.
			if late == nil || c.ref.ChangeStart > late.ref.ChangeStart ||
				c.ref.ChangeStart == late.ref.ChangeStart && c.ref.StageNS > late.ref.StageNS {
				late = c
			}
			continue
		}
		best, why = c, x
	}
	if best == nil && late != nil && !w.Attempt {
		// Only evidence ends a change: a process that started again with
		// nothing of the change pending, a node's or a schedule's writer.
		// A long hop without it stays in its change, unexplained.
		start, rx, ok := en.restarted(e, late.ref.StageNS)
		switch {
		case ok && en.pending(e, late.ref, start):
			// The process (or a new leader) took up the change it had
			// pending when it stopped: the start says why it waited.
			best, why = late, rx
		case ok && en.epochs[epochKey(e, start)] != nil:
			// The process started again and took up interrupted work:
			// the write joins the change of that start.
			best = &cause{ref: en.epochs[epochKey(e, start)], rule: RuleRestart}
			if why = en.explain(e, o, w.Writer.Name, best.rule, hopOf(e, best.ref), best.ref.StageNS); why.explain == cpid.ExplainUnexplained {
				why = rx
			}
		case ok:
			// Its first such write starts the change; the hop from the
			// cause it waited for says why (leader-gap, restart).
			en.epoch = epochKey(e, start)
			w.CauseEventID, w.Rule, w.HopNS = late.ref.EventID, late.rule, hopOf(e, late.ref)
			w.Explain, w.ExplainDetail, w.Confidence = rx.explain, rx.detail, cpid.ConfidenceHeuristic
			return rootOf{trigger: cpid.TriggerControllerStart, detail: agentName(e.UserAgent) + " started again: " + string(rx.explain) + ": " + rx.detail}
		default:
			x := en.explain(e, o, w.Writer.Name, late.rule, hopOf(e, late.ref), late.ref.StageNS)
			if t := triggerOf(w.Writer.Name, o); t != cpid.TriggerUnknown {
				return rootOf{trigger: t, detail: fmt.Sprintf("%s %s after its cause (%s rule): %s",
					w.Writer.Name, time.Duration(hopOf(e, late.ref)).Round(time.Millisecond), late.rule, x.detail)}
			}
			best, why = late, x
			en.unexplainedHop(e, o, w.Writer.Name, hopOf(e, late.ref))
		}
	}
	if best == nil && late == nil && !w.Attempt && w.Writer.Name == gcWriter && len(causes) > 0 {
		// The garbage collector acted with nothing pending for the object
		// or its owners (an orphan's owner long gone): its own change.
		return rootOf{trigger: cpid.TriggerGC, detail: "the garbage collector wrote " + o.Key.String() +
			" with no change pending for it or its owners"}
	}
	if best == nil && late != nil {
		best = late // a failed attempt starts nothing: it stays with its cause, unexplained
		why = en.explain(e, o, w.Writer.Name, late.rule, hopOf(e, late.ref), late.ref.StageNS)
	}
	if best == nil && len(causes) > 0 {
		best = &causes[0]
		for i := range causes {
			if causes[i].ref.StageNS > best.ref.StageNS {
				best = &causes[i]
			}
		}
		why = en.explain(e, o, w.Writer.Name, best.rule, hopOf(e, best.ref), best.ref.StageNS)
	}
	var joined rootOf
	if best != nil {
		joined.changeStart = best.ref.ChangeStart
		w.ChangeID = best.ref.Change
		w.CauseEventID = best.ref.EventID
		w.Rule = best.rule
		w.HopNS = hopOf(e, best.ref)
		w.Explain, w.ExplainDetail = why.explain, why.detail
	}
	defer func() {
		if best != nil {
			w.Confidence = cpid.ConfidenceHeuristic
			if exactRules[w.Rule] && oneChange(causes, best.ref.Change) || w.CPIDOrigin == "annotation" {
				w.Confidence = cpid.ConfidenceExact
			}
		}
	}()

	prevCPID := ""
	if o.last != nil {
		prevCPID = o.last.CPID
	}

	// An instrumented writer put a new CPID on the object: take it as it is.
	if e.CPID != "" && e.CPID != prevCPID && !w.Attempt {
		w.CPID, w.CPIDOrigin = e.CPID, "annotation"
		if !en.has(e.CPID, cpid.OriginAnnotation) && (len(e.Ancestors) > 0 || !en.hasAny(e.CPID)) {
			src := en.Graph.Maximal(e.Ancestors)
			en.emit(e, cpid.Mergelog{CPID: e.CPID, Sources: src, TimeNS: e.StageNS, Service: w.Writer.Name, Origin: cpid.OriginAnnotation})
		}
		return joined
	}
	// As Algorithm 1 (and instrument.Tracer.Merge): causes without a CPID
	// are ignored, and when none has one the write gets none either: a
	// controller's write that nothing explains starts no change.
	set := make([]string, 0, len(causes)+1)
	if e.CPID != "" {
		set = append(set, e.CPID)
	}
	for _, c := range causes {
		if c.ref.CPID != "" {
			set = append(set, c.ref.CPID)
		}
	}
	maximal := en.Graph.Maximal(set)
	switch {
	case len(maximal) == 0:
		w.CPIDOrigin = "background"
	case len(maximal) == 1:
		w.CPID, w.CPIDOrigin = maximal[0], "inferred"
		if e.CPID == maximal[0] {
			w.CPIDOrigin = "annotation"
		}
	default:
		w.CPID, w.CPIDOrigin = inferredCPID(e), "inferred"
		if !w.Attempt {
			en.emit(e, cpid.Mergelog{CPID: w.CPID, Sources: maximal, TimeNS: e.StageNS, Service: w.Writer.Name, Origin: cpid.OriginInferred})
		}
	}
	return joined
}

// oneChange reports whether every cause that belongs to a change belongs to
// change: an exact rule's cause is exact only when no heuristic had to
// choose between changes.
func oneChange(causes []cause, change string) bool {
	for _, c := range causes {
		if c.ref.Change != "" && c.ref.Change != change {
			return false
		}
	}
	return true
}

func (en *Engine) emit(e *Event, m cpid.Mergelog) {
	if err := en.Graph.Add(m); err != nil {
		// Only corrupt input can close a cycle (CPIDs are random): say so.
		en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "merge-cycle", EventID: e.ID, Key: e.Key(),
			Detail: fmt.Sprintf("mergelog %v -> %s refused: %v", m.Sources, m.CPID, err)})
		return
	}
	en.recorded[m.CPID] |= originBit(m.Origin)
	en.Mergelogs = append(en.Mergelogs, cpid.Emitted{Mergelog: m, EventID: e.ID})
}

// learn updates what the engine knows of o from a successful write, and
// flags anomalies.
func (en *Engine) learn(o *Object, e *Event) {
	if e.UID != "" && e.Subresource == "" {
		o.UID = e.UID
		en.byUID[e.UID] = o.Key
	}
	if e.OwnerRefs != nil {
		o.OwnerRefs = e.OwnerRefs
	}
	readBody(o, e)
	if readsBody[e.Resource] && e.Verb != "delete" && e.Verb != "deletecollection" && (e.Subresource == "" || e.Subresource == "status") {
		n := en.Bodies[e.Resource]
		if n == nil {
			n = &[2]int{}
			en.Bodies[e.Resource] = n
		}
		if !e.HasObject() {
			n[1]++
		} else {
			n[0]++
		}
	}
	en.anomalies(o, e)
}

// number gives w its place among the writes of o. Writes come in receive
// order, which is nearly always the order of their resourceVersions and of
// their completion, so a write's place is usually after all earlier ones.
// When it is not (a slow request overtaken by a later one), the object is
// listed in Reorder and the store renumbers all its writes. The first
// resourceVersion that does not parse turns the object to time order: the
// earlier writes keep their places if they came in time order too (listed
// in Relabel: only their order_by changes), else the object is reordered.
func (en *Engine) number(o *Object, e *Event, w *cpid.Write) {
	rv, err := strconv.ParseInt(e.ResourceVersion, 10, 64)
	kt := ordKey{NS: e.StageNS, ID: e.ID}
	kr := ordKey{RV: rv, NS: e.StageNS, ID: e.ID}
	first := o.revs == 0
	inTime := first || o.maxTime.less(kt)
	reorder, relabel := false, false
	switch {
	case err != nil && !o.byTime:
		o.byTime = true
		reorder = !first && (o.unordered || !inTime)
		relabel = !first && !reorder
	case o.byTime:
		reorder = !inTime
	default:
		reorder = !first && !o.maxRV.less(kr)
	}
	if !inTime || reorder {
		// The numbering may differ from the arrival order from now on.
		o.unordered = true
	}
	if inTime {
		o.maxTime = kt
	}
	if err == nil && (first || o.maxRV.less(kr)) {
		o.maxRV = kr
	}
	o.revs++
	w.Seq, w.OrderBy = o.revs, "resourceVersion"
	if o.byTime {
		w.OrderBy = "time"
	}
	switch {
	case reorder:
		if en.Reorder == nil {
			en.Reorder = map[cpid.ObjectKey]bool{}
		}
		en.Reorder[o.Key] = true
	case relabel:
		if en.Relabel == nil {
			en.Relabel = map[cpid.ObjectKey]bool{}
		}
		en.Relabel[o.Key] = true
	}
}

// BadInput counts inputs a run could not read whole, and names the first.
type BadInput struct {
	N     int
	First string
}

// OrderRevisions orders the n writes of one object: by resourceVersion (the
// etcd revision) when every one parses as an integer, by apiserver time
// otherwise, ties by event ID. It returns the event IDs in order and
// "resourceVersion" or "time".
func OrderRevisions(n int, at func(i int) (eventID int64, rv string, stageNS int64)) ([]int64, string) {
	type row struct {
		id, rv, t int64
	}
	rows := make([]row, n)
	by := "resourceVersion"
	for i := range rows {
		id, rv, t := at(i)
		v, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			by = "time"
		}
		rows[i] = row{id, v, t}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if by == "resourceVersion" && a.rv != b.rv {
			return a.rv < b.rv
		}
		if a.t != b.t {
			return a.t < b.t
		}
		return a.id < b.id
	})
	ids := make([]int64, n)
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids, by
}

// setTrace returns the traceparent the root write e set on o, "" when it
// set none: a traced client started the change when its write carries a
// traceparent and creates the object, changes the object's traceparent, or
// comes with a fresh CPID (cpid-tui stamp writes both and drops a stale
// traceparent). A traceparent an earlier change left on the object does
// not make this one traced.
func setTrace(o *Object, e *Event) string {
	switch {
	case e.Traceparent == "":
		return ""
	case e.Verb == "create" && e.Subresource == "":
		return e.Traceparent
	case o.last == nil:
		return "" // what the object carried before is not in the logs
	case e.Traceparent != o.trace, e.CPID != "" && e.CPID != o.annCPID:
		return e.Traceparent
	}
	return ""
}
