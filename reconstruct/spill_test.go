package reconstruct

import (
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestSpill: entries come back once each, with their uid and data, in the
// order they were spilled, whether their key's hash is free or another
// key's; what is not spilled (or was taken) is not found.
func TestSpill(t *testing.T) {
	t.Parallel()
	sp, err := newSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sp.put("a", "uid-a", []byte(`{"a":1}`))
	sp.put("b", "", []byte(`2`))
	if _, ok, _ := sp.take("a"); ok {
		t.Fatal("an entry is found before its flush")
	}
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	// "c" meets a hash that another key's record holds: it goes to clash,
	// and a key whose hash slot holds another key's record is not found.
	hc := sp.hash("c")
	sp.at[hc] = sp.at[sp.hash("b")]
	sp.put("c", "uid-c", []byte(`3`))
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := sp.clash["c"]; !ok {
		t.Fatalf("a key whose hash is held is not in clash: %v", sp.clash)
	}
	var got []string
	err = sp.each("", func(key, uid string, data []byte) error {
		got = append(got, key+" "+uid+" "+string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// b's record is indexed twice (by its hash and the faked c slot).
	want := []string{`a uid-a {"a":1}`, `b  2`, `b  2`, `c uid-c 3`}
	if len(got) != len(want) {
		t.Fatalf("each: %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("each: %q, want %q", got, want)
		}
	}
	delete(sp.at, hc)
	for _, k := range []string{"c", "a", "b"} {
		data, ok, err := sp.take(k)
		if err != nil || !ok {
			t.Fatalf("take %s: %v %v", k, ok, err)
		}
		if want := map[string]string{"a": `{"a":1}`, "b": "2", "c": "3"}[k]; string(data) != want {
			t.Fatalf("take %s: %s, want %s", k, data, want)
		}
		if _, ok, _ := sp.take(k); ok {
			t.Fatalf("%s found again after it was taken", k)
		}
	}
	if sp.Len() != 0 {
		t.Fatalf("%d entries left", sp.Len())
	}
}

// TestEvictedLazySetOnce: an entry of a lazy part of memory evicted and
// then set anew is saved once, with its new value, and the evicted value
// is not read back.
func TestEvictedLazySetOnce(t *testing.T) {
	t.Parallel()
	en := NewEngine()
	en.maxObjects, en.spillDir = 1, t.TempDir()
	defer en.closeSpill()
	en.mem.ChangeLast.Set("c1", 1)
	en.mem.ChangeLast.Set("c2", 2)
	en.evict()
	if en.mem.ChangeLast.len() != 0 || en.spill == nil || en.spill.Len() != 2 {
		t.Fatalf("not evicted: %d in memory", en.mem.ChangeLast.len())
	}
	en.mem.ChangeLast.Set("c1", 10)
	if v, _ := en.mem.ChangeLast.Get("c1"); v != 10 {
		t.Fatalf("c1 = %d, want 10", v)
	}
	if v, ok := en.mem.ChangeLast.Get("c2"); !ok || v != 2 {
		t.Fatalf("c2 = %d %v, want 2 read back", v, ok)
	}
	en.mem.ChangeLast.Set("c3", 3)
	en.evict()
	seen := map[string]int{}
	_, err := en.MarshalState(func(ch []cpid.ObjectState) error {
		for _, o := range ch {
			seen[o.Key+"="+string(o.Data)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{prefixChangeLast + "c1=10": 1, prefixChangeLast + "c2=2": 1, prefixChangeLast + "c3=3": 1}
	if len(seen) != len(want) {
		t.Fatalf("saved %v, want %v", seen, want)
	}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("saved %v, want %v", seen, want)
		}
	}
}
