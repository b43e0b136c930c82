package tui

import (
	"testing"
)

func TestFieldsText(t *testing.T) {
	for _, c := range []struct{ fields, want string }{
		{`{"ts":1,"caller":"x.go:1","msg":"m","v":2,"replicaSet":{"name":"web-1","namespace":"default"},"need":1}`,
			"replicaSet=default/web-1 need=1"},
		{`{"time":"t","level":"INFO","source":{"file":"f"},"msg":"Patch pod","node":{"name":"n1"},"err":"boom"}`,
			"node=n1 err=boom"},
		{`{"list":[1,2],"obj":{"a":1,"b":2,"c":3}}`, `list=[1,2] obj={"a":1,"b":2,"c":3}`},
		{`not json`, ""},
	} {
		if got := fieldsText(c.fields); got != c.want {
			t.Errorf("fieldsText(%s) = %q, want %q", c.fields, got, c.want)
		}
	}
}
