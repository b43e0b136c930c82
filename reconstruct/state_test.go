package reconstruct

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// notSaved are the fields of the saved structs that are left out of a
// saved state on purpose, and why.
var notSaved = map[string]string{
	"Object.tolerations": "a Pod's spec.tolerations: its summary TolSummary is saved instead",
	"Object.tolDone":     "says that TolSummary is made; a restored object's is",
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
	var objs []*Object
	for range 2 {
		o := &Object{}
		fill(reflect.ValueOf(o).Elem(), &n)
		o.tolDone = true // as MarshalState leaves it: TolSummary stands
		en.objects[o.Key] = o
		en.byUID[o.UID] = o.Key
		objs = append(objs, o)
	}
	b, err := en.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	back := NewEngine()
	back.IgnoreCPIDs = true
	if err := back.RestoreState(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.mem, en.mem) {
		t.Errorf("memory restored as\n%+v\nwant\n%+v", back.mem, en.mem)
	}
	if len(back.objects) != len(objs) {
		t.Errorf("%d objects restored, want %d", len(back.objects), len(objs))
	}
	for _, o := range objs {
		if got := back.objects[o.Key]; !reflect.DeepEqual(got, o) {
			t.Errorf("object restored as\n%+v\nwant\n%+v", got, o)
		}
		if k, ok := back.ByUID(o.UID); !ok || k != o.Key {
			t.Errorf("ByUID(%q) = %v, %v after the restore", o.UID, k, ok)
		}
	}
	again, err := back.MarshalState()
	if err != nil || string(again) != string(b) {
		t.Errorf("the restored state saves to other bytes (%v)", err)
	}

	// The setting of the run is part of the state.
	if err := NewEngine().RestoreState(b); err == nil || !strings.Contains(err.Error(), "--ignore-cpids=true") {
		t.Errorf("restored with the other --ignore-cpids: %v", err)
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
