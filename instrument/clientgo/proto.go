package clientgo

import (
	"bytes"
	"errors"

	"github.com/cpid-dev/cpid/instrument"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protoMagic starts every Kubernetes protobuf body, before a runtime.Unknown
// envelope whose Raw is the object.
var protoMagic = []byte("k8s\x00")

// Field numbers of the Kubernetes protobuf encoding: every top-level object
// has its ObjectMeta as field 1.
const (
	protoObjectMeta  = 1
	protoAnnotations = 12 // in ObjectMeta: map entries {1: key, 2: value}
)

var errNotProto = errors.New("body is not a Kubernetes protobuf object")

// protoDoc is a protobuf body (client-go's default for built-in types),
// decoded only as deep as the metadata. The annotations are edited on the
// wire, so that every other field keeps its bytes, unknown ones included.
type protoDoc struct {
	env  runtime.Unknown
	pre  []byte // env.Raw before the metadata field
	post []byte // env.Raw after it
	meta []byte // the metadata message
	om   metav1.ObjectMeta
	c    instrument.Context // what encode writes
}

func parseProto(b []byte) (*protoDoc, error) {
	if !bytes.HasPrefix(b, protoMagic) {
		return nil, errNotProto
	}
	d := &protoDoc{}
	if err := d.env.Unmarshal(b[len(protoMagic):]); err != nil || d.env.ContentEncoding != "" {
		return nil, errNotProto
	}
	raw, found := d.env.Raw, false
	for i := 0; i < len(raw); {
		num, typ, n := protowire.ConsumeTag(raw[i:])
		if n < 0 {
			return nil, errNotProto
		}
		m := protowire.ConsumeFieldValue(num, typ, raw[i+n:])
		if m < 0 {
			return nil, errNotProto
		}
		if num == protoObjectMeta {
			if found || typ != protowire.BytesType {
				return nil, errNotProto // metadata split in parts: leave it alone
			}
			v, _ := protowire.ConsumeBytes(raw[i+n:])
			d.pre, d.meta, d.post, found = raw[:i], v, raw[i+n+m:], true
		}
		i += n + m
	}
	if !found {
		d.pre = raw
	}
	if err := d.om.Unmarshal(d.meta); err != nil {
		return nil, errNotProto
	}
	return d, nil
}

func (d *protoDoc) fields(t *instrument.Tracer) fields {
	f := fields{
		ref: instrument.ObjectRef{APIVersion: d.env.APIVersion, Kind: d.env.Kind,
			Namespace: d.om.Namespace, Name: d.om.Name, UID: d.om.UID},
		owners: d.om.OwnerReferences,
	}
	if _, ok := d.om.Annotations[instrument.KeyCPID]; ok {
		f.own, f.hasOwn = t.ExtractAnnotations(d.om.Annotations), true
	}
	return f
}

func (d *protoDoc) set(c instrument.Context, _ bodyKind) { d.c = c }

func (d *protoDoc) encode() ([]byte, error) {
	// The metadata without our annotations, then ours.
	var meta []byte
	for i := 0; i < len(d.meta); {
		num, typ, n := protowire.ConsumeTag(d.meta[i:])
		m := protowire.ConsumeFieldValue(num, typ, d.meta[i+n:])
		if n < 0 || m < 0 {
			return nil, errNotProto
		}
		if num != protoAnnotations || !ours(d.meta[i+n:i+n+m], !d.c.Trace.IsZero()) {
			meta = append(meta, d.meta[i:i+n+m]...)
		}
		i += n + m
	}
	cpid, anc := d.c.Format()
	meta = appendEntry(meta, instrument.KeyCPID, cpid)
	if anc != "" {
		meta = appendEntry(meta, instrument.KeyAncestors, anc)
	}
	if !d.c.Trace.IsZero() {
		meta = appendEntry(meta, instrument.KeyTraceparent, d.c.Trace.String())
	}

	raw := append([]byte(nil), d.pre...)
	raw = protowire.AppendTag(raw, protoObjectMeta, protowire.BytesType)
	raw = protowire.AppendBytes(raw, meta)
	raw = append(raw, d.post...)
	env := d.env
	env.Raw = raw
	out, err := env.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), protoMagic...), out...), nil
}

// ours reports whether an annotations map entry (a field value, length
// prefixed) holds one of the trace-context keys: cpid's, and with trace
// KeyTraceparent too.
func ours(v []byte, trace bool) bool {
	entry, n := protowire.ConsumeBytes(v)
	if n < 0 {
		return false
	}
	for i := 0; i < len(entry); {
		num, typ, n := protowire.ConsumeTag(entry[i:])
		if n < 0 {
			return false
		}
		if num == 1 && typ == protowire.BytesType {
			k, _ := protowire.ConsumeBytes(entry[i+n:])
			return string(k) == instrument.KeyCPID || string(k) == instrument.KeyAncestors ||
				trace && string(k) == instrument.KeyTraceparent
		}
		m := protowire.ConsumeFieldValue(num, typ, entry[i+n:])
		if m < 0 {
			return false
		}
		i += n + m
	}
	return false
}

func appendEntry(b []byte, k, v string) []byte {
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, k)
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendString(e, v)
	b = protowire.AppendTag(b, protoAnnotations, protowire.BytesType)
	return protowire.AppendBytes(b, e)
}
