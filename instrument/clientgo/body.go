package clientgo

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/cpid-dev/cpid/instrument"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// bodyKind is how a request body is edited.
type bodyKind int

const (
	// bodyObject is a whole object, the body of a create or an update: the
	// stale ancestors annotation is removed by leaving it out.
	bodyObject bodyKind = iota
	// bodyMergePatch is a JSON merge patch or a strategic merge patch: it is
	// removed by setting it to null.
	bodyMergePatch
	// bodyApply is a server-side apply configuration: leaving it out
	// releases it, which removes it when this manager owned it.
	bodyApply
)

var errNotObject = errors.New("body is not a JSON object with an object as metadata")

// doc is a JSON object body, decoded only as deep as the annotations: every
// other value keeps its bytes (numbers keep their precision), though not
// their order or white space.
type doc struct {
	top  map[string]json.RawMessage
	meta map[string]json.RawMessage
	ann  map[string]*string // nil values are JSON nulls, in patches
}

func parseDoc(b []byte) (*doc, error) {
	d := &doc{}
	if err := json.Unmarshal(b, &d.top); err != nil || d.top == nil {
		return nil, errNotObject
	}
	if raw, ok := d.top["metadata"]; ok {
		if err := json.Unmarshal(raw, &d.meta); err != nil || d.meta == nil {
			return nil, errNotObject
		}
	}
	if raw, ok := d.meta["annotations"]; ok {
		if err := json.Unmarshal(raw, &d.ann); err != nil {
			return nil, errNotObject
		}
	}
	return d, nil
}

// str returns the string at key of m, or "".
func str(m map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := m[key]; ok {
		_ = json.Unmarshal(raw, &s) // not a string: ""
	}
	return s
}

// editable is a body the stamper reads and edits: JSON, or protobuf.
type editable interface {
	fields(t *instrument.Tracer) fields
	set(c instrument.Context, kind bodyKind)
	encode() ([]byte, error)
}

// parseBody parses a body of kind.
func parseBody(b []byte, kind bodyKind) (editable, error) {
	if kind == bodyObject && bytes.HasPrefix(b, protoMagic) {
		d, err := parseProto(b)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	d, err := parseDoc(b)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *doc) fields(t *instrument.Tracer) fields {
	f := fields{
		ref: instrument.ObjectRef{
			APIVersion: str(d.top, "apiVersion"),
			Kind:       str(d.top, "kind"),
			Namespace:  str(d.meta, "namespace"),
			Name:       str(d.meta, "name"),
			UID:        types.UID(str(d.meta, "uid")),
		},
		owners: d.owners(),
	}
	if cpid, ok := d.ann[instrument.KeyCPID]; ok && cpid != nil {
		m := map[string]string{instrument.KeyCPID: *cpid}
		if anc := d.ann[instrument.KeyAncestors]; anc != nil {
			m[instrument.KeyAncestors] = *anc
		}
		if tp := d.ann[instrument.KeyTraceparent]; tp != nil {
			m[instrument.KeyTraceparent] = *tp
		}
		f.own, f.hasOwn = t.ExtractAnnotations(m), true
	}
	return f
}

// owners returns the body's owner references, if it has valid ones.
func (d *doc) owners() []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	if raw, ok := d.meta["ownerReferences"]; ok {
		if err := json.Unmarshal(raw, &refs); err != nil {
			return nil
		}
	}
	return refs
}

// set writes c into the annotations.
func (d *doc) set(c instrument.Context, kind bodyKind) {
	if d.ann == nil {
		d.ann = make(map[string]*string, 2)
	}
	cpid, anc := c.Format()
	d.ann[instrument.KeyCPID] = &cpid
	if !c.Trace.IsZero() {
		tp := c.Trace.String()
		d.ann[instrument.KeyTraceparent] = &tp
	}
	switch {
	case anc != "":
		d.ann[instrument.KeyAncestors] = &anc
	case kind == bodyMergePatch:
		d.ann[instrument.KeyAncestors] = nil
	default:
		delete(d.ann, instrument.KeyAncestors)
	}
}

// encode returns the body with its edited annotations.
func (d *doc) encode() ([]byte, error) {
	ann, err := marshal(d.ann)
	if err != nil {
		return nil, err
	}
	if d.meta == nil {
		d.meta = make(map[string]json.RawMessage, 1)
	}
	d.meta["annotations"] = ann
	if d.top["metadata"], err = marshal(d.meta); err != nil {
		return nil, err
	}
	return marshal(d.top)
}

// marshal is json.Marshal without escaping <, > and &, which the apiserver
// does not need and the caller did not ask for.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
