package present

import (
	"fmt"
	"strings"
)

// Change is what one write changed of its object, as far as the audit log
// can tell: the one decision behind cpid-tui history --diff, the TUI's
// revisions view and the report's revisions, each of which words it in
// its own place.
type Change int

// What a write changed, in the order Changed decides it.
const (
	// ChangeFailed: the write failed; it changed nothing.
	ChangeFailed Change = iota
	// ChangeRequest: no object stored, but the request body (a patch) was.
	ChangeRequest
	// ChangeDeleted: a delete, which stores no object.
	ChangeDeleted
	// ChangeMetadata: audited at Metadata level, without any body.
	ChangeMetadata
	// ChangeNoObject: no object stored (a binding's, a Scale's or a
	// Status's response, or a truncated event).
	ChangeNoObject
	// ChangeFirst: the first object stored of the object, shown whole.
	ChangeFirst
	// ChangeDiff: the object against the closest earlier one stored
	// (ObjectDiff; nil when only resourceVersion and managedFields
	// changed).
	ChangeDiff
)

// Written is what Changed reads of a write: its outcome, verb, audit
// level and the bodies the audit log kept (cpid.Revision's and
// cpid.ObjectWrite's fields of those names).
type Written struct {
	Attempt bool
	Verb    string
	Level   string
	Object  string
	Request string
}

// Changed decides what write w changed, base saying whether an earlier
// write of its object stored the object.
func Changed(w Written, base bool) Change {
	switch {
	case w.Attempt:
		return ChangeFailed
	case w.Object == "" && w.Request != "":
		return ChangeRequest
	case w.Object == "" && w.Verb == "delete":
		return ChangeDeleted
	case w.Object == "" && w.Level == "Metadata":
		return ChangeMetadata
	case w.Object == "":
		return ChangeNoObject
	case !base:
		return ChangeFirst
	}
	return ChangeDiff
}

// Verb is a write's verb with its subresource: update/status, create.
func Verb(verb, sub string) string {
	if sub == "" {
		return verb
	}
	return verb + "/" + strings.TrimPrefix(sub, "/")
}

// WriteVerb is a write's Verb as a timeline lists it, with the code of a
// write that failed: patch (failed 409).
func WriteVerb(verb, sub string, failed bool, code int) string {
	if failed {
		return fmt.Sprintf("%s (failed %d)", Verb(verb, sub), code)
	}
	return Verb(verb, sub)
}

// Revision names one revision of an object, as a diff says what it
// compares: #3 rv 1234 (deployment-controller update/status).
func Revision(seq int, resourceVersion, writer, verb, sub string) string {
	return fmt.Sprintf("#%d rv %s (%s %s)", seq, resourceVersion, writer, Verb(verb, sub))
}
