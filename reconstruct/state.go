package reconstruct

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/klauspost/compress/zstd"
)

// stateVersion changes whenever the saved form of the engine changes; a
// saved state of another version is not restored (the caller rebuilds).
const stateVersion = 12

type savedObject struct {
	Key         cpid.ObjectKey
	UID         string           `json:",omitempty"`
	OwnerRefs   []cpid.OwnerRef  `json:",omitempty"`
	NodeName    string           `json:",omitempty"`
	ServiceName string           `json:",omitempty"`
	Targets     []cpid.ObjectKey `json:",omitempty"`
	PrevTargets []cpid.ObjectKey `json:",omitempty"`
	Last, Prev  *Ref             `json:",omitempty"`
	SpecLast    *Ref             `json:",omitempty"`
	SpecPrev    *Ref             `json:",omitempty"`
	SpecHash    *[20]byte        `json:",omitempty"`
	MinReady    time.Duration    `json:",omitempty"`
	Deadline    time.Duration    `json:",omitempty"`
	UnschedNS   int64            `json:",omitempty"`
	Unsched     string           `json:",omitempty"`
	LastRV      int64            `json:",omitempty"`
	LastSource  string           `json:",omitempty"`
	LastReq     [20]byte         `json:",omitempty"`
	Conds       map[string]int64 `json:",omitempty"`
	Revs        int              `json:",omitempty"`
	ByTime      bool             `json:",omitempty"`
	MaxRV       ordKey
	MaxTime     ordKey
	Unordered   bool               `json:",omitempty"`
	Ready       string             `json:",omitempty"`
	Failed      map[string]failure `json:",omitempty"`
	Deleted     bool               `json:",omitempty"`
	DeletedBy   string             `json:",omitempty"`
	Marked      bool               `json:",omitempty"`
	Agent       *Ref               `json:",omitempty"`
	Tolerations string             `json:",omitempty"` // Object.tolerated
	Trace       string             `json:",omitempty"`
	AnnCPID     string             `json:",omitempty"`
}

type savedState struct {
	Version int
	// Objects follow the state, one JSON line each (MarshalState).
	Children map[string][2]cpid.ObjectKey `json:",omitempty"`
	// LatestPods is State.latestPod.
	LatestPods map[string]cpid.ObjectKey `json:",omitempty"`
	Epochs     map[string]*Ref           `json:",omitempty"`
	// Programs and ChangeLast tell whether a change was pending when its
	// controller stopped (Engine.pending); changes whose last write is
	// older than keepChangeLast before the newest are left out.
	Programs map[string]*activity `json:",omitempty"`
	// IgnoreCPIDs is the setting of the run that saved the state.
	IgnoreCPIDs bool             `json:",omitempty"`
	ChangeLast  map[string]int64 `json:",omitempty"`
}

// zstdMagic starts every zstd frame, and so a saved state (MarshalState).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// keepChangeLast is how long a change's last write is kept in the saved
// state: a process silent for longer has nothing pending.
const keepChangeLast = 24 * time.Hour

// MarshalState saves what the engine knows of objects, so that a later run
// can go on where this one stopped. The graph is not included: it is
// rebuilt from the stored mergelogs with RestoreMergelog.
//
// The saved form is zstd-compressed JSON lines: the state without its
// objects, then one line per object, sorted by key so that the same state
// always saves to the same bytes. Objects are encoded one at a time, so a
// run never holds the whole state twice (on 1M synthetic events, the
// state's JSON was 22 MB, 53 MB of buffers to marshal at once).
func (en *Engine) MarshalState() ([]byte, error) {
	s := savedState{Version: stateVersion, Children: en.children,
		Epochs: en.epochs, LatestPods: en.latestPod, Programs: en.programs, ChangeLast: map[string]int64{}, IgnoreCPIDs: en.IgnoreCPIDs}
	var newest int64
	for _, ns := range en.changeLast {
		newest = max(newest, ns)
	}
	for c, ns := range en.changeLast {
		if ns >= newest-int64(keepChangeLast) {
			s.ChangeLast[c] = ns
		}
	}
	objs := make([]*Object, 0, len(en.objects))
	keys := make([]string, 0, len(en.objects))
	for _, o := range en.objects {
		objs, keys = append(objs, o), append(keys, o.Key.String())
	}
	sort.Sort(byKey{objs, keys})
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(zw)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := enc.Encode(savedObject{Key: o.Key, UID: o.UID, OwnerRefs: o.OwnerRefs, NodeName: o.NodeName,
			ServiceName: o.ServiceName, Targets: o.Targets, PrevTargets: o.PrevTargets, Last: o.last, Prev: o.prev,
			SpecLast: o.specLast, SpecPrev: o.specPrev, SpecHash: specHashOf(o),
			MinReady: o.minReady, Deadline: o.deadline, UnschedNS: o.unschedNS, Unsched: o.unsched,
			LastRV: o.lastRV, LastSource: o.lastSource, LastReq: o.lastReq, Conds: o.conds,
			Revs: o.revs, ByTime: o.byTime, MaxRV: o.maxRV, MaxTime: o.maxTime, Unordered: o.unordered,
			Ready: o.ready, Failed: o.failed, Deleted: o.deleted, DeletedBy: o.deletedBy, Marked: o.marked, Agent: o.agent,
			Tolerations: o.tolerated(), Trace: o.trace, AnnCPID: o.annCPID}); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// byKey sorts objects by their keys' strings, computed once.
type byKey struct {
	objs []*Object
	keys []string
}

func (b byKey) Len() int           { return len(b.objs) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.objs[i], b.objs[j] = b.objs[j], b.objs[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}

// RestoreState loads a state saved by MarshalState into a new engine.
func (en *Engine) RestoreState(b []byte) error {
	var s savedState
	if !bytes.HasPrefix(b, zstdMagic) {
		// A state saved before version 12: plain JSON, restored only to
		// say which version it is.
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("restore reconstruct state: %w", err)
		}
		return fmt.Errorf("restore reconstruct state: version %d, want %d", s.Version, stateVersion)
	}
	zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("restore reconstruct state: %w", err)
	}
	defer zr.Close()
	dec := json.NewDecoder(zr)
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("restore reconstruct state: %w", err)
	}
	if s.Version != stateVersion {
		return fmt.Errorf("restore reconstruct state: version %d, want %d", s.Version, stateVersion)
	}
	if s.IgnoreCPIDs != en.IgnoreCPIDs {
		return fmt.Errorf("the last run was made with --ignore-cpids=%t", s.IgnoreCPIDs)
	}
	for {
		var so savedObject
		if err := dec.Decode(&so); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("restore reconstruct state: object %d: %w", len(en.objects)+1, err)
		}
		o := &Object{Key: so.Key, UID: so.UID, OwnerRefs: so.OwnerRefs, NodeName: so.NodeName, ServiceName: so.ServiceName,
			Targets: so.Targets, PrevTargets: so.PrevTargets, last: so.Last, prev: so.Prev, specLast: so.SpecLast, specPrev: so.SpecPrev,
			lastRV: so.LastRV, lastSource: so.LastSource,
			lastReq: so.LastReq, conds: so.Conds, revs: so.Revs, byTime: so.ByTime, maxRV: so.MaxRV, maxTime: so.MaxTime, unordered: so.Unordered,
			ready: so.Ready, failed: so.Failed, deleted: so.Deleted, deletedBy: so.DeletedBy, marked: so.Marked, agent: so.Agent, tolSummary: so.Tolerations, tolDone: true, trace: so.Trace, annCPID: so.AnnCPID}
		o.minReady, o.deadline, o.unschedNS, o.unsched = so.MinReady, so.Deadline, so.UnschedNS, so.Unsched
		if so.SpecHash != nil {
			o.specHash, o.hasSpec = *so.SpecHash, true
		}
		en.objects[o.Key] = o
		if o.UID != "" {
			en.byUID[o.UID] = o.Key
		}
	}
	for uid, c := range s.Children {
		en.children[uid] = c
	}
	for ns, k := range s.LatestPods {
		en.latestPod[ns] = k
	}
	for k, r := range s.Epochs {
		en.epochs[k] = r
	}
	for k, a := range s.Programs {
		en.programs[k] = a
	}
	for k, ns := range s.ChangeLast {
		en.changeLast[k] = ns
	}
	return nil
}

// RestoreMergelog adds a stored mergelog to the graph without emitting it again.
func (en *Engine) RestoreMergelog(m cpid.Mergelog) error {
	if err := en.Graph.Add(m); err != nil {
		return err
	}
	en.recorded[m.CPID] |= originBit(m.Origin)
	return nil
}

func specHashOf(o *Object) *[20]byte {
	if !o.hasSpec {
		return nil
	}
	h := o.specHash
	return &h
}
