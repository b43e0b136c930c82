package candidates

import (
	"encoding/json"
	"testing"

	"github.com/bytedance/sonic"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	gojson "github.com/goccy/go-json"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// reader is one candidate: how it validates a document, and how it
// decodes one into a Go value (nil when it has no such API).
type reader struct {
	name      string
	valid     func([]byte) bool
	unmarshal func([]byte, any) error
}

var readers = []reader{
	{"jsonscan", func(b []byte) bool {
		d := jsonscan.Get()
		defer d.Release()
		return d.Parse(b) == nil
	}, nil},
	{"encoding-json", json.Valid, json.Unmarshal},
	{"json-v2", func(b []byte) bool { return jsontext.Value(b).IsValid() },
		func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }},
	{"goccy", gojson.Valid, gojson.Unmarshal},
	{"sonic", sonic.Valid, sonic.Unmarshal},
}

// BenchmarkValid validates the real audit lines and bodies: the least any
// reader that is safe on hostile input has to do.
func BenchmarkValid(b *testing.B) {
	lines, bodies := fixtures(b)
	for _, set := range []struct {
		name string
		docs [][]byte
	}{{"lines", lines}, {"bodies", bodies}} {
		for _, r := range append(readers, extra...) {
			b.Run(set.name+"/"+r.name, func(b *testing.B) {
				b.SetBytes(size(set.docs))
				b.ReportAllocs()
				for b.Loop() {
					for _, d := range set.docs {
						if !r.valid(d) {
							b.Fatalf("%s refuses %.100s", r.name, d)
						}
					}
				}
			})
		}
	}
}

// BenchmarkBody decodes reconstruct's body from the real bodies with each
// library; reconstruct's own BenchmarkDecodeBody measures jsonscan there.
func BenchmarkBody(b *testing.B) {
	_, bodies := fixtures(b)
	for _, r := range append(readers, extra...) {
		if r.unmarshal == nil {
			continue
		}
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(size(bodies))
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range bodies {
					var out body
					if err := r.unmarshal(d, &out); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkAudit decodes every real audit line: ingest's decoder (on
// jsonscan; it also redacts, hashes and copies) against each library
// into the reference type, k8s.io/apiserver's audit Event.
func BenchmarkAudit(b *testing.B) {
	lines, _ := fixtures(b)
	b.Run("jsonscan-DecodeAudit", func(b *testing.B) {
		b.SetBytes(size(lines))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				if _, err := ingest.DecodeAudit(l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, r := range append(readers, extra...) {
		if r.unmarshal == nil {
			continue
		}
		b.Run(r.name, func(b *testing.B) {
			b.SetBytes(size(lines))
			b.ReportAllocs()
			for b.Loop() {
				for _, l := range lines {
					var ev auditv1.Event
					if err := r.unmarshal(l, &ev); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
