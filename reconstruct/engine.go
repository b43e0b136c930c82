package reconstruct

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/google/uuid"
)

// Object is what the engine knows of one object: its identity, the fields
// the rules read, and its latest writes. It is saved as it is, as JSON,
// one row per object (MarshalState): every exported field is saved, under
// the names of state version 13; the unexported ones are caches.
type Object struct {
	Key       cpid.ObjectKey  `json:"Key"`
	UID       string          `json:"UID,omitempty"`
	OwnerRefs []cpid.OwnerRef `json:"OwnerRefs,omitempty"`
	NodeName  string          `json:"NodeName,omitempty"` // Pods: spec.nodeName
	// ServiceName, Targets and PrevTargets are for EndpointSlices and
	// Endpoints: the Service and the Pods listed now and before the write.
	ServiceName string           `json:"ServiceName,omitempty"`
	Targets     []cpid.ObjectKey `json:"Targets,omitempty"`
	PrevTargets []cpid.ObjectKey `json:"PrevTargets,omitempty"`

	// Last and Prev are the two latest successful writes, so that a write
	// received while another to the same object was in flight finds the one
	// it could have observed. SpecLast and SpecPrev are the same among the
	// writes that may have changed the spec (specChanged): what an owner's
	// controller creates or deletes dependents for.
	Last     *Ref `json:"Last,omitempty"`
	Prev     *Ref `json:"Prev,omitempty"`
	SpecLast *Ref `json:"SpecLast,omitempty"`
	SpecPrev *Ref `json:"SpecPrev,omitempty"`
	// SpecHash is the hash of the spec the latest update or create sent,
	// nil when it is not known.
	SpecHash *[20]byte `json:"SpecHash,omitempty"`
	// MinReady and Deadline are the spec's minReadySeconds and
	// progressDeadlineSeconds, as the latest create or update sent them.
	MinReady time.Duration `json:"MinReady,omitempty"`
	Deadline time.Duration `json:"Deadline,omitempty"`
	// UnschedNS is when the scheduler marked this Pod Unschedulable (0:
	// it is not), Unsched its message.
	UnschedNS int64  `json:"UnschedNS,omitempty"`
	Unsched   string `json:"Unsched,omitempty"`
	// LastRV is the highest resourceVersion a write stored, LastSource the
	// log of that write, LastReq the hash of the latest request body (to
	// spot repeats) and Conds each status condition's latest
	// lastTransitionTime: what the anomaly checks compare with.
	LastRV     int64            `json:"LastRV,omitempty"`
	LastSource string           `json:"LastSource,omitempty"`
	LastReq    [20]byte         `json:"LastReq,omitempty"`
	Conds      map[string]int64 `json:"Conds,omitempty"`

	// Revs numbers the object's writes (revisions and attempts) as they
	// come; ByTime is set once one resourceVersion does not parse; MaxRV
	// and MaxTime are the greatest ordering keys so far (see number).
	Revs    int    `json:"Revs,omitempty"`
	ByTime  bool   `json:"ByTime,omitempty"`
	MaxRV   ordKey `json:"MaxRV"`
	MaxTime ordKey `json:"MaxTime"`
	// Unordered: the writes' places may differ from their arrival order
	// (one came out of time order, or the object was reordered).
	Unordered bool `json:"Unordered,omitempty"`
	// Ready is a Node's Ready condition status ("True", "False",
	// "Unknown") after its latest write, "" before the first.
	Ready string `json:"Ready,omitempty"`
	// Failed holds, per writer, its latest failed write to the object that
	// it has not yet followed with a successful one: the next is a retry.
	Failed map[string]failure `json:"Failed,omitempty"`
	// Deleted: the latest successful write was a delete, by DeletedBy.
	Deleted   bool   `json:"Deleted,omitempty"`
	DeletedBy string `json:"DeletedBy,omitempty"`
	// Marked: the node lifecycle controller wrote this Node's status and
	// the audit log hides its conditions; its node agent has not written
	// since.
	Marked bool `json:"Marked,omitempty"`
	// Agent is a Node's latest status write by its node agent (a kubelet,
	// KWOK): its last heartbeat the audit log shows.
	Agent *Ref `json:"Agent,omitempty"`
	// TolSummary is what tolerationFor makes of a Pod's tolerations
	// (tolerated): the saved state keeps the summary, not the spec.
	TolSummary string `json:"Tolerations,omitempty"`
	// Trace and AnnCPID are the traceparent and the CPID annotation the
	// object carried after its latest successful write.
	Trace   string `json:"Trace,omitempty"`
	AnnCPID string `json:"AnnCPID,omitempty"`

	// tolerations are a Pod's spec.tolerations as its latest write with a
	// body sent them; TolSummary is made of them once tolDone.
	tolerations json.RawMessage
	tolDone     bool
	// used is the tick of the engine's latest write that met the object
	// (State.evict spills those met least recently).
	used uint64
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
		o.TolSummary, o.tolDone = tolerationFor(o.tolerations), true
	}
	return o.TolSummary
}

// observed returns the latest write of o that a write received at t could
// have reacted to. Watchers see a write when etcd commits it, which is
// before the apiserver's ResponseComplete stage time (a Service's delete
// completes after its ClusterIP is released, its Endpoints deleted
// meanwhile); so the test is that the write was received before t. Rules
// that pick among several objects by time alone (Rule.Timed) take only
// writes that had completed by t (completed).
func (o *Object) observed(t int64) *Ref { return observed(o.Last, o.Prev, t) }

// completed is observed among the writes that had completed by t.
func (o *Object) completed(t int64) *Ref {
	switch {
	case o.Last != nil && o.Last.StageNS <= t:
		return o.Last
	case o.Prev != nil && o.Prev.StageNS <= t:
		return o.Prev
	}
	return nil
}

// observedSpec is observed among the writes that could change the object's
// spec; the latest write when none is known.
func (o *Object) observedSpec(t int64) *Ref {
	if o.SpecLast == nil {
		return o.observed(t)
	}
	return observed(o.SpecLast, o.SpecPrev, t)
}

// specChanged reports whether the write e may have changed o's spec, and
// remembers the spec it sent: not when it was a metadata-only patch, or an
// update whose spec is the one o had.
func (o *Object) specChanged(e *Event) bool {
	if e.metaOnly {
		return false
	}
	same := e.hasSpec && o.SpecHash != nil && e.specHash == *o.SpecHash
	if e.Subresource == "" || e.Subresource == "scale" {
		// A spec written without being read (a patch, a scale) is
		// unknown until the next update sends it whole.
		switch {
		case !e.hasSpec:
			o.SpecHash = nil
		case o.SpecHash == nil:
			h := e.specHash
			o.SpecHash = &h
		default:
			*o.SpecHash = e.specHash
		}
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

// State is the engine's view of the cluster: objects by key and by UID,
// and what it remembers beside them.
type State struct {
	objects map[cpid.ObjectKey]*Object
	byUID   map[string]cpid.ObjectKey
	mem     memory
	// saved reads the objects an earlier run saved, as they are met (a
	// restored engine's; nil for one that starts empty); absent and noUID
	// are the keys and uids it did not find, loadErr its first error.
	saved   *Saved
	absent  map[cpid.ObjectKey]bool
	noUID   map[string]bool
	loadErr error
	// spill holds the objects evicted from memory, once MaxObjects were
	// held (evict); tick counts the writes processed, to tell the objects
	// met lately. spillErr is why the engine stopped evicting: it could
	// not write its spill.
	spill      *spill
	tick       uint64
	maxObjects int
	spillDir   string
	spillErr   error
	// evicted counts the objects evict moved out, spilledSaved those
	// MarshalState saved from the spill.
	evicted, spilledSaved int
}

// prefixUID keys, in the spill, the key of an evicted object by its uid.
const prefixUID = "#uid/"

// evict moves the half of the objects met least recently out of memory,
// into the spill, once the engine holds more than maxObjects, so that a
// run's memory follows the objects it still uses, not every object it
// met. An evicted object is read back when a write meets it again, as an
// incremental run reads a saved one (same encoding, MarshalState's); those
// still spilled at the end are saved with the others. When the spill cannot
// be written, the objects stay in memory and the engine evicts no more.
//
// The lazy parts of memory (an owner's latest dependents, a change's
// latest write...) are evicted whole once one holds more than maxObjects
// entries.
func (s *State) evict() {
	if s.maxObjects <= 0 || s.spillErr != nil {
		return
	}
	if len(s.objects) > s.maxObjects && s.spilling() {
		s.evictObjects()
	}
	m := &s.mem
	for _, l := range [...]lazyPart{&m.Children, &m.LatestPods, &m.ChangeLast} {
		if l.len() > s.maxObjects && s.spilling() {
			if err := l.evict(s.spill); err != nil {
				s.spillErr = err
			}
		}
	}
}

// spilling makes the spill, once: false when it cannot.
func (s *State) spilling() bool {
	if s.spill == nil && s.spillErr == nil {
		s.spill, s.spillErr = newSpill(s.spillDir)
	}
	return s.spillErr == nil
}

// evictObjects evicts the half of the objects met least recently (evict).
func (s *State) evictObjects() {
	ticks := make([]uint64, 0, len(s.objects))
	for _, o := range s.objects {
		ticks = append(ticks, o.used)
	}
	slices.Sort(ticks)
	cut := ticks[len(ticks)/2]
	type evicted struct {
		key cpid.ObjectKey
		uid bool // its uid's entry moves too
	}
	var gone []evicted
	for k, o := range s.objects {
		if o.used >= cut {
			continue
		}
		o.tolerated() // the summary is saved, not the spec
		b, err := json.Marshal(o)
		uid := o.UID != "" && s.byUID[o.UID] == k
		var kb []byte
		if err == nil && uid {
			kb, err = json.Marshal(k)
		}
		if err != nil {
			s.spill.discard() // all of them stay in memory
			s.spillErr = fmt.Errorf("object %s: %w", k, err)
			return
		}
		s.spill.put(k.String(), o.UID, b)
		if uid {
			s.spill.put(prefixUID+o.UID, "", kb)
		}
		gone = append(gone, evicted{k, uid})
	}
	if err := s.spill.flush(); err != nil {
		s.spillErr = err
		return
	}
	for _, g := range gone {
		if g.uid {
			delete(s.byUID, s.objects[g.key].UID)
		}
		delete(s.objects, g.key)
	}
	s.evicted += len(gone)
	if len(gone) < len(ticks)/4 {
		// Most objects were met at once: hold more before the next try.
		s.maxObjects = 2 * len(s.objects)
	}
}

// release drops what the engine holds of the cluster once its state is
// saved (MarshalState): a run's end (renumbering, summaries) has that
// memory, a third of a full rebuild's at 10M events.
func (en *Engine) release() {
	en.objects, en.byUID, en.Graph, en.mem, en.graphed = nil, nil, nil, memory{}, nil
	en.closeSpill()
}

// closeSpill removes the spill, if the engine evicted objects.
func (s *State) closeSpill() {
	if s.spill != nil {
		s.spill.Close()
		s.spill = nil
	}
}

// unspilled drops the evicted entry of key, if there is one: the engine
// sets it anew.
func (s *State) unspilled(key string) {
	if _, _, err := s.spill.take(key); err != nil && s.loadErr == nil {
		s.loadErr = fmt.Errorf("read back an evicted object: %s: %w", key, err)
	}
}

// unspill reads back an evicted entry of the spill into v: found is false
// when key is not spilled, or cannot be read (then loadErr says why).
func unspill[V any](s *State, key string) (v V, found bool) {
	if s.spill == nil || s.loadErr != nil {
		return v, false
	}
	b, found, err := s.spill.take(key)
	if err == nil && found {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		s.loadErr = fmt.Errorf("read back an evicted object: %s: %w", key, err)
		return v, false
	}
	return v, found
}

// memory is what the engine remembers beside its objects. Its maps are
// saved as they are in the state's head (MarshalState: every field, under
// the names of state version 13), so that a field added here is saved
// with nothing else to change; those that grow with the cluster are lazy,
// saved an entry a row and read back as they are needed.
type memory struct {
	// Children holds, per owner UID, the two dependents written last (the
	// latest first): what an owner's controller reacts to when it writes
	// the owner's status or replaces a dependent.
	Children lazy[[2]cpid.ObjectKey] `json:"-"`
	// LatestPods holds, per namespace, the Pod written last: what a
	// PodDisruptionBudget's status counts.
	LatestPods lazy[cpid.ObjectKey] `json:"-"`
	// Epochs holds the first write of each start of a process that
	// continued interrupted work (the root of its controller-start
	// change), by epochKey.
	Epochs map[string]*Ref `json:"Epochs,omitempty"`
	// Programs holds when each program (a user agent's) wrote, and
	// ChangeLast each change's latest write: whether a change was still
	// going when its controller stopped (Engine.pending).
	Programs   map[string]*activity `json:"Programs,omitempty"`
	ChangeLast lazy[int64]          `json:"-"`
}

// The prefixes of the lazy parts of memory among the saved objects' keys:
// an object's key begins with its resource, never with '#'.
const (
	prefixChildren   = "#children/"
	prefixLatestPods = "#latest-pod/"
	prefixChangeLast = "#change-last/"
)

func newMemory() memory {
	return memory{Children: newLazy[[2]cpid.ObjectKey](prefixChildren), LatestPods: newLazy[cpid.ObjectKey](prefixLatestPods),
		Epochs: map[string]*Ref{}, Programs: map[string]*activity{}, ChangeLast: newLazy[int64](prefixChangeLast)}
}

// lazyPart is a lazy map of memory, of whatever values.
type lazyPart interface {
	attach(*State)
	restore(*State)
	save(func(cpid.ObjectState) error) error
	len() int
	evict(*spill) error
}

// lazies are the lazy parts of m, to restore and to save.
func (m *memory) lazies() []lazyPart { return []lazyPart{&m.Children, &m.LatestPods, &m.ChangeLast} }

// LatestDependents returns the dependents of the owner with that UID
// written last, the latest first, none of them skip.
func (s *State) LatestDependents(uid string, skip cpid.ObjectKey) []cpid.ObjectKey {
	var out []cpid.ObjectKey
	c, _ := s.mem.Children.Get(uid)
	for _, k := range c {
		if k != (cpid.ObjectKey{}) && k != skip {
			out = append(out, k)
		}
	}
	return out
}

// wrote records a successful write of o among its owners' dependents.
func (s *State) wrote(o *Object) {
	if o.Key.Resource == "pods" && o.Key.Group == "" && o.Key.Name != "" {
		s.mem.LatestPods.Set(o.Key.Namespace, o.Key)
	}
	for _, r := range o.OwnerRefs {
		if r.UID == "" {
			continue
		}
		c, _ := s.mem.Children.Get(r.UID)
		if c[0] != o.Key {
			c[0], c[1] = o.Key, c[0]
		}
		s.mem.Children.Set(r.UID, c)
	}
}

// ByUID finds an object by metadata.uid.
func (s *State) ByUID(uid string) (cpid.ObjectKey, bool) {
	if k, ok := s.byUID[uid]; ok {
		return k, true
	}
	if k, ok := unspill[cpid.ObjectKey](s, prefixUID+uid); ok {
		s.byUID[uid] = k
		return k, true
	}
	if s.saved == nil || uid == "" || s.noUID[uid] {
		return cpid.ObjectKey{}, false
	}
	o := s.savedObject(s.saved.ByUID, uid)
	if o == nil {
		if s.loadErr == nil {
			s.noUID[uid] = true
		}
		return cpid.ObjectKey{}, false
	}
	s.byUID[uid] = o.Key
	return o.Key, true
}

// Object returns the object of key, nil when the engine has not seen it.
func (s *State) Object(k cpid.ObjectKey) *Object {
	if o := s.objects[k]; o != nil {
		o.used = s.tick
		return o
	}
	if o, ok := unspill[*Object](s, k.String()); ok {
		return s.met(o)
	}
	if s.saved == nil || s.absent[k] {
		return nil
	}
	o := s.savedObject(s.saved.Object, k.String())
	if o == nil {
		if s.loadErr == nil {
			s.absent[k] = true
		}
	}
	return o
}

// Engine turns writes, fed in apiserver order, into Writes, Mergelogs,
// Changes and Anomalies. It is not safe for concurrent use.
type Engine struct {
	State
	Graph *Graph
	// graphed holds the CPIDs whose stored mergelogs, and their
	// ancestors', a restored engine has loaded (ensure).
	graphed map[string]bool
	// The tables the engine works by; nil stands for the package's
	// (Rules, DefaultWindows, Explainers, Ignored). Set them before the
	// first Process.
	//
	// Rules find the causes of a write, Windows are the reaction windows
	// hops are explained by, Explainers say why a hop waited, in order,
	// and Ignored are the resources (and resource/subresource) whose
	// writes are not propagation.
	Rules      []Rule
	Windows    []Window
	Explainers []Explainer
	Ignored    map[string]bool
	bandCache  map[[3]string][]Window
	hop        Hop // explain's
	// IgnoreCPIDs drops the CPIDs writes carry (Options.IgnoreCPIDs).
	IgnoreCPIDs bool
	// Evidence reads what explains a controller's silence; epoch is the
	// start the write being processed opens (memory.Epochs).
	Evidence  Evidence
	Throttles Throttles // client-side throttling from the controllers' logs
	// NodeLeases reads the writes of a Node's Lease in NodeLeaseNamespace
	// (its heartbeats) after afterNS and at most atNS; nil reads none.
	NodeLeases  func(node string, afterNS, atNS int64) ([]cpid.Evidence, error)
	thr         throttleCache
	evidenceErr error
	evCache     map[string]*evCache
	epoch       string
	// Bodies counts, per resource whose objects the rules read, the
	// successful creates, updates and patches with the object after the
	// write in the audit log [0] and without it [1] (Metadata level, or
	// truncated): what the data cannot tell.
	Bodies map[string]*[2]int

	// Unexplained counts the writes kept in their changes after a hop past
	// every window with nothing in the logs to say why, and names the
	// longest (the run's data warning).
	Unexplained UnexplainedHops
	// BadOwnerRefs counts the writes whose owner references were not
	// valid JSON (the owner rule could not use them), and names the first
	// (the run's data warning; set by Run once its scan ends).
	BadOwnerRefs BadInput
	// BadAncestors counts the writes whose stored CPID ancestors were not
	// valid JSON, and names the first (set by Run, as BadOwnerRefs).
	BadAncestors BadInput

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
	en := &Engine{
		State:  State{objects: map[cpid.ObjectKey]*Object{}, byUID: map[string]cpid.ObjectKey{}, mem: newMemory()},
		Graph:  NewGraph(),
		Bodies: map[string]*[2]int{},
	}
	for _, l := range en.mem.lazies() {
		l.attach(&en.State)
	}
	return en
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

// record notes m's origin among those that have a mergelog for its CPID
// (a note of its node: the graph holds m, Graph.Add).
func (en *Engine) record(m cpid.Mergelog) { en.Graph.note(m.CPID, originBit(m.Origin)) }

// has reports whether a mergelog of that origin was recorded for cpid; a
// CPID known only as the source of another's mergelog has none.
func (en *Engine) has(cpid string, o cpid.Origin) bool {
	en.ensure(cpid)
	return en.Graph.notes(cpid)&originBit(o) != 0
}

// hasAny reports whether any mergelog was recorded for cpid.
func (en *Engine) hasAny(cpid string) bool {
	en.ensure(cpid)
	return en.Graph.notes(cpid) != 0
}

// maximal is Graph.Maximal of set, with what was stored of its CPIDs.
func (en *Engine) maximal(set []string) []string {
	en.ensure(set...)
	return en.Graph.Maximal(set)
}

// AddMergelog adds a mergelog read from a controller's log (origin log) or
// elsewhere to the graph and the output.
func (en *Engine) AddMergelog(m cpid.Mergelog) error { return en.add(m, 0) }

// add puts m in the graph and the output, with the write that showed it
// (0: none), marked Again when a mergelog of its CPID and origin was
// output before.
func (en *Engine) add(m cpid.Mergelog, eventID int64) error {
	en.ensureMergelog(m)
	if err := en.Graph.Add(m); err != nil {
		return err
	}
	again := en.has(m.CPID, m.Origin)
	en.record(m)
	en.Mergelogs = append(en.Mergelogs, cpid.Emitted{Mergelog: m, EventID: eventID, Again: again})
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

// rules returns the engine's rules (Engine.Rules, else Rules).
func (en *Engine) rules() []Rule {
	if en.Rules != nil {
		return en.Rules
	}
	return Rules
}

// ignored returns the resources (and resource/subresource) whose writes
// the engine leaves out: Engine.Ignored, else Ignored.
func (en *Engine) ignored() map[string]bool {
	if en.Ignored != nil {
		return en.Ignored
	}
	return Ignored
}

// ignores reports whether e writes a resource (or subresource) the engine
// leaves out.
func (en *Engine) ignores(e *Event) bool {
	ig := en.ignored()
	return ig[e.Resource] || e.Subresource != "" && ig[e.Resource+"/"+e.Subresource]
}

// Process reconstructs one write. Writes must come in the order the
// apiserver received them (then ID); ignored resources and non-writes are
// skipped.
func (en *Engine) Process(e *Event) {
	if !cpid.IsWrite(e.Verb) || en.ignores(e) {
		return
	}
	if en.IgnoreCPIDs {
		e.CPID, e.Ancestors = "", nil
	}
	en.tick++
	en.evict()
	key := e.Key()
	o := en.Object(key)
	if o == nil {
		key.Name = strings.Clone(key.Name) // not the scanned row's texts
		o = &Object{Key: key, used: en.tick}
		en.objects[key] = o
	}
	w := cpid.Write{EventID: e.ID, StageNS: e.StageNS, ResourceVersion: e.ResourceVersion, Key: key, Writer: e.Writer(), Attempt: e.Failed()}
	en.active(agentName(e.UserAgent), e.ReceivedNS)
	en.number(o, e, &w)
	wasReady := o.Ready
	if !w.Attempt {
		en.learn(o, e)
	}

	root := en.trigger(moment{at: atWrite, wasReady: wasReady}, e, o, &w)
	if root.trigger == "" {
		root = en.decide(e, o, &w, en.causes(e, o))
	}
	if root.trigger != "" {
		w.CPIDOrigin = "root"
		// The root's CPID is the one its writer stamped: a CPID the object
		// carried already belongs to the change that put it there.
		w.CPID = e.CPID
		if w.CPID == "" || o.Last != nil && (o.Last.CPID == e.CPID || o.AnnCPID == e.CPID) {
			w.CPID = e.AuditID
		}
		w.ChangeID = w.CPID
	}

	if w.Attempt {
		if o.Failed == nil {
			o.Failed = map[string]failure{}
		}
		o.Failed[w.Writer.Name] = failure{Writer: w.Writer.Name, Code: e.Code, StageNS: e.StageNS}
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
	o.Prev, o.Last = o.Last, ref
	if e.hashRequest(); o.specChanged(e) {
		o.SpecPrev, o.SpecLast = o.SpecLast, ref
	}
	if e.minReady > 0 || e.hasSpec {
		o.MinReady = e.minReady
	}
	if e.deadline > 0 || e.hasSpec {
		o.Deadline = e.deadline
	}
	o.Trace, o.AnnCPID = e.Traceparent, e.CPID
	if w.ChangeID != "" {
		last, _ := en.mem.ChangeLast.Get(w.ChangeID)
		en.mem.ChangeLast.Set(w.ChangeID, max(last, e.StageNS))
	}
	delete(o.Failed, w.Writer.Name) // retried: the failure is explained
	if en.epoch != "" {
		en.mem.Epochs[en.epoch] = ref
		en.epoch = ""
	}
	// An eviction deletes the Pod (gracefully, once its
	// PodDisruptionBudget allows it): its controller replaces it.
	if o.Key.Resource == "nodes" && o.Key.Group == "" && e.Subresource == "status" && nodeAgent(w.Writer.Name) {
		o.Agent = ref
	}
	o.Deleted, o.DeletedBy = e.Verb == "delete" && e.Subresource == "" || e.Verb == "create" && e.Subresource == "eviction", ""
	if o.Deleted {
		o.DeletedBy = w.Writer.Name
	}
	en.wrote(o)
	en.Writes = append(en.Writes, w)
}

// lastHeartbeat gives a Node's loss, a root written by the node lifecycle
// controller, the node agent's last status write before it as its cause:
// the story starts where the heartbeats stopped (Lease renewals, which
// are not read, may have gone on a little longer).
func (en *Engine) lastHeartbeat(e *Event, o *Object, w *cpid.Write) {
	if w.Writer.Name != NodeController || o.Agent == nil || o.Agent.StageNS > e.ReceivedNS {
		return
	}
	d := time.Duration(e.StageNS - o.Agent.StageNS)
	w.CauseEventID, w.Rule, w.HopNS = o.Agent.EventID, "self", int64(d)
	w.Explain, w.Confidence = cpid.ExplainNodeGrace, cpid.ConfidenceHeuristic
	w.ExplainDetail = fmt.Sprintf("its node agent last wrote the Node's status %s before, at %s; %s", d.Round(time.Millisecond),
		clockOf(o.Agent.StageNS), bandDetail(Window{Explain: cpid.ExplainNodeGrace}, d))
	if en.NodeLeases == nil {
		return
	}
	evs, err := en.NodeLeases(o.Key.Name, o.Agent.StageNS, e.ReceivedNS)
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
			clockOf(o.Agent.StageNS), bandDetail(Window{Explain: cpid.ExplainNodeGrace}, q))
	}
}

type cause struct {
	ref  *Ref
	rule string
	// exact: the rule is Exact (the write names the cause's object).
	exact bool
}

// causes applies the rules: the latest write of every object w reacted to
// that completed before w was received.
func (en *Engine) causes(e *Event, o *Object) []cause {
	var out []cause
	seen := map[int64]bool{}
	rules := en.rules()
	for i := range rules {
		rule := &rules[i]
		for _, k := range rule.Causes(e, o, &en.State) {
			c := en.Object(k)
			if c == nil {
				continue
			}
			r := c.observed(e.ReceivedNS)
			if rule.Timed {
				r = c.completed(e.ReceivedNS)
			}
			if rule.Spec && e.Subresource == "" && (e.Verb == "create" || e.Verb == "delete") {
				r = c.observedSpec(e.ReceivedNS)
			}
			// A deletecollection of the object's resource in its namespace
			// (the namespace controller emptying a namespace) stands for
			// the delete of every object it held: the audit log has one
			// event for the collection, none for each object.
			if coll := en.Object(collectionOf(k)); coll != nil && k.Name != "" && !(e.Verb == "create" && e.Subresource == "" && k == o.Key) {
				if cr := coll.observed(e.ReceivedNS); cr != nil && (r == nil || cr.ReceivedNS > r.StageNS) {
					r = cr
				}
			}
			if r == nil || seen[r.EventID] || r.EventID == e.ID {
				continue
			}
			seen[r.EventID] = true
			out = append(out, cause{ref: r, rule: rule.Name, exact: rule.Exact})
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
	var why Explanation
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
		if x.Explain == cpid.ExplainUnexplained || x.Start != 0 && !en.pending(e, c.ref, x.Start) {
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
		case ok && en.mem.Epochs[epochKey(e, start)] != nil:
			// The process started again and took up interrupted work:
			// the write joins the change of that start.
			best = &cause{ref: en.mem.Epochs[epochKey(e, start)], rule: RuleRestart}
			if why = en.explain(e, o, w.Writer.Name, best.rule, hopOf(e, best.ref), best.ref.StageNS); why.Explain == cpid.ExplainUnexplained {
				why = rx
			}
		case ok:
			// Its first such write starts the change.
			return en.trigger(moment{at: atLate, late: late, restarted: true, start: start, why: rx}, e, o, w)
		default:
			x := en.explain(e, o, w.Writer.Name, late.rule, hopOf(e, late.ref), late.ref.StageNS)
			if r := en.trigger(moment{at: atLate, late: late, why: x}, e, o, w); r.trigger != "" {
				return r
			}
			best, why = late, x
			en.unexplainedHop(e, o, w.Writer.Name, hopOf(e, late.ref))
		}
	}
	if best == nil && late == nil && !w.Attempt && len(causes) > 0 {
		if r := en.trigger(moment{at: atIdle}, e, o, w); r.trigger != "" {
			return r
		}
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
		w.Explain, w.ExplainDetail = why.Explain, why.Detail
	}
	defer func() {
		if best != nil {
			w.Confidence = cpid.ConfidenceHeuristic
			if best.exact && oneChange(causes, best.ref.Change) || w.CPIDOrigin == "annotation" {
				w.Confidence = cpid.ConfidenceExact
			}
		}
	}()

	prevCPID := ""
	if o.Last != nil {
		prevCPID = o.Last.CPID
	}

	// An instrumented writer put a new CPID on the object: take it as it is.
	if e.CPID != "" && e.CPID != prevCPID && !w.Attempt {
		w.CPID, w.CPIDOrigin = e.CPID, "annotation"
		if !en.has(e.CPID, cpid.OriginAnnotation) && (len(e.Ancestors) > 0 || !en.hasAny(e.CPID)) {
			src := en.maximal(e.Ancestors)
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
	maximal := en.maximal(set)
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
	if err := en.add(m, e.ID); err != nil {
		// Only corrupt input can close a cycle (CPIDs are random): say so.
		en.Anomalies = append(en.Anomalies, cpid.Anomaly{Kind: "merge-cycle", EventID: e.ID, Key: e.Key(),
			Detail: fmt.Sprintf("mergelog %v -> %s refused: %v", m.Sources, m.CPID, err)})
	}
}

// learn updates what the engine knows of o from a successful write, and
// flags anomalies.
func (en *Engine) learn(o *Object, e *Event) {
	if e.UID != "" && e.Subresource == "" {
		if o.UID != e.UID {
			o.UID = strings.Clone(e.UID) // not the scanned row's text
		}
		en.byUID[o.UID] = o.Key
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
	first := o.Revs == 0
	inTime := first || o.MaxTime.less(kt)
	reorder, relabel := false, false
	switch {
	case err != nil && !o.ByTime:
		o.ByTime = true
		reorder = !first && (o.Unordered || !inTime)
		relabel = !first && !reorder
	case o.ByTime:
		reorder = !inTime
	default:
		reorder = !first && !o.MaxRV.less(kr)
	}
	if !inTime || reorder {
		// The numbering may differ from the arrival order from now on.
		o.Unordered = true
	}
	if inTime {
		o.MaxTime = kt
	}
	if err == nil && (first || o.MaxRV.less(kr)) {
		o.MaxRV = kr
	}
	o.Revs++
	w.Seq, w.OrderBy = o.Revs, "resourceVersion"
	if o.ByTime {
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

// add counts w when err says what of it could not be read.
func (b *BadInput) add(w *cpid.WriteEvent, err error) {
	if err == nil {
		return
	}
	if b.N++; b.N == 1 {
		b.First = fmt.Sprintf("event %d, %s %s %s/%s: %v", w.ID, w.Verb, w.Resource, w.Namespace, w.Name, err)
	}
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
	case o.Last == nil:
		return "" // what the object carried before is not in the logs
	case e.Traceparent != o.Trace, e.CPID != "" && e.CPID != o.AnnCPID:
		return e.Traceparent
	}
	return ""
}
