package instrument

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationError describes a trace-context annotation that could not be read.
// The annotation is treated as absent; see Parse.
type AnnotationError struct {
	Key    string // KeyCPID, KeyAncestors or KeyTraceparent
	Len    int    // length of the value, which is not repeated: it may be huge
	Reason string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s (%d bytes): %s", e.Key, e.Len, e.Reason)
}

// Extract reads the trace context of obj from its annotations. An object
// without the annotations has the zero Context and no error; malformed
// annotations are handled as Parse describes.
func Extract(obj metav1.Object) (Context, error) {
	if obj == nil {
		return Context{}, nil
	}
	return ExtractAnnotations(obj.GetAnnotations())
}

// ExtractAnnotations is Extract over an annotation map, which may be nil.
// A KeyTraceparent that is not a W3C traceparent is left out of the
// Context, with an *AnnotationError for it when nothing else was wrong.
func ExtractAnnotations(m map[string]string) (Context, error) {
	var c Context
	var err error
	if cpid, ok := m[KeyCPID]; ok {
		c, err = Parse(cpid, m[KeyAncestors])
	}
	if v, ok := m[KeyTraceparent]; ok {
		tp, terr := ParseTraceparent(v)
		c.Trace = tp
		if terr != nil && err == nil {
			err = &AnnotationError{Key: KeyTraceparent, Len: len(v), Reason: terr.Error()}
		}
	}
	return c, err
}

// Inject writes c into the annotations of obj, replacing any trace context
// there. An empty ancestor list removes KeyAncestors, and a Context without
// a CPID removes both keys, so that no stale ancestors are ever paired with
// a CPID. c's Trace is written to KeyTraceparent when it has one; a
// traceparent already there is otherwise left alone (it is the traced
// client's, not cpid's).
//
// Inject changes obj: inject into a copy, never into an object shared with an
// informer cache.
func Inject(obj metav1.Object, c Context) {
	m := obj.GetAnnotations()
	if m == nil && c.IsZero() && c.Trace.IsZero() {
		return
	}
	obj.SetAnnotations(InjectAnnotations(m, c))
}

// InjectAnnotations writes c into m as Inject does and returns m, or a new
// map when m is nil and there is something to write.
func InjectAnnotations(m map[string]string, c Context) map[string]string {
	if m == nil && !(c.IsZero() && c.Trace.IsZero()) {
		m = make(map[string]string, 3)
	}
	if !c.Trace.IsZero() {
		m[KeyTraceparent] = c.Trace.String()
	}
	if c.IsZero() {
		delete(m, KeyCPID)
		delete(m, KeyAncestors)
		return m
	}
	cpid, anc := c.Format()
	m[KeyCPID] = cpid
	if anc == "" {
		delete(m, KeyAncestors)
	} else {
		m[KeyAncestors] = anc
	}
	return m
}
