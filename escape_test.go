package cpid_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
)

// rawControl is the first control character (C0 but newline, DEL, C1) of
// j outside a \u escape, or -1.
func rawControl(j []byte) rune {
	for _, r := range string(j) {
		if r < 0x20 && r != '\n' || r >= 0x7f && r < 0xa0 {
			return r
		}
	}
	return -1
}

// TestEscapeJSON: the control characters of strings become \u escapes,
// the JSON decodes to the same values, and nothing else changes.
func TestEscapeJSON(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"none", `{"a": ["b\"", 1, null]}`, `{"a": ["b\"", 1, null]}`},
		{"layout kept", "{\n\t\"a\": 1\r\n}", "{\n\t\"a\": 1\r\n}"},
		{"DEL", "\"a\x7fb\"", `"a\u007fb"`},
		{"C1 CSI", "[\"\u009b31m\", \"\u0080\u009f\"]", `["\u009b31m", "\u0080\u009f"]`},
		{"after escapes", "{\"\\\\\":\"\\\"\u0085\"}", `{"\\":"\"\u0085"}`},
		{"raw C0", "\"a\x1b\tb\"", `"a\u001b\u0009b"`},
		{"not C1", "\"\u00a0é\u0100\u2028\"", "\"\u00a0é\u0100\u2028\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(cpid.EscapeJSON([]byte(c.in))); got != c.want {
				t.Errorf("EscapeJSON(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	in := []byte(`{"a": "b"}`)
	if out := cpid.EscapeJSON(in); &out[0] != &in[0] {
		t.Error("EscapeJSON copied a text with no control character")
	}
}

// FuzzEscapeJSON: any string encoding/json writes, in a member name and
// a value of indented JSON, reads back the same after EscapeJSON, which
// leaves no control character raw.
func FuzzEscapeJSON(f *testing.F) {
	var every strings.Builder
	for r := rune(0); r < 0xa0; r++ {
		every.WriteRune(r)
	}
	f.Add(every.String())
	f.Add("\x1b]0;title\x07\u009b31m")
	f.Add(`\"\u009b`)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encoding/json writes U+FFFD for it
		}
		j, err := json.MarshalIndent(map[string][]string{s: {s, "x"}}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		out := cpid.EscapeJSON(j)
		if r := rawControl(out); r >= 0 {
			t.Errorf("raw %U in %q", r, out)
		}
		var back map[string][]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if v := back[s]; len(back) != 1 || len(v) != 2 || v[0] != s {
			t.Errorf("%q reads back as %q", s, back)
		}
	})
}
