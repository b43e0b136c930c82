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
// The saved form is memory and Object as they are: a field added to either
// is saved (TestStateRoundTrip fills every one); renaming or retyping one
// changes the version.
const stateVersion = 12

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
	head := savedHead{Version: stateVersion, IgnoreCPIDs: en.IgnoreCPIDs, memory: en.mem}
	var newest int64
	for _, ns := range en.mem.ChangeLast {
		newest = max(newest, ns)
	}
	head.ChangeLast = make(map[string]int64, len(en.mem.ChangeLast))
	for c, ns := range en.mem.ChangeLast {
		if ns >= newest-int64(keepChangeLast) {
			head.ChangeLast[c] = ns
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
	if err := enc.Encode(head); err != nil {
		return nil, err
	}
	for _, o := range objs {
		o.tolerated() // the summary is saved, not the spec
		if err := enc.Encode(o); err != nil {
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
	dec := json.NewDecoder(zr)
	head.memory = newMemory()
	if err := dec.Decode(&head); err != nil {
		return fmt.Errorf("restore reconstruct state: %w", err)
	}
	if head.Version != stateVersion {
		return fmt.Errorf("restore reconstruct state: version %d, want %d", head.Version, stateVersion)
	}
	if head.IgnoreCPIDs != en.IgnoreCPIDs {
		return fmt.Errorf("the last run was made with --ignore-cpids=%t", head.IgnoreCPIDs)
	}
	for {
		o := &Object{}
		if err := dec.Decode(o); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("restore reconstruct state: object %d: %w", len(en.objects)+1, err)
		}
		o.tolDone = true // its TolSummary was saved
		en.objects[o.Key] = o
		if o.UID != "" {
			en.byUID[o.UID] = o.Key
		}
	}
	en.mem = head.memory
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
