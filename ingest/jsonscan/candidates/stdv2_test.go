//go:build goexperiment.jsonv2

package candidates

import (
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
)

// extra is the standard library's encoding/json/v2, which Go 1.26 builds
// only with GOEXPERIMENT=jsonv2.
var extra = []reader{{"encoding-json-v2", func(b []byte) bool { return jsontext.Value(b).IsValid() },
	func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }}}
