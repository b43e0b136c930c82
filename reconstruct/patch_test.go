package reconstruct

import "testing"

func TestApplyPatch(t *testing.T) {
	prev := `{"metadata":{"name":"web","labels":{"a":"1","b":"2"}},"spec":{"replicas":3,"list":[1,2,3]}}`
	for _, c := range []struct {
		name, patch, want string
		err               bool
	}{
		{"merge patch: set, delete, nest", `{"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"replicas":5}}`,
			`{"metadata":{"labels":{"b":"2","c":"3"},"name":"web"},"spec":{"list":[1,2,3],"replicas":5}}`, false},
		{"merge patch replaces lists", `{"spec":{"list":[9]}}`,
			`{"metadata":{"labels":{"a":"1","b":"2"},"name":"web"},"spec":{"list":[9],"replicas":3}}`, false},
		{"strategic directives dropped", `{"$setElementOrder/list":[1],"spec":{"replicas":1}}`,
			`{"metadata":{"labels":{"a":"1","b":"2"},"name":"web"},"spec":{"list":[1,2,3],"replicas":1}}`, false},
		{"json patch ops", `[{"op":"replace","path":"/spec/replicas","value":7},{"op":"add","path":"/spec/list/1","value":0},
			{"op":"remove","path":"/metadata/labels/a"},{"op":"add","path":"/metadata/labels/x~1y","value":"z"},
			{"op":"test","path":"/metadata/name","value":"web"},{"op":"copy","from":"/spec/replicas","path":"/spec/copy"}]`,
			`{"metadata":{"labels":{"b":"2","x/y":"z"},"name":"web"},"spec":{"copy":7,"list":[1,0,2,3],"replicas":7}}`, false},
		{"json patch append and remove from list", `[{"op":"add","path":"/spec/list/-","value":4},{"op":"remove","path":"/spec/list/0"}]`,
			`{"metadata":{"labels":{"a":"1","b":"2"},"name":"web"},"spec":{"list":[2,3,4],"replicas":3}}`, false},
		{"failed test", `[{"op":"test","path":"/metadata/name","value":"other"}]`, "", true},
		{"replace of missing", `[{"op":"replace","path":"/spec/missing","value":1}]`, "", true},
		{"not a patch", `"x"`, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ApplyPatch([]byte(prev), []byte(c.patch))
			if (err != nil) != c.err {
				t.Fatalf("err = %v", err)
			}
			if !c.err && string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
