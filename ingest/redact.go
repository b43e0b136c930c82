package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// Rule names the members removed from the bodies of one kind of object
// before an audit event is stored. A rule applies to every body of a request
// on its resource (objectRef.resource and subresource), to every element of
// a list or table answering one, and to every object of its kind found
// anywhere in any body, last-applied-configuration annotations included.
type Rule struct {
	// Resource is the plural resource the request names ("secrets").
	Resource string
	// Subresource limits the rule to one subresource ("token"); empty, the
	// rule covers the resource and all its subresources.
	Subresource string
	// Kind is the kind of objects that carry the members ("Secret").
	Kind string
	// Group is the API group of both, "" for the core group, "*" for any.
	Group string
	// Paths are the members removed, each a path of member names from the
	// object's root ({"status", "token"}); arrays on the way are entered
	// element by element. Names match case-insensitively.
	Paths [][]string

	custom bool         // from ParseRule: the kind also matches case-insensitively
	own    []memberPath // Paths plus the rule's metadata paths
	top    []memberPath // own, plus the same under items[] and rows[].object
}

// memberPath is a member path; a path of one name removes that member.
type memberPath []string

// lastApplied is the annotation where kubectl apply keeps the whole object,
// credentials included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// redactedValue replaces a private key that is removed from a string.
const redactedValue = "[private key redacted by cpid]"

// builtinRules is every credential the Kubernetes API carries in a body.
// Group "*": a custom resource named like one of these is redacted too.
var builtinRules = []Rule{
	{Resource: "secrets", Kind: "Secret", Group: "*", Paths: [][]string{{"data"}, {"stringData"}}},
	{Resource: "serviceaccounts", Subresource: "token", Kind: "TokenRequest", Group: "*", Paths: [][]string{{"status", "token"}}},
	{Resource: "tokenreviews", Kind: "TokenReview", Group: "*", Paths: [][]string{{"spec", "token"}}},
}

// Redaction removes credentials from audit bodies before they are stored:
// the members its rules name, and PEM private-key blocks (plain or base64)
// in any string of any body. The zero value is not usable; DefaultRedaction
// has the built-in rules.
type Redaction struct {
	rules []Rule
	// always walks every body: custom kinds match case-insensitively, so
	// no cheap byte search can rule them out.
	always bool
}

// DefaultRedaction is NewRedaction() with no custom rule.
var DefaultRedaction = NewRedaction()

// NewRedaction returns the built-in rules plus the custom ones.
func NewRedaction(custom ...Rule) *Redaction {
	r := &Redaction{}
	for _, rule := range append(append([]Rule(nil), builtinRules...), custom...) {
		rule.prepare()
		r.rules = append(r.rules, rule)
		r.always = r.always || rule.custom
	}
	return r
}

// prepare derives the paths a rule removes: its own, the last-applied
// annotation of an object of its kind (which holds the whole object), and
// its paths in managedFields (which name the keys).
func (r *Rule) prepare() {
	r.own = []memberPath{{"metadata", "annotations", lastApplied}}
	for _, p := range r.Paths {
		r.own = append(r.own, memberPath(p))
		fields := memberPath{"metadata", "managedFields", "fieldsV1"}
		for _, n := range p {
			fields = append(fields, "f:"+n)
		}
		r.own = append(r.own, fields)
	}
	r.top = append([]memberPath(nil), r.own...)
	for _, p := range r.own {
		r.top = append(r.top, append(memberPath{"items"}, p...), append(memberPath{"rows", "object"}, p...))
	}
}

// ParseRule parses a --redact value: NAME[.GROUP][/SUBRESOURCE]:PATH, where
// NAME is the plural resource or the kind (sealedsecrets or SealedSecret),
// GROUP the API group (none for the core group) and PATH dot-separated
// member names (spec.encryptedData; a leading dot, {…} and [*] are
// accepted, as in kubectl's jsonpath).
func ParseRule(s string) (Rule, error) {
	ref, p, ok := strings.Cut(s, ":")
	if !ok || ref == "" || p == "" {
		return Rule{}, fmt.Errorf("redact rule %q: want NAME[.GROUP][/SUBRESOURCE]:PATH, e.g. sealedsecrets.bitnami.com:spec.encryptedData", s)
	}
	ref, sub, _ := strings.Cut(ref, "/")
	name, group, _ := strings.Cut(ref, ".")
	p = strings.TrimSuffix(strings.TrimPrefix(p, "{"), "}")
	p = strings.TrimPrefix(p, ".")
	var segs []string
	for seg := range strings.SplitSeq(p, ".") {
		seg = strings.TrimSuffix(strings.TrimSuffix(seg, "[*]"), "[]")
		if seg == "" || strings.ContainsAny(seg, "[]*{}") {
			return Rule{}, fmt.Errorf("redact rule %q: path %q: want member names separated by dots", s, p)
		}
		segs = append(segs, seg)
	}
	return Rule{Resource: strings.ToLower(name), Subresource: sub, Kind: name, Group: group, Paths: [][]string{segs}, custom: true}, nil
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	s := r.Kind
	if r.Group != "" && r.Group != "*" {
		s += "." + r.Group
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	var ps []string
	for _, p := range r.Paths {
		ps = append(ps, strings.Join(p, "."))
	}
	return s + ":" + strings.Join(ps, ",")
}

// request reports whether the rule covers a request on the resource.
func (r *Rule) request(resource, subresource, group string) bool {
	return strings.EqualFold(resource, r.Resource) &&
		(r.Subresource == "" || strings.EqualFold(subresource, r.Subresource)) &&
		(r.Group == "*" || group == r.Group)
}

// kind reports whether the rule covers an object of the kind and apiVersion.
func (r *Rule) kind(kind, apiVersion []byte) bool {
	switch {
	case string(kind) == r.Kind:
	case !r.custom:
		return false
	case !bytes.EqualFold(kind, []byte(r.Kind)) && !strings.EqualFold(plural(string(kind)), r.Kind):
		return false
	}
	if r.Group == "*" {
		return true
	}
	group, _, ok := bytes.Cut(apiVersion, []byte("/"))
	if !ok {
		group = nil // "v1": the core group
	}
	return string(group) == r.Group
}

// plural guesses a kind's resource the way most CRDs name it.
func plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

// Body returns body without the credentials it holds, and whether anything
// was removed; body itself when nothing was. body is the JSON request or
// response object of a request on the resource (compact or not). A JSON
// patch (a non-empty array) on a resource with a rule is dropped whole
// (nil): it can carry a credential under any path.
func (rd *Redaction) Body(resource, subresource, group string, body []byte) ([]byte, bool) {
	if len(body) == 0 {
		return body, false
	}
	// Validated, compacted and indexed as the one member of an object, as
	// the decoder has every body.
	d := getDoc(nil)
	defer d.Release()
	if err := d.parse(append(append([]byte(`{"b":`), body...), '}')); err != nil || len(d.Members) != 1 {
		return body, false
	}
	m := d.Members[0]
	out, changed := rd.body(d.Buf, m.Val(), d.Index, resource, subresource, group)
	if !changed {
		return body, false
	}
	return out, true
}

// body is Body for the value b[v] of a decoded line whose large containers
// are in x. The result aliases b when nothing was removed.
func (rd *Redaction) body(b []byte, v span, x index, resource, subresource, group string) ([]byte, bool) {
	if !v.OK() {
		return nil, false
	}
	var top []memberPath
	for i := range rd.rules {
		if rd.rules[i].request(resource, subresource, group) {
			top = append(top, rd.rules[i].top...)
		}
	}
	val := b[v.S:v.E:v.E]
	if top != nil && val[0] == '[' {
		if len(val) > 2 {
			return nil, true
		}
		return val, false
	}
	if top == nil && !rd.always && !rd.suspect(val) {
		return val, false
	}
	w := walker{rd: rd, b: b, x: x}
	out, changed := w.walk(make([]byte, 0, len(val)), v.S, v.E, top)
	if !changed {
		return val, false
	}
	return out, true
}

// suspect reports whether body may hold something a rule removes: a kind
// with a rule, a private key or an escape that could hide either. Most
// bodies hold none, and are not walked.
func (rd *Redaction) suspect(body []byte) bool {
	if bytes.Contains(body, []byte("PRIVATE")) || bytes.Contains(body, []byte(`\u`)) ||
		bytes.Contains(body, []byte(pemBase64)) {
		return true
	}
	for i := range rd.rules {
		if bytes.Contains(body, []byte(rd.rules[i].Kind)) {
			return true
		}
	}
	return false
}

// walker copies the values of one compact buffer without what the
// redaction removes. x indexes the buffer's large containers, so that a
// value is scanned a bounded number of times however deep it is nested.
type walker struct {
	rd *Redaction
	b  []byte
	x  index
}

// walk appends b[s:e] to dst without what the pending paths and the rules
// of the objects inside it remove, and reports whether anything was.
func (w *walker) walk(dst []byte, s, e int, pending []memberPath) ([]byte, bool) {
	b := w.b
	switch b[s] {
	case '{':
		return w.object(dst, s, e, pending)
	case '[':
		changed := false
		dst = append(dst, '[')
		for i, first := s+1, true; b[i] != ']'; first = false {
			end := w.x.Skip(b, i)
			if !first {
				dst = append(dst, ',')
			}
			var c bool
			dst, c = w.walk(dst, i, end, pending)
			changed = changed || c
			if i = end; b[i] == ',' {
				i++
			}
		}
		return append(dst, ']'), changed
	case '"':
		if out, ok := redactString(b[s:e]); ok {
			return append(dst, out...), true
		}
	}
	return append(dst, b[s:e]...), false
}

// object is walk for an object: the paths of the rules whose kind it has
// join the pending ones.
func (w *walker) object(dst []byte, s, e int, pending []memberPath) ([]byte, bool) {
	b := w.b
	paths := pending
	var kinds, versions [][]byte
	var m member
	for it := w.x.Members(b, s); it.Next(&m); {
		switch string(m.Key(b)) {
		case "kind":
			if v, ok := jsonscan.String(b, m.Val()); ok {
				kinds = append(kinds, v)
			}
		case "apiVersion":
			if v, ok := jsonscan.String(b, m.Val()); ok {
				versions = append(versions, v)
			}
		}
	}
	for i := range w.rd.rules {
		if w.rd.rules[i].anyKind(kinds, versions) {
			paths = append(paths[:len(paths):len(paths)], w.rd.rules[i].own...)
		}
	}
	changed := false
	open := len(dst)
	dst = append(dst, '{')
	var tails []memberPath
members:
	for it := w.x.Members(b, s); it.Next(&m); {
		key := m.Key(b)
		tails = tails[:0]
		for _, p := range paths {
			if bytes.EqualFold([]byte(p[0]), key) {
				if len(p) == 1 {
					changed = true
					continue members
				}
				tails = append(tails, p[1:])
			}
		}
		if len(dst) > open+1 {
			dst = append(dst, ',')
		}
		dst = append(dst, b[m.Start:m.ValStart]...)
		var c bool
		if b[m.ValStart] == '"' && bytes.EqualFold(key, []byte(lastApplied)) {
			var nv []byte
			nv, c = w.rd.embedded(b[m.ValStart:m.ValEnd])
			dst = append(dst, nv...)
		} else {
			dst, c = w.walk(dst, m.ValStart, m.ValEnd, tails)
		}
		changed = changed || c
	}
	return append(dst, '}'), changed
}

// anyKind reports whether any of the kinds (with any of the apiVersions)
// is the rule's: an object that names its kind twice is covered by either.
func (r *Rule) anyKind(kinds, versions [][]byte) bool {
	if len(versions) == 0 {
		versions = [][]byte{nil}
	}
	for _, k := range kinds {
		for _, v := range versions {
			if r.kind(k, v) {
				return true
			}
		}
	}
	return false
}

// embedded redacts the object that a last-applied-configuration string
// holds, and returns the string again (re-encoded only when changed). A
// string that is not a JSON object is treated as any other string.
func (rd *Redaction) embedded(raw []byte) ([]byte, bool) {
	s, _ := jsonscan.String(raw, span{S: 0, E: len(raw)})
	d := getDoc(nil)
	defer d.Release()
	if d.parse(trimSpace(s)) != nil {
		if out, ok := redactString(raw); ok {
			return out, true
		}
		return raw, false
	}
	w := walker{rd: rd, b: d.Buf, x: d.Index}
	out, changed := w.walk(nil, 0, len(d.Buf), nil)
	if !changed {
		return raw, false
	}
	return quote(string(out)), true
}

// pemKey matches a PEM private-key block, up to its end line or, when that
// is missing, to the end of the string.
var pemKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)

// pemBase64 is how "-----BEGIN" starts in base64.
const pemBase64 = "LS0tLS1CRUdJT"

// redactString returns the JSON string raw with every PEM private-key block
// replaced, and the whole string replaced when it is base64 of text that
// holds one; ok is false when nothing was replaced.
func redactString(raw []byte) (out []byte, ok bool) {
	if !bytes.Contains(raw, []byte("PRIVATE")) && !bytes.Contains(raw, []byte(pemBase64)) &&
		!bytes.Contains(raw, []byte(`\u`)) {
		return nil, false
	}
	s, _ := jsonscan.String(raw, span{S: 0, E: len(raw)})
	if t := bytes.TrimSpace(s); bytes.HasPrefix(t, []byte(pemBase64)) && pemKey.Match(base64Prefix(t)) {
		return quote(redactedValue), true
	}
	if !pemKey.Match(s) {
		return nil, false
	}
	return quote(string(pemKey.ReplaceAll(s, []byte(redactedValue)))), true
}

// base64Prefix decodes as much of s as is valid standard base64, line
// breaks and spaces left out.
func base64Prefix(s []byte) []byte {
	clean := make([]byte, 0, len(s))
	for _, c := range s {
		if !isSpace(c) {
			clean = append(clean, c)
		}
	}
	clean = clean[:len(clean)/4*4]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, _ := base64.StdEncoding.Decode(out, clean)
	return out[:n]
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// orDefault is red, or DefaultRedaction when red is nil.
func orDefault(red *Redaction) *Redaction {
	if red == nil {
		return DefaultRedaction
	}
	return red
}
