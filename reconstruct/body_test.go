package reconstruct

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

// fixtureBodies returns the response bodies of the real fixtures' writes
// of the kinds the engine reads, read as cpid-tui ingest reads them.
func fixtureBodies(t *testing.T) [][]byte {
	t.Helper()
	dirs, _ := filepath.Glob("../fixtures/*/bundle/audit")
	w := &ingest.Walker{}
	files, err := w.Files(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		err := w.Read(context.Background(), f, func(s ingest.Stream) error {
			sc := bufio.NewScanner(s.R)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				evs, err := ingest.DecodeAudit(sc.Bytes())
				if err != nil {
					return err
				}
				for _, ev := range evs {
					if len(ev.ResponseObject) > 0 && readsBody[ev.Resource] {
						out = append(out, ev.ResponseObject)
					}
				}
			}
			return sc.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func reference(b []byte) *body {
	var out body
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return &out
}

// TestDecodeBodyMatchesEncodingJSON: the walker gives what encoding/json
// gives, on every Pod, Node, EndpointSlice and Endpoints body of the real
// fixtures, on hand-written edge cases, and on random mutations of the
// real bodies (most of them invalid JSON, some valid in odd ways).
func TestDecodeBodyMatchesEncodingJSON(t *testing.T) {
	bodies := fixtureBodies(t)
	if len(bodies) < 500 {
		t.Fatalf("only %d fixture bodies", len(bodies))
	}
	check := func(b []byte) {
		t.Helper()
		if got, want := decodeBody(b), reference(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeBody(%.300s)\n got %+v\nwant %+v", b, got, want)
		}
	}
	walked, objects := 0, 0
	for _, b := range bodies {
		check(b)
		if strings.HasPrefix(string(b), `{"kind":"Status"`) {
			continue // failed writes: encoding/json refuses them too
		}
		objects++
		w := walker{b: b, ok: true}
		var out body
		if w.walkBody(&out); w.ok {
			walked++
		}
	}
	if walked != objects {
		t.Errorf("the walker read %d of %d real object bodies itself", walked, objects)
	}
	for _, s := range []string{
		`null`, `[]`, `{}`, `{"spec":null}`, `{"spec":{"nodeName":null}}`, `{"spec":{"nodeName":7}}`,
		`{"Spec":{"NODENAME":"n1"}}`, `{"spec":{"nodeName":"a"},"spec":{"other":1}}`,
		`{"metadata":{"labels":{}}}`, `{"metadata":{"labels":null}}`, `{"metadata":{"labels":{"a":null}}}`,
		`{"metadata":{"labels":{"kubernetes.io\/service-name":"x"}}}`, `{"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"b":"2"}}}`,
		`{"status":{"conditions":[]}}`, `{"status":{"conditions":null}}`, `{"status":{"conditions":[null,{"type":"Ready"}]}}`,
		`{"status":{"conditions":[{"type":"A","lastTransitionTime":"x"}]},"status":{"conditions":[{"type":"B"}]}}`,
		`{"endpoints":[{"targetRef":{"kind":"Pod","name":"p"}},{"targetRef":null},{}]}`,
		`{"endpoints":[{"targetRef":{"kind":"Pod"},"targetRef":{"name":"p"}}]}`,
		`{"subsets":[{"addresses":[{"targetRef":{"kind":"Pod","name":"a"}}],"notReadyAddresses":[]}]}`,
		`{"subsets":[{"addresses":[{"TargetRef":{"kind":"Pod","name":"a"}}]}]}`,
		`{"spec":{"nodeName":"caf\u00e9\ud83d"}}`, "{\"spec\":{\"nodeName\":\"\xff\"}}", `{"spec":{"node\u004eame":"n"}}`,
		` { "spec" : { "nodeName" : "n" } } `, `{"spec":{"nodeName":"n"}} x`, `{"spec":{"nodeName":"n"}`,
		`{"status":{"conditions":{"type":"x"}}}`, `{"endpoints":"x"}`, `{"metadata":[]}`,
	} {
		check([]byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := []byte(string(bodies[r.IntN(len(bodies))]))
		for range 1 + r.IntN(3) {
			i := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[i] = `{}[]":,\ntu0`[r.IntN(12)]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				j := r.IntN(len(b))
				b = append(b[:i], append([]byte(string(b[j:min(j+20, len(b))])), b[i:]...)...)
			}
		}
		check(b)
		// The walker alone, on what json.Valid would refuse: it must
		// neither panic nor loop.
		w := walker{b: b, ok: true}
		var out body
		w.walkBody(&out)
	}
}

// BenchmarkDecodeBody: the walker against encoding/json, on the real bodies.
func BenchmarkDecodeBody(b *testing.B) {
	var bodies [][]byte
	for _, x := range fixtureBodies(&testing.T{}) {
		if !strings.HasPrefix(string(x), `{"kind":"Status"`) {
			bodies = append(bodies, x)
		}
	}
	size := 0
	for _, x := range bodies {
		size += len(x)
	}
	for _, bc := range []struct {
		name string
		fn   func([]byte) *body
	}{{"walker", decodeBody}, {"encoding-json", reference}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, x := range bodies {
					bc.fn(x)
				}
			}
		})
	}
}
