package instrument

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationError describes a trace-context annotation that could not be read.
// The annotation is treated as absent; see Parse.
type AnnotationError struct {
	Key    string // KeyCPID or KeyAncestors
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
func ExtractAnnotations(m map[string]string) (Context, error) {
	cpid, ok := m[KeyCPID]
	if !ok {
		return Context{}, nil
	}
	return Parse(cpid, m[KeyAncestors])
}

// Inject writes c into the annotations of obj, replacing any trace context
// there. An empty ancestor list removes KeyAncestors, and the zero Context
// removes both keys, so that no stale ancestors are ever paired with a CPID.
//
// Inject changes obj: inject into a copy, never into an object shared with an
// informer cache.
func Inject(obj metav1.Object, c Context) {
	m := obj.GetAnnotations()
	if m == nil && c.IsZero() {
		return
	}
	obj.SetAnnotations(InjectAnnotations(m, c))
}

// InjectAnnotations writes c into m as Inject does and returns m, or a new
// map when m is nil and there is something to write.
func InjectAnnotations(m map[string]string, c Context) map[string]string {
	if c.IsZero() {
		delete(m, KeyCPID)
		delete(m, KeyAncestors)
		return m
	}
	if m == nil {
		m = make(map[string]string, 2)
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
