package candidates

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// hostile are inputs on which a reader must do what encoding/json does,
// or refuse clearly.
var hostile = []struct {
	name string
	doc  string
	into func() any
}{
	{"depth 10001", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), anyValue},
	{"depth 100000", strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000), anyValue},
	{"invalid UTF-8", "{\"spec\":{\"nodeName\":\"n\xff\"}}", bodyValue},
	{"lone surrogate", `{"spec":{"nodeName":"\ud800x"}}`, bodyValue},
	{"huge float", `{"a":1e400}`, anyValue},
	{"huge integer", `{"spec":{"nodeName":"n"},"x":123456789012345678901234567890}`, bodyValue},
	{"duplicate keys", `{"a":1,"a":2}`, anyValue},
	{"duplicate fields", `{"spec":{"nodeName":"a"},"spec":{"nodeName":"b"}}`, bodyValue},
	{"escaped key", `{"spec":{"node\u004eame":"n"}}`, bodyValue},
	{"other case", `{"SPEC":{"NODENAME":"n"}}`, bodyValue},
	{"Kelvin sign", `{"endpoints":[{"targetRef":{"\u212aind":"Pod"}}]}`, bodyValue},
	{"control byte", "{\"a\":\"\x01\"}", anyValue},
	{"trailing data", `{"a":1} {}`, anyValue},
	// Invalid JSON inside a member the target type does not have, which
	// a decoder skips rather than decodes.
	{"skipped: control byte", "{\"x\":\"\x01\",\"spec\":{}}", bodyValue},
	{"skipped: bad escape", `{"x":"\q","spec":{}}`, bodyValue},
	{"skipped: bad literal", `{"x":[tru],"spec":{}}`, bodyValue},
	{"skipped: leading zero", `{"x":01,"spec":{}}`, bodyValue},
	{"skipped: double comma", `{"x":[1,,2],"spec":{}}`, bodyValue},
	{"skipped: depth 10001", `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, bodyValue},
	{"skipped: invalid UTF-8", "{\"x\":\"\xff\",\"spec\":{}}", bodyValue},
}

func anyValue() any  { return new(any) }
func bodyValue() any { return new(body) }

// result is what a reader made of a document: its value, or that it
// refused it.
func result(unmarshal func([]byte, any) error, doc string, into func() any) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("panic: %v", r)
		}
	}()
	v := into()
	if err := unmarshal([]byte(doc), v); err != nil {
		return "error"
	}
	b, _ := json.Marshal(v) // valid UTF-8 out: invalid bytes became U+FFFD
	return string(b)
}

// TestHostile prints, for each candidate and each hostile input, whether
// it does what encoding/json does (the table of docs/BENCHMARKS.notes.md).
// jsonscan is compared on validity only: reconstruct's
// TestDecodeBodyMatchesEncodingJSON and the fuzz targets compare values.
func TestHostile(t *testing.T) {
	for _, h := range hostile {
		want := result(json.Unmarshal, h.doc, h.into)
		var row []string
		for _, r := range append(readers, extra...) {
			switch {
			case r.unmarshal == nil:
				if got := r.valid([]byte(h.doc)); got != json.Valid([]byte(h.doc)) {
					row = append(row, fmt.Sprintf("%s: valid=%v", r.name, got))
				}
			default:
				if got := result(r.unmarshal, h.doc, h.into); got != want {
					row = append(row, fmt.Sprintf("%s: %.60s", r.name, got))
				}
			}
		}
		t.Logf("%-16s encoding/json: %.40s; differ: %s", h.name, want, strings.Join(row, "; "))
	}
}
