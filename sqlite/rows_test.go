package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestRowsJSON: the JSON columns written in place are the bytes cpid's
// helpers (encoding/json) make, escapes included.
func TestRowsJSON(t *testing.T) {
	lists := [][]string{nil, {}, {"10.0.0.1"}, {"a", "", "b c"}, {`quo"te`}, {`back\slash`}, {"<html>&"},
		{"tab\there"}, {"ünï", "ok"}, {"\u2028"}, {"bad \xff utf-8"}, {"del \x7f"}}
	for _, ss := range lists {
		r := newRows(1)
		r.jsonStrings(ss)
		want := cpid.JSONStrings(ss)
		if got := r.arg(0); got != want {
			t.Errorf("jsonStrings(%q) = %#v, want %#v", ss, got, want)
		}
		r.put()
	}
	for _, raw := range []string{"", "null", `{"a":1}`, `[{"kind":"ReplicaSet"}]`} {
		r := newRows(1)
		r.jsonText(json.RawMessage(raw))
		if got, want := r.arg(0), cpid.JSONText(json.RawMessage(raw)); got != want {
			t.Errorf("jsonText(%q) = %#v, want %#v", raw, got, want)
		}
		r.put()
	}
}

// arg is value i of the batch's first row as database/sql gets it, a
// string copied out of the arena.
func (r *rows) arg(i int) any {
	v := r.args(0, nil)[i]
	if s, ok := v.(string); ok {
		return string([]byte(s))
	}
	return v
}
