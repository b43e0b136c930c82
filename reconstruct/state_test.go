package reconstruct

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// notSaved are the fields of the saved structs that are left out of a
// saved state on purpose, and why.
var notSaved = map[string]string{
	"Object.tolerations": "a Pod's spec.tolerations: its summary TolSummary is saved instead",
	"Object.tolDone":     "says that TolSummary is made; a restored object's is",
	"Object.used":        "when this run last met the object (State.evict): a restored or read back object is met now",
	"memory.Children":    "lazy: saved an entry a row (TestStateRoundTrip sets one)",
	"memory.LatestPods":  "lazy: saved an entry a row (TestStateRoundTrip sets one)",
	"memory.ChangeLast":  "lazy: saved an entry a row (TestStateRoundTrip sets one)",
}

// TestStateRoundTrip: every field of the engine's saved state (its memory
// and each Object), filled by reflection, comes back from MarshalState
// and RestoreState as it was; a field the saved form leaves out (not
// exported, or tagged "-") fails unless notSaved says why.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	for _, typ := range []reflect.Type{reflect.TypeFor[memory](), reflect.TypeFor[Object]()} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := typ.Name() + "." + f.Name
			saved := f.IsExported() && f.Tag.Get("json") != "-"
			if _, ok := notSaved[name]; saved == ok {
				if saved {
					t.Errorf("%s is saved but listed in notSaved", name)
				} else {
					t.Errorf("%s is not saved (unexported or tagged -): save it, or say why in notSaved", name)
				}
			}
		}
	}

	en := NewEngine()
	en.IgnoreCPIDs = true
	n := 0
	fill(reflect.ValueOf(&en.mem).Elem(), &n)
	child := [2]cpid.ObjectKey{{Resource: "pods", Namespace: "ns", Name: "a"}, {Resource: "pods", Namespace: "ns", Name: "b"}}
	en.mem.Children.Set("owner-uid", child)
	en.mem.LatestPods.Set("ns", child[0])
	en.mem.ChangeLast.Set("change-1", 42)
	var objs []*Object
	for range 2 {
		o := &Object{}
		fill(reflect.ValueOf(o).Elem(), &n)
		o.tolDone = true // as MarshalState leaves it: TolSummary stands
		en.objects[o.Key] = o
		en.byUID[o.UID] = o.Key
		objs = append(objs, o)
	}
	var store savedIn
	b, err := en.MarshalState(store.emit)
	if err != nil {
		t.Fatal(err)
	}
	if len(store.byKey) != len(objs)+3 {
		t.Errorf("%d objects and entries saved, want %d", len(store.byKey), len(objs)+3)
	}
	back := NewEngine()
	back.IgnoreCPIDs = true
	if err := back.RestoreState(b, store.saved()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.mem.Epochs, en.mem.Epochs) || !reflect.DeepEqual(back.mem.Programs, en.mem.Programs) {
		t.Errorf("memory restored as\n%+v\nwant\n%+v", back.mem, en.mem)
	}
	if c, ok := back.mem.Children.Get("owner-uid"); !ok || c != child {
		t.Errorf("Children restored as %v, %v", c, ok)
	}
	if p, ok := back.mem.LatestPods.Get("ns"); !ok || p != child[0] {
		t.Errorf("LatestPods restored as %v, %v", p, ok)
	}
	if l, ok := back.mem.ChangeLast.Get("change-1"); !ok || l != 42 {
		t.Errorf("ChangeLast restored as %v, %v", l, ok)
	}
	if _, ok := back.mem.ChangeLast.Get("never"); ok {
		t.Error("ChangeLast has an entry never set")
	}
	if len(back.objects) != 0 {
		t.Errorf("%d objects restored before they are met, want none", len(back.objects))
	}
	// The first object is met by its key, the second by its uid.
	if got := back.Object(objs[0].Key); !reflect.DeepEqual(got, objs[0]) {
		t.Errorf("object restored as\n%+v\nwant\n%+v", got, objs[0])
	}
	if k, ok := back.ByUID(objs[1].UID); !ok || k != objs[1].Key {
		t.Errorf("ByUID(%q) = %v, %v after the restore", objs[1].UID, k, ok)
	}
	for _, o := range objs {
		if got := back.Object(o.Key); !reflect.DeepEqual(got, o) {
			t.Errorf("object restored as\n%+v\nwant\n%+v", got, o)
		}
		if k, ok := back.ByUID(o.UID); !ok || k != o.Key {
			t.Errorf("ByUID(%q) = %v, %v after the restore", o.UID, k, ok)
		}
	}
	var again savedIn
	head, err := back.MarshalState(again.emit)
	if err != nil || string(head) != string(b) || !reflect.DeepEqual(again, store) {
		t.Errorf("the restored state saves to other bytes (%v)", err)
	}
	if back.Object(cpid.ObjectKey{Resource: "pods", Name: "never"}) != nil || back.LoadErr() != nil {
		t.Errorf("an object never saved was found, or made an error: %v", back.LoadErr())
	}

	// The setting of the run is part of the state.
	if err := NewEngine().RestoreState(b, store.saved()); err == nil || !strings.Contains(err.Error(), "--ignore-cpids=true") {
		t.Errorf("restored with the other --ignore-cpids: %v", err)
	}
}

// TestStateLoadError: a saved object that cannot be read is the engine's
// LoadErr (Run then stores nothing), not an object the engine never saw.
func TestStateLoadError(t *testing.T) {
	t.Parallel()
	en := NewEngine()
	k := cpid.ObjectKey{Resource: "pods", Namespace: "ns", Name: "p"}
	en.objects[k] = &Object{Key: k, UID: "u"}
	var store savedIn
	b, err := en.MarshalState(store.emit)
	if err != nil {
		t.Fatal(err)
	}
	store.byKey[k.String()] = []byte("{not json")
	back := NewEngine()
	if err := back.RestoreState(b, store.saved()); err != nil {
		t.Fatal(err)
	}
	if back.Object(k) != nil || back.LoadErr() == nil || !strings.Contains(back.LoadErr().Error(), "restore reconstruct state") {
		t.Errorf("a broken saved object: LoadErr %v", back.LoadErr())
	}
	failing := NewEngine()
	if err := failing.RestoreState(b, Saved{
		Object:    func(string) ([]byte, error) { return nil, errors.New("disk gone") },
		ByUID:     func(string) ([]byte, error) { return nil, errors.New("disk gone") },
		Mergelogs: func([]string, func(cpid.Mergelog) error) error { return errors.New("disk gone") },
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := failing.ByUID("u"); ok || failing.LoadErr() == nil {
		t.Errorf("a failing store: ByUID found the object, LoadErr %v", failing.LoadErr())
	}
}

// savedIn keeps the objects' states MarshalState hands on and reads them
// back by key and by uid, as a store does (Saved).
type savedIn struct{ byKey, byUID map[string][]byte }

func (s *savedIn) emit(chunk []cpid.ObjectState) error {
	if s.byKey == nil {
		s.byKey, s.byUID = map[string][]byte{}, map[string][]byte{}
	}
	for _, o := range chunk {
		s.byKey[o.Key] = o.Data
		if o.UID != "" {
			s.byUID[o.UID] = o.Data
		}
	}
	return nil
}

func (s *savedIn) saved() Saved {
	return Saved{
		Object: func(k string) ([]byte, error) { return s.byKey[k], nil },
		ByUID:  func(u string) ([]byte, error) { return s.byUID[u], nil },
	}
}

// fill sets every exported field reachable from v to a value of its own,
// numbered from *n: no field is left zero, so omitempty drops none.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n % 256))
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	default:
		panic("fill: a field of kind " + v.Kind().String())
	}
}
