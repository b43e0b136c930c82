package instrument

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
)

// Context is a trace context: the CPID of a change and the CPIDs it is known
// to descend from, closest first. The zero Context means "no trace context".
type Context struct {
	CPID ID
	// Ancestors lists ancestor CPIDs of CPID, closest first. It is a hint:
	// it may hold only some ancestors, but every CPID in it is an ancestor.
	Ancestors []ID
	// Trace is the W3C trace context the object carries in KeyTraceparent
	// (KEP-5915), zero when none: the span of a traced client or
	// controller that wrote it. cpid does not start OpenTelemetry spans of
	// its own, so Merge carries a cause's Trace on unchanged and what a
	// traced client started keeps its trace id downstream. It is a hint:
	// an object's own trace stays when an untraced cause merges into it;
	// reconstruct ties a change to a trace by its root write alone.
	Trace Traceparent
}

// IsZero reports whether c carries no CPID.
func (c Context) IsZero() bool { return c.CPID.IsZero() }

// Format returns the values of KeyCPID and KeyAncestors for c. Both are
// empty for the zero Context; ancestors is empty when c has none.
func (c Context) Format() (cpid, ancestors string) {
	if c.IsZero() {
		return "", ""
	}
	// One allocation for both strings: the ancestors follow the CPID.
	n := 36
	if len(c.Ancestors) > 0 {
		n += 37*len(c.Ancestors) - 1
	}
	var b strings.Builder
	b.Grow(n)
	var tmp [36]byte
	c.CPID.put(&tmp)
	b.Write(tmp[:])
	for i, a := range c.Ancestors {
		if i > 0 {
			b.WriteByte(',')
		}
		a.put(&tmp)
		b.Write(tmp[:])
	}
	s := b.String()
	return s[:36], s[36:]
}

// String returns c as "cpid[ancestor,...]", for humans.
func (c Context) String() string {
	cpid, anc := c.Format()
	return cpid + "[" + anc + "]"
}

// Parse reads a trace context from the values of KeyCPID and KeyAncestors.
//
// An empty cpid gives the zero Context and no error, whatever ancestors is.
// A cpid that is not a UUID gives the zero Context and an *AnnotationError
// for KeyCPID. An ancestors value with an entry that is not a UUID, an entry
// equal to the CPID itself, or more than MaxAncestorsLimit entries gives the
// Context with the CPID, no ancestors, and an *AnnotationError for
// KeyAncestors: ancestors are a hint, so losing them is always safe.
func Parse(cpid, ancestors string) (Context, error) {
	if cpid == "" {
		return Context{}, nil
	}
	id, err := ParseID(strings.TrimSpace(cpid))
	if err != nil {
		return Context{}, &AnnotationError{Key: KeyCPID, Len: len(cpid), Reason: err.Error()}
	}
	c := Context{CPID: id}
	anc, reason := parseAncestors(id, ancestors)
	if reason != "" {
		return c, &AnnotationError{Key: KeyAncestors, Len: len(ancestors), Reason: reason}
	}
	c.Ancestors = anc
	return c, nil
}

// maxAncestorsLen is the longest KeyAncestors value Parse reads, allowing a
// space after each comma.
const maxAncestorsLen = MaxAncestorsLimit * 38

func parseAncestors(self ID, s string) ([]ID, string) {
	if len(s) > maxAncestorsLen {
		return nil, "oversized"
	}
	if strings.TrimSpace(s) == "" {
		return nil, ""
	}
	n := strings.Count(s, ",") + 1
	if n > MaxAncestorsLimit {
		return nil, "oversized"
	}
	out := make([]ID, 0, n)
	for s != "" {
		var part string
		if len(s) == 36 || len(s) > 36 && s[36] == ',' {
			// The canonical form, as Inject writes it.
			part, s = s[:36], s[min(37, len(s)):]
		} else {
			part, s, _ = strings.Cut(s, ",")
			part = strings.TrimSpace(part)
		}
		id, err := ParseID(part)
		if err != nil {
			return nil, "entry " + strconv.Itoa(len(out)) + ": " + err.Error()
		}
		if id == self {
			return nil, "lists the CPID itself"
		}
		out = append(out, id)
	}
	return out, ""
}

type ctxKey struct{}

// NewContext returns a copy of ctx carrying the trace context c.
func NewContext(ctx context.Context, c Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the trace context of ctx, and whether it has one.
func FromContext(ctx context.Context) (Context, bool) {
	c, ok := ctx.Value(ctxKey{}).(Context)
	return c, ok && !c.IsZero()
}

// index returns the position of id in ids, or -1.
func index(ids []ID, id ID) int {
	// Comparing two words is faster than comparing 16 bytes.
	hi, lo := binary.LittleEndian.Uint64(id[:8]), binary.LittleEndian.Uint64(id[8:])
	for i := range ids {
		if binary.LittleEndian.Uint64(ids[i][8:]) == lo && binary.LittleEndian.Uint64(ids[i][:8]) == hi {
			return i
		}
	}
	return -1
}
