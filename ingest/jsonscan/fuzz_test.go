package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// value rebuilds the value at b[i] of a parsed document with the walking
// functions: objects as maps (the last of duplicated keys wins, as in
// encoding/json), numbers as json.Number. Each number is also checked
// against encoding/json's integer decoding.
func value(t *testing.T, b []byte, x jsonscan.Index, v jsonscan.Span) any {
	switch c := b[v.S]; {
	case c == '{':
		out := map[string]any{}
		var m jsonscan.Member
		for it := x.Members(b, v.S); it.Next(&m); {
			out[string(m.Key(b))] = value(t, b, x, m.Val())
		}
		return out
	case c == '[':
		out := []any{}
		for it := x.Elems(b, v.S); ; {
			e, ok := it.Next()
			if !ok {
				return out
			}
			out = append(out, value(t, b, x, e))
		}
	case c == '"':
		s, ok := jsonscan.String(b, v)
		if !ok {
			t.Fatalf("String refuses %s", b[v.S:v.E])
		}
		return string(s)
	case c == 't':
		return true
	case c == 'f':
		return false
	case c == 'n':
		return nil
	default:
		lit := b[v.S:v.E]
		for _, bits := range []int{32, 64} {
			got, ok := jsonscan.ParseInt(lit, bits)
			var want64 int64
			var want32 int32
			var err error
			if bits == 32 {
				err = json.Unmarshal(lit, &want32)
				want64 = int64(want32)
			} else {
				err = json.Unmarshal(lit, &want64)
			}
			if ok != (err == nil) || ok && got != want64 {
				t.Fatalf("ParseInt(%s, %d) = %d, %v; encoding/json: %d, %v", lit, bits, got, ok, want64, err)
			}
		}
		return json.Number(lit)
	}
}

// FuzzParse: jsonscan accepts exactly what encoding/json accepts, except
// invalid UTF-8 (refused with ErrUTF8); what it accepts it compacts as
// json.Compact does, and the values its walking functions read are
// encoding/json's.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `-0.5e+7`, ` {"a" : [1, 2, {"b": null}]} `,
		`{"a":1,"a":2}`, `{"\u0041":1,"A":2}`, `{"a":"\ud83d\ude00\ud800\u00e9"}`,
		"{\"a\":\"\xff\"}", `{"a":1e400,"b":123456789012345678901234567890,"c":-9223372036854775808}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"a":1} {}`, `{"a":01}`, `{"a":"\x"}`, `{"a" 1}`, `[1,]`, "\"\x01\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := jsonscan.Get()
		defer d.Release()
		err := d.Parse(b)
		valid := json.Valid(b)
		switch {
		case err != nil && errors.Is(err, jsonscan.ErrUTF8):
			if utf8.Valid(b) {
				t.Fatalf("Parse(%q): %v on valid UTF-8", b, err)
			}
			return
		case err != nil:
			if valid {
				t.Fatalf("Parse(%q): %v; encoding/json accepts it", b, err)
			}
			return
		case !valid:
			t.Fatalf("Parse(%q) accepts what encoding/json refuses", b)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Buf, compact.Bytes()) {
			t.Fatalf("Parse(%q).Buf = %q, json.Compact: %q", b, d.Buf, compact.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := value(t, d.Buf, d.Index, jsonscan.Span{S: 0, E: len(d.Buf)}); !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%q) reads %#v, encoding/json %#v", b, got, want)
		}
		// The same without the index, and the top-level members.
		if got := value(t, d.Buf, nil, jsonscan.Span{S: 0, E: len(d.Buf)}); !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%q) without the index reads %#v", b, got)
		}
		var i int
		var m jsonscan.Member
		for it := jsonscan.Members(d.Buf, 0); it.Next(&m); i++ {
			if i >= len(d.Members) || d.Members[i] != m {
				t.Fatalf("Parse(%q).Members = %v, walking gives %v at %d", b, d.Members, m, i)
			}
		}
		if i != len(d.Members) {
			t.Fatalf("Parse(%q).Members = %v, walking gives %d", b, d.Members, i)
		}
	})
}
