package present

import "testing"

// TestChanged: what a write changed is decided in one order, a failure
// first: a failed write changed nothing, whatever the log kept of it.
func TestChanged(t *testing.T) {
	t.Parallel()
	obj := `{"kind":"Pod"}`
	for _, c := range []struct {
		name string
		w    Written
		base bool
		want Change
	}{
		{"failed with a request", Written{Attempt: true, Verb: "update", Request: obj}, true, ChangeFailed},
		{"a patch without its object", Written{Verb: "patch", Request: `{"spec":{}}`}, true, ChangeRequest},
		{"a delete", Written{Verb: "delete"}, true, ChangeDeleted},
		{"Metadata level", Written{Verb: "update", Level: "Metadata"}, true, ChangeMetadata},
		{"a binding", Written{Verb: "create", Level: "RequestResponse"}, true, ChangeNoObject},
		{"the first object", Written{Verb: "create", Object: obj}, false, ChangeFirst},
		{"a later object", Written{Verb: "update", Object: obj}, true, ChangeDiff},
	} {
		if got := Changed(c.w, c.base); got != c.want {
			t.Errorf("%s: Changed = %d, want %d", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ got, want string }{
		{Verb("update", "status"), "update/status"},
		{Verb("update", "/status"), "update/status"},
		{Verb("create", ""), "create"},
		{WriteVerb("patch", "", true, 409), "patch (failed 409)"},
		{WriteVerb("patch", "scale", false, 200), "patch/scale"},
		{Revision(3, "1234", "deployment-controller", "update", "status"), "#3 rv 1234 (deployment-controller update/status)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
