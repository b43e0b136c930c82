package clientgo

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
)

// FuzzStampBody feeds arbitrary bodies to the stamper: it never fails, and a
// body it changes is still JSON (or protobuf) carrying the merged CPID.
func FuzzStampBody(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"x":"y"}}}`), uint8(0))
	f.Add([]byte(`{"metadata":{"annotations":{"v1.cpid.dev/cpid":"00000000-0000-4000-8000-000000000061","v1.cpid.dev/ancestors":null}}}`), uint8(1))
	f.Add([]byte(`{"metadata":null}`), uint8(2))
	f.Add([]byte("k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12\x08\n\x06\n\x01a\x12\x01b"), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, k uint8) {
		kind := bodyKind(k % 3)
		tr := instrument.New("fuzz", nil)
		s := New(tr, nil)
		ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: instrument.NewID()})
		in := bytes.Clone(body)
		out, _, _ := s.stampBody(ctx, body, kind, target{name: "a"}, noCurrent)
		if !bytes.Equal(body, in) {
			t.Fatal("input changed")
		}
		if bytes.Equal(out, body) {
			return
		}
		if bytes.HasPrefix(out, protoMagic) {
			d, err := parseProto(out)
			if err != nil || d.om.Annotations[instrument.KeyCPID] == "" {
				t.Fatalf("stamped protobuf does not parse: %v", err)
			}
			return
		}
		// A map, not a struct: encoding/json matches struct fields case
		// insensitively, the apiserver does not.
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("stamped body is not JSON: %v\n%s", err, out)
		}
		meta, _ := m["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		cpid, _ := ann[instrument.KeyCPID].(string)
		if _, err := instrument.ParseID(cpid); err != nil {
			t.Fatalf("stamped body lacks the CPID: %s", out)
		}
	})
}
