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
	"github.com/cpid-dev/cpid/ingest/jsonscan"
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

// walks reports whether decodeBody reads b itself, without encoding/json.
func walks(b []byte) bool {
	d := jsonscan.Get()
	defer d.Release()
	if d.Parse(b) != nil || !d.Object() {
		return false
	}
	r := reader{b: d.Buf, x: d.Index, ok: true}
	var out body
	r.body(&out, d.Members)
	return r.ok
}

// TestDecodeBodyMatchesEncodingJSON: decodeBody gives what encoding/json
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
		if walks(b) {
			walked++
		}
	}
	if walked != objects {
		t.Errorf("decodeBody read %d of %d real object bodies itself", walked, objects)
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
		// Hostile: deep nesting, huge numbers, keys that fold (Kelvin sign,
		// long s), escaped and duplicated keys, invalid UTF-8 in keys.
		`{"spec":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		`{"spec":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
		`{"spec":{"nodeName":1e99999},"x":123456789012345678901234567890}`, `{"x":-0.0e-999}`,
		`{"\u017fpec":{"nodeName":"n"}}`, "{\"\u017fpec\":{\"nodeName\":\"n\"}}",
		`{"endpoints":[{"targetRef":{"\u212aind":"Pod","name":"p"}}]}`,
		`{"SPEC":{"nodename":"a"},"spec":{"NodeName":"b"}}`, `{"spec":{"nodeName":"a","nodeName":null}}`,
		`{"metadata":{"labels":{"a\"b":"\ud83d\ude00","a\u0022b":"2"}}}`,
		"{\"metadata\":{\"labels\":{\"\xff\":\"1\"}}}", `{"metadata":{"labels":{"a":1e400}}}`,
		`{"endpoints":[{"targetRef":{"kind":"Pod"}}],"Endpoints":[]}`, `{"subsets":[null,{"addresses":null}]}`,
		`{"status":{"conditions":[{"type":"A"}]},"status":null}`, `{"metadata":{"labels":{"a":"1"},"labels":null}}`,
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
	}
}

// BenchmarkDecodeBody: decodeBody (jsonscan) against encoding/json, on the
// real bodies.
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
	}{{"jsonscan", decodeBody}, {"encoding-json", reference}} {
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

// FuzzDecodeBody: decodeBody gives what encoding/json gives, or both
// refuse. The corpus (testdata/fuzz) starts from real bodies.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"spec":{"node\u004eame":"n"}}`, `{"SPEC":{"nodename":"a"},"spec":{"NodeName":"b"}}`,
		`{"metadata":{"labels":{"a":null}}}`, `{"endpoints":[{"targetRef":{"\u212aind":"Pod","name":"p"}}]}`,
		`{"subsets":[{"addresses":[{"targetRef":{"kind":"Pod","name":"a"}}],"notReadyAddresses":[]}]}`,
		`{"status":{"conditions":[{"type":"A"}]},"status":{"conditions":[{"type":"B"}]}}`,
		"{\"spec\":{\"nodeName\":\"\xff\"}}", `{"spec":{"nodeName":1e400}}`, ` null `, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := decodeBody(b), reference(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeBody(%q)\n got %+v\nwant %+v", b, got, want)
		}
	})
}
