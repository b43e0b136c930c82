package reconstruct

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// lazy is a part of the engine's memory that grows with the cluster (one
// entry per owner, namespace or change): it is saved an entry a row, as
// objects are (cpid.ObjectState, under its prefix and the entry's key), and
// a restored engine reads an entry when it first needs it, so that an
// incremental run does not read, or save again, every entry.
type lazy[V any] struct {
	prefix string
	m      map[string]V
	// state is the engine's (attach): its spill holds the entries evicted
	// (State.evict), and a restored engine's the saved ones; absent holds
	// the keys not saved.
	state  *State
	absent map[string]bool
}

func newLazy[V any](prefix string) lazy[V] { return lazy[V]{prefix: prefix, m: map[string]V{}} }

// Get returns the entry of k.
func (l *lazy[V]) Get(k string) (V, bool) {
	if v, ok := l.m[k]; ok {
		return v, true
	}
	var zero V
	s := l.state
	if s == nil {
		return zero, false
	}
	if v, ok := unspill[V](s, l.prefix+k); ok {
		l.m[k] = v
		return v, true
	}
	if s.saved == nil || l.absent[k] {
		return zero, false
	}
	v, ok := savedRow[V](s, s.saved.Object, l.prefix+k)
	if !ok {
		if s.loadErr == nil {
			l.absent[k] = true
		}
		return zero, false
	}
	l.m[k] = v
	return v, true
}

// Set sets the entry of k (an evicted one is dropped).
func (l *lazy[V]) Set(k string, v V) {
	if _, ok := l.m[k]; !ok {
		if l.state != nil && l.state.spill != nil {
			l.state.unspilled(l.prefix + k)
		}
		k = strings.Clone(k) // held: not a substring of a scanned row's texts
	}
	l.m[k] = v
}

// attach makes l the engine's, with s its state.
func (l *lazy[V]) attach(s *State) { l.state = s }

// restore makes l read the entries saved before from s.
func (l *lazy[V]) restore(s *State) {
	l.state, l.absent = s, map[string]bool{}
}

func (l *lazy[V]) len() int { return len(l.m) }

// evict moves every entry to the spill (State.evict): those met again are
// read back.
func (l *lazy[V]) evict(sp *spill) error {
	for k, v := range l.m {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s%s: %w", l.prefix, k, err)
		}
		sp.put(l.prefix+k, "", b)
	}
	if err := sp.flush(); err != nil {
		return err
	}
	l.m = map[string]V{}
	return nil
}

// save hands on the entries this engine met (all of them, unless it was
// restored), in key order, in chunks to emit.
func (l *lazy[V]) save(emit func(cpid.ObjectState) error) error {
	for _, k := range slices.Sorted(maps.Keys(l.m)) {
		b, err := json.Marshal(l.m[k])
		if err != nil {
			return fmt.Errorf("save reconstruct state: %s%s: %w", l.prefix, k, err)
		}
		if err := emit(cpid.ObjectState{Key: l.prefix + k, Data: b}); err != nil {
			return err
		}
	}
	return nil
}
