package candidates

import (
	"encoding/json"
	"testing"

	gojson "github.com/goccy/go-json"
)

// fuzzBody compares unmarshal into reconstruct's body with encoding/json.
func fuzzBody(f *testing.F, unmarshal func([]byte, any) error) {
	_, bodies := fixtures(f)
	for _, b := range bodies[:min(len(bodies), 20)] {
		f.Add(b)
	}
	for _, h := range hostile {
		f.Add([]byte(h.doc))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := result(unmarshal, string(b), bodyValue), result(json.Unmarshal, string(b), bodyValue); got != want {
			t.Fatalf("%q: got %s, encoding/json %s", b, got, want)
		}
	})
}

// FuzzGoccy looks for differences between goccy/go-json and encoding/json
// (docs/BENCHMARKS.notes.md: go test -fuzz FuzzGoccy -fuzztime 60s). sonic
// differs on the hostile seeds already (TestHostile).
func FuzzGoccy(f *testing.F) { fuzzBody(f, gojson.Unmarshal) }
