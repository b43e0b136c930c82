package reconstruct

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/klauspost/compress/zstd"
)

// stateVersion changes whenever the saved form of the engine changes; a
// saved state of another version is not restored (the caller rebuilds).
// The saved form is memory and Object as they are: a field added to either
// is saved (TestStateRoundTrip fills every one); renaming or retyping one
// changes the version. Version 13 saves each object in a row of its own
// (cpid.ObjectState) where 12 saved them after the head.
const stateVersion = 13

// savedHead is the first line of a saved state: its version, the setting
// of the run that saved it, and the engine's memory.
type savedHead struct {
	Version int `json:"Version"`
	// IgnoreCPIDs is the setting of the run that saved the state.
	IgnoreCPIDs bool `json:"IgnoreCPIDs,omitempty"`
	memory
}

// zstdMagic starts every zstd frame, and so a saved state (MarshalState).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// objectChunk is how many objects' states MarshalState hands on at once.
const objectChunk = 512

// MarshalState saves what the engine knows, so that a later run can go on
// where this one stopped: the state without its objects, returned, and
// each object's state (cpid.ObjectState), then each entry of the lazy
// parts of its memory, handed to emit in chunks, in key order. A restored
// engine hands on the objects and entries it met since it was restored,
// the others keep what was saved before. The graph is not
// included: a restored engine loads the stored mergelogs it needs
// (Saved.Ancestors).
//
// The head is zstd-compressed JSON; each object is JSON, encoded one at a
// time, so that a run never holds the whole state twice.
func (en *Engine) MarshalState(emit func([]cpid.ObjectState) error) ([]byte, error) {
	head := savedHead{Version: stateVersion, IgnoreCPIDs: en.IgnoreCPIDs, memory: en.mem}
	var out bytes.Buffer
	zw, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(head); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	var chunk []cpid.ObjectState
	add := func(o cpid.ObjectState) error {
		if chunk == nil {
			chunk = make([]cpid.ObjectState, 0, objectChunk)
		}
		if chunk = append(chunk, o); len(chunk) == objectChunk {
			err := emit(chunk)
			chunk = nil
			return err
		}
		return nil
	}
	objs := make([]*Object, 0, len(en.objects))
	keys := make([]string, 0, len(en.objects))
	for _, o := range en.objects {
		objs, keys = append(objs, o), append(keys, o.Key.String())
	}
	sort.Sort(byKey{objs, keys})
	for i, o := range objs {
		o.tolerated() // the summary is saved, not the spec
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("save reconstruct state: object %s: %w", keys[i], err)
		}
		if err := add(cpid.ObjectState{Key: keys[i], UID: o.UID, Data: b}); err != nil {
			return nil, err
		}
	}
	if en.spill != nil {
		// The objects evicted and not met again, as they were evicted.
		err := en.spill.each("", func(key, uid string, data []byte) error {
			switch {
			case strings.HasPrefix(key, prefixUID):
				return nil
			case !strings.HasPrefix(key, "#"):
				en.spilledSaved++ // an object (not a lazy entry)
			}
			return add(cpid.ObjectState{Key: key, UID: uid, Data: bytes.Clone(data)})
		})
		if err != nil {
			return nil, fmt.Errorf("save reconstruct state: %w", err)
		}
	}
	for _, l := range en.mem.lazies() {
		if err := l.save(add); err != nil {
			return nil, err
		}
	}
	if len(chunk) > 0 {
		if err := emit(chunk); err != nil {
			return nil, err
		}
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

// Saved reads what earlier runs stored, as a restored engine meets it
// (cpid.DerivedStore's LoadObject, LoadObjectByUID and ScanMergelogsOf):
// an object's state by its key (ObjectKey.String()) or its uid, nil when
// none was saved, and the stored mergelogs of some CPIDs.
type Saved struct {
	Object    func(key string) ([]byte, error)
	ByUID     func(uid string) ([]byte, error)
	Mergelogs func(cpids []string, fn func(cpid.Mergelog) error) error
}

// RestoreState loads a state saved by MarshalState into a new engine: the
// head now, the objects and the merge graph from saved as the engine meets
// them. An error in reading them later is the engine's LoadErr.
func (en *Engine) RestoreState(b []byte, saved Saved) error {
	var head savedHead
	if !bytes.HasPrefix(b, zstdMagic) {
		// A state saved before version 12: plain JSON, restored only to
		// say which version it is.
		if err := json.Unmarshal(b, &head); err != nil {
			return fmt.Errorf("restore reconstruct state: %w", err)
		}
		return fmt.Errorf("restore reconstruct state: version %d, want %d", head.Version, stateVersion)
	}
	zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("restore reconstruct state: %w", err)
	}
	defer zr.Close()
	head.memory = newMemory()
	if err := json.NewDecoder(zr).Decode(&head); err != nil {
		return fmt.Errorf("restore reconstruct state: %w", err)
	}
	if head.Version != stateVersion {
		return fmt.Errorf("restore reconstruct state: version %d, want %d", head.Version, stateVersion)
	}
	if head.IgnoreCPIDs != en.IgnoreCPIDs {
		return fmt.Errorf("the last run was made with --ignore-cpids=%t", head.IgnoreCPIDs)
	}
	en.mem = head.memory
	en.saved = &saved
	for _, l := range en.mem.lazies() {
		l.restore(&en.State)
	}
	en.absent, en.noUID, en.graphed = map[cpid.ObjectKey]bool{}, map[string]bool{}, map[string]bool{}
	return nil
}

// LoadErr is the first error in reading what an earlier run saved (Saved),
// nil when there was none: a run that met one must not store what it
// derived.
func (en *Engine) LoadErr() error { return en.loadErr }

// savedRow reads the saved row of key by fetch (Saved.Object or
// Saved.ByUID) into a V: found is false when none was saved, or when it
// cannot be read, and then loadErr says why (no row is read after one).
func savedRow[V any](s *State, fetch func(string) ([]byte, error), key string) (v V, found bool) {
	if s.saved == nil || s.loadErr != nil {
		return v, false
	}
	b, err := fetch(key)
	if err == nil && b == nil {
		return v, false
	}
	if err == nil {
		if err = json.Unmarshal(b, &v); err == nil {
			return v, true
		}
		err = fmt.Errorf("restore reconstruct state: %s: %w", key, err)
	}
	s.loadErr = err
	return v, false
}

// savedObject reads the saved object by fetch and key and makes it the
// engine's (or returns the engine's own, when it met that object
// already); nil when none was saved or it cannot be read.
func (s *State) savedObject(fetch func(string) ([]byte, error), key string) *Object {
	o, ok := savedRow[*Object](s, fetch, key)
	if !ok {
		return nil
	}
	if cur := s.objects[o.Key]; cur != nil {
		return cur
	}
	if cur, ok := unspill[*Object](s, o.Key.String()); ok {
		return s.met(cur) // evicted since: newer than the saved one
	}
	return s.met(o)
}

// met makes an object read back (saved by an earlier run, or evicted) the
// engine's again.
func (s *State) met(o *Object) *Object {
	o.tolDone = true // its TolSummary was saved
	o.used = s.tick
	s.objects[o.Key] = o
	if _, ok := s.byUID[o.UID]; o.UID != "" && !ok {
		s.byUID[o.UID] = o.Key
	}
	return o
}

// ensureMergelog is ensure of a mergelog's CPID and sources, in one read.
func (en *Engine) ensureMergelog(m cpid.Mergelog) {
	en.ensure(append([]string{m.CPID}, m.Sources...)...)
}

// ensure loads the stored mergelogs of cpids and of their ancestors into
// the graph of a restored engine, once per CPID, before the engine reads
// or adds to the graph with them: a level of ancestors a query.
func (en *Engine) ensure(cpids ...string) {
	if en.saved == nil || en.saved.Mergelogs == nil {
		return
	}
	var need []string
	for _, c := range cpids {
		if c != "" && !en.graphed[c] {
			en.graphed[c] = true
			need = append(need, c)
		}
	}
	for len(need) > 0 && en.loadErr == nil {
		var next []string
		err := en.saved.Mergelogs(need, func(m cpid.Mergelog) error {
			for _, s := range m.Sources {
				if !en.graphed[s] {
					en.graphed[s] = true
					next = append(next, s)
				}
			}
			return en.RestoreMergelog(m)
		})
		if err != nil {
			en.loadErr = fmt.Errorf("restore the merge graph: %w", err)
		}
		need = next
	}
}

// RestoreMergelog adds a stored mergelog to the graph without emitting it again.
func (en *Engine) RestoreMergelog(m cpid.Mergelog) error {
	if err := en.Graph.Add(m); err != nil {
		return err
	}
	en.record(m)
	return nil
}
