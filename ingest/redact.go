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
// Resources and kinds match case-insensitively.
type Rule struct {
	// Resource is the plural resource the request names ("secrets").
	Resource string
	// Subresource limits the rule to one subresource ("token"); empty, the
	// rule covers the resource and all its subresources.
	Subresource string
	// Kind is the kind of objects that carry the members ("Secret"); a
	// rule from ParseRule also matches a kind whose plural is Kind.
	Kind string
	// Group is the API group of both, "" for the core group, "*" for any.
	Group string
	// Paths are the members removed, each a path of member names from the
	// object's root ({"status", "token"}); arrays on the way are entered
	// element by element. Names match case-insensitively.
	Paths [][]string

	custom bool         // from ParseRule: Kind may be the plural resource
	own    []memberPath // Paths plus the rule's metadata paths
	top    []memberPath // own, plus the same under items[] and rows[].object
}

// memberPath is a member path; a path of one name removes that member.
type memberPath []string

// lastApplied is the annotation where kubectl apply keeps the whole object,
// credentials included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// What replaces a credential removed from a string: a private key, a
// bearer token or JWT, and a kubeconfig's or an env var's value.
const (
	redactedValue      = "[private key redacted by cpid]"
	redactedToken      = "[token redacted by cpid]"
	redactedCredential = "[credential redacted by cpid]"
)

// builtinRules is every credential the Kubernetes API carries in a body.
// Group "*": a custom resource named like one of these is redacted too.
var builtinRules = []Rule{
	{Resource: "secrets", Kind: "Secret", Group: "*", Paths: [][]string{{"data"}, {"stringData"}}},
	{Resource: "serviceaccounts", Subresource: "token", Kind: "TokenRequest", Group: "*", Paths: [][]string{{"status", "token"}}},
	{Resource: "tokenreviews", Kind: "TokenReview", Group: "*", Paths: [][]string{{"spec", "token"}}},
}

// Redaction removes credentials from audit bodies and statuses before they
// are stored: the members its rules name; the value of an env var whose
// name says it holds a credential (envName); and, in any string or key,
// PEM private-key blocks (plain or base64), bearer tokens, JWTs and the
// credentials of a kubeconfig (redactText). The zero value is not usable;
// DefaultRedaction has the built-in rules.
type Redaction struct {
	rules []Rule
	// always walks every body: a custom kind also matches by its plural,
	// which kindSuspect does not look for.
	always  bool
	kinds   [][]byte // the rules' kinds, for kindSuspect
	longest int      // the bytes of the longest kind in any letter case
}

// DefaultRedaction is NewRedaction() with no custom rule.
var DefaultRedaction = NewRedaction()

// NewRedaction returns the built-in rules plus the custom ones.
func NewRedaction(custom ...Rule) *Redaction {
	r := &Redaction{}
	for _, rule := range append(append([]Rule(nil), builtinRules...), custom...) {
		rule.prepare()
		r.rules = append(r.rules, rule)
		r.kinds = append(r.kinds, []byte(rule.Kind))
		r.longest = max(r.longest, 4*len(rule.Kind))
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
	if !bytes.EqualFold(kind, []byte(r.Kind)) && (!r.custom || !strings.EqualFold(plural(string(kind)), r.Kind)) {
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
// response object of a request on the resource (compact or not), or an
// event's responseStatus with no resource. A JSON patch (a non-empty
// array) on a resource with a rule is dropped whole (nil): it can carry a
// credential under any path.
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
	text := textSuspect(val)
	if top == nil && !rd.always && !text && !rd.kindSuspect(val) && !envSuspect(val) {
		return val, false
	}
	w := walker{rd: rd, b: b, x: x, text: text}
	out, changed := w.walk(make([]byte, 0, len(val)), v.S, v.E, top, false)
	if !changed {
		return val, false
	}
	return out, true
}

// The byte searches below rule out most bodies before they are walked:
// each is true of every body that holds what the walk removes (and of a
// few more), so skipping a body they rule out changes nothing
// (FuzzDecodeAudit holds them to the walk). Each starts from a byte that is
// rare in Kubernetes bodies (K, L, a backslash, J, a space, the k of kind,
// [), since every occurrence of it costs a call.

// textSuspect reports whether the JSON text s may hold a string or key that
// redactText changes: a private key (its "KEY-----", rarer in JSON than
// "PRIVATE"), a bearer token, a JWT, a kubeconfig's credential line, or an
// escape that could hide one.
func textSuspect(s []byte) bool {
	return bytes.Contains(s, []byte("KEY-----")) || bytes.Contains(s, []byte(pemBase64)) ||
		bytes.Contains(s, []byte(`\u`)) || hasJWT(s) || hasSpaced(s)
}

// hasJWT reports whether s holds what jwt matches.
func hasJWT(s []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(s[i:], 'J')
		if j < 0 {
			return false
		}
		i += j + 1
		if i < 3 || s[i-3] != 'e' || s[i-2] != 'y' {
			continue
		}
		k := i
		for k < len(s) && isJWTByte(s[k]) {
			k++
		}
		if k > i && bytes.HasPrefix(s[k:], []byte(".eyJ")) {
			return true
		}
		i = k // an eyJ further in the run ends where this one does
	}
}

func isJWTByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// hasSpaced reports whether s holds a space after "Bearer" or "bearer",
// or after the colon of a key that kubeLine matches: what bearerToken and
// kubeLine need.
func hasSpaced(s []byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(s[i:], ' ')
		if j < 0 {
			return false
		}
		if i += j; i == 0 {
			continue
		}
		switch t := s[:i]; t[len(t)-1] {
		case 'r':
			if bytes.HasSuffix(t, []byte("earer")) && len(t) > 5 && t[len(t)-6]|0x20 == 'b' {
				return true
			}
		case ':':
			t = t[:len(t)-1]
			if bytes.HasSuffix(t, []byte("token")) || bytes.HasSuffix(t, []byte("password")) ||
				bytes.HasSuffix(t, []byte("secret")) || bytes.HasSuffix(t, []byte("key-data")) {
				return true
			}
		}
	}
}

// kindSuspect reports whether body may hold an object of a rule's kind:
// "kind", then quotes, colons, backslashes and white space (a member of
// compact JSON, or of JSON inside a string), then the kind in any letter
// case, to a quote or backslash. A kind that escapes a letter is left to
// textSuspect (\u); a custom rule's plural, to always.
func (rd *Redaction) kindSuspect(body []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], 'k') // faster than bytes.Index: k is in many words
		if j < 0 {
			return false
		}
		i += j + 1
		if !bytes.HasPrefix(body[i:], []byte("ind")) {
			continue
		}
		k := i + len("ind")
		for k < len(body) && (body[k] == '"' || body[k] == ':' || body[k] == ' ' || body[k] == '\\' ||
			body[k-1] == '\\' && (body[k] == 'n' || body[k] == 't' || body[k] == 'r')) {
			k++
		}
		// A kind of n ASCII letters is n runes of at most 4 bytes: looking
		// no further keeps a body of "kindkindkind..." linear.
		end := k
		for end < len(body) && end-k <= rd.longest && body[end] != '"' && body[end] != '\\' {
			end++
		}
		if v := body[k:end]; len(v) > 0 {
			for _, kind := range rd.kinds {
				// The first letter rules most kinds out; one beyond ASCII
				// may fold to an ASCII one (ſ is an s).
				if (v[0] >= 0x80 || v[0]|0x20 == kind[0]|0x20) && bytes.EqualFold(v, kind) {
					return true
				}
			}
		}
	}
}

// envSuspect reports whether the compact JSON body may hold an env var
// that the walk redacts. An array that is the value of a member env, in
// any letter case, is looked into when envWords finds a word in it: an
// item with a name that envName matches and a value to replace makes it
// true. An env member written otherwise (JSON inside a string: a
// last-applied configuration) makes it true whatever it holds.
func envSuspect(body []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '[')
		if j < 0 {
			return false
		}
		p := i + j
		i = p + 1
		k := p - 1
		for k > 0 && (body[k] == '"' || body[k] == ':' || body[k] == ' ' || body[k] == '\\' ||
			body[k-1] == '\\' && (body[k] == 'n' || body[k] == 't' || body[k] == 'r')) {
			k--
		}
		if k < 3 || !asciiFold(body[k-2:k+1], "env") {
			continue
		}
		if k != p-3 || body[p-1] != ':' || body[p-2] != '"' || body[k-3] != '"' || k > 3 && body[k-4] == '\\' {
			return true // not "env":[ of compact JSON
		}
		end := jsonscan.Skip(body, p)
		if !envWords(body[p:end]) {
			i = end // nor does an env list inside it hold a word
			continue
		}
		for it := jsonscan.Elems(body, p); ; {
			el, ok := it.Next()
			if !ok {
				break
			}
			if envItem(body, el.S) {
				return true
			}
		}
		if bytes.IndexByte(body[p+1:end], '[') >= 0 {
			return true // an env list inside it, looked at again, would cost its depth
		}
		i = end
	}
}

// envWords reports whether s may hold a name that envName matches. Each
// of its words has a letter that is rare in JSON, k, w or c: only where
// one of those is, in either case, is a word looked for; a letter that
// folds to k or s beyond ASCII (K, ſ) makes it true.
func envWords(s []byte) bool {
	if bytes.Contains(s, []byte("\u212a")) || bytes.Contains(s, []byte("\u017f")) {
		return true
	}
	for _, a := range envAnchors {
		for _, c := range [2]byte{a.c, a.c - 'a' + 'A'} {
			for i := 0; ; {
				j := bytes.IndexByte(s[i:], c)
				if j < 0 {
					break
				}
				at := i + j
				for _, w := range a.words {
					if at >= w.at && hasFoldPrefix(s[at-w.at:], w.word) {
						return true
					}
				}
				i = at + 1
			}
		}
	}
	return false
}

// envAnchors are the words of envName by their rare letter.
var envAnchors = []struct {
	c     byte
	words []anchored
}{
	{'k', []anchored{{"token", 2}, {"apikey", 3}, {"api_key", 4}}},
	{'w', []anchored{{"password", 4}, {"passwd", 4}}},
	{'c', []anchored{{"secret", 2}, {"credential", 0}}},
}

// anchored is a word and where its rare letter is in it.
type anchored struct {
	word string
	at   int
}

// asciiFold reports whether b is the lower-case ASCII word w in any letter
// case.
func asciiFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		if c := b[i]; c != w[i] && (c < 'A' || c > 'Z' || c+'a'-'A' != w[i]) {
			return false
		}
	}
	return true
}

// envItem reports whether the value at b[i] is an env var whose value the
// walk replaces: an object with a member name that envName matches and a
// member value that envValue accepts (both in any letter case).
func envItem(b []byte, i int) bool {
	var m member
	name, value := false, false
	for it := jsonscan.Members(b, i); it.Next(&m); {
		// "name" and "value" have no letter that folds beyond ASCII (k, s).
		switch k := m.Key(b); {
		case asciiFold(k, "name"):
			if s, ok := jsonscan.String(b, m.Val()); ok && envName(s) {
				name = true
			}
		case asciiFold(k, "value"):
			value = value || envValue(b, m.Val())
		}
	}
	return name && value
}

// envNames is what an env var's name holds when its value is a credential.
var envNames = regexp.MustCompile(`(?i)token|secret|passw(?:or)?d|api_?key|credential`)

// envName reports whether an env var of the name holds a credential: the
// name holds TOKEN, SECRET, PASSWORD, PASSWD, APIKEY, API_KEY or
// CREDENTIAL in any letter case (envNames).
func envName(name []byte) bool {
	for i, c := range name {
		if c >= 0x80 {
			return envNames.Match(name) // Unicode case folding: K is a k
		}
		switch c | 0x20 {
		case 't':
			if hasFoldPrefix(name[i:], "token") {
				return true
			}
		case 's':
			if hasFoldPrefix(name[i:], "secret") {
				return true
			}
		case 'p':
			if hasFoldPrefix(name[i:], "password") || hasFoldPrefix(name[i:], "passwd") {
				return true
			}
		case 'a':
			if hasFoldPrefix(name[i:], "apikey") || hasFoldPrefix(name[i:], "api_key") {
				return true
			}
		case 'c':
			if hasFoldPrefix(name[i:], "credential") {
				return true
			}
		}
	}
	return false
}

// hasFoldPrefix reports whether s starts with the lower-case ASCII word w
// in any letter case.
func hasFoldPrefix(s []byte, w string) bool {
	return len(s) >= len(w) && asciiFold(s[:len(w)], w)
}

// envValue reports whether the value at v is one the walk replaces in a
// credential env var: a string, not empty and not already replaced.
func envValue(b []byte, v span) bool {
	s, ok := jsonscan.String(b, v)
	return ok && len(s) > 0 && string(s) != redactedCredential
}

// walker copies the values of one compact buffer without what the
// redaction removes. x indexes the buffer's large containers, so that a
// value is scanned a bounded number of times however deep it is nested.
type walker struct {
	rd *Redaction
	b  []byte
	x  index
	// text: the buffer may hold a string or key that redactText changes
	// (textSuspect); when it does not, none is looked at.
	text bool
}

// walk appends b[s:e] to dst without what the pending paths and the rules
// of the objects inside it remove, and reports whether anything was. env
// is set for the value of a member env: an object in that array is an env
// var.
func (w *walker) walk(dst []byte, s, e int, pending []memberPath, env bool) ([]byte, bool) {
	b := w.b
	switch b[s] {
	case '{':
		return w.object(dst, s, e, pending, false)
	case '[':
		changed := false
		dst = append(dst, '[')
		for i, first := s+1, true; b[i] != ']'; first = false {
			end := w.x.Skip(b, i)
			if !first {
				dst = append(dst, ',')
			}
			var c bool
			if env && b[i] == '{' {
				dst, c = w.object(dst, i, end, pending, true)
			} else {
				dst, c = w.walk(dst, i, end, pending, false)
			}
			changed = changed || c
			if i = end; b[i] == ',' {
				i++
			}
		}
		return append(dst, ']'), changed
	case '"':
		if !w.text {
			break
		}
		if out, ok := redactString(b[s:e]); ok {
			return append(dst, out...), true
		}
	}
	return append(dst, b[s:e]...), false
}

// object is walk for an object: the paths of the rules whose kind it has
// join the pending ones. envVar is set for an item of an env array: when
// its name says it holds a credential (envName), its value is replaced.
func (w *walker) object(dst []byte, s, e int, pending []memberPath, envVar bool) ([]byte, bool) {
	b := w.b
	paths := pending
	var kinds, versions [][]byte
	secret := false
	var m member
	for it := w.x.Members(b, s); it.Next(&m); {
		key := m.Key(b)
		switch string(key) {
		case "kind":
			if v, ok := jsonscan.String(b, m.Val()); ok {
				kinds = append(kinds, v)
			}
		case "apiVersion":
			if v, ok := jsonscan.String(b, m.Val()); ok {
				versions = append(versions, v)
			}
		}
		if envVar && bytes.EqualFold(key, []byte("name")) {
			if v, ok := jsonscan.String(b, m.Val()); ok && envName(v) {
				secret = true
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
		var c bool
		dst, c = w.key(dst, &m)
		changed = changed || c
		switch {
		case secret && bytes.EqualFold(key, []byte("value")) && envValue(b, m.Val()):
			dst, c = append(dst, `"`+redactedCredential+`"`...), true
		case b[m.ValStart] == '"' && bytes.EqualFold(key, []byte(lastApplied)):
			var nv []byte
			nv, c = w.rd.embedded(b[m.ValStart:m.ValEnd], w.text)
			dst = append(dst, nv...)
		default:
			env := b[m.ValStart] == '[' && bytes.EqualFold(key, []byte("env"))
			dst, c = w.walk(dst, m.ValStart, m.ValEnd, tails, env)
		}
		changed = changed || c
	}
	return append(dst, '}'), changed
}

// key appends the member's key and colon, the key redacted like any
// string.
func (w *walker) key(dst []byte, m *member) ([]byte, bool) {
	if w.text {
		if out, ok := redactString(w.b[m.Start : m.KeyEnd+1]); ok {
			return append(append(dst, out...), ':'), true
		}
	}
	return append(dst, w.b[m.Start:m.ValStart]...), false
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
// string that is not a JSON object is treated as any other string. text is
// the walker's: the JSON inside a string holds what redactText changes
// only if the string does.
func (rd *Redaction) embedded(raw []byte, text bool) ([]byte, bool) {
	s, _ := jsonscan.String(raw, span{S: 0, E: len(raw)})
	d := getDoc(nil)
	defer d.Release()
	if d.parse(trimSpace(s)) != nil {
		if !text {
			return raw, false
		}
		if out, ok := redactString(raw); ok {
			return out, true
		}
		return raw, false
	}
	w := walker{rd: rd, b: d.Buf, x: d.Index, text: text}
	out, changed := w.walk(nil, 0, len(d.Buf), nil, false)
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

// jwt matches a JSON Web Token: three base64url segments, the first two
// (header and claims) JSON objects, so starting with eyJ.
var jwt = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)

// kubeLine matches a line of a kubeconfig's user that holds a credential;
// the value is what follows the key, to the end of the line.
var kubeLine = regexp.MustCompile(`(?m)^( *(?:token|id-token|access-token|refresh-token|client-secret|client-key-data|password): +)\S[^\n]*`)

// redactString returns the JSON string raw as redactText changes it, ok
// false when it does not.
func redactString(raw []byte) (out []byte, ok bool) {
	if !textSuspect(raw) {
		return nil, false
	}
	s, _ := jsonscan.String(raw, span{S: 0, E: len(raw)})
	t := redactText(s)
	if t == nil {
		return nil, false
	}
	return quote(string(t)), true
}

// redactText returns s with its credentials replaced, nil when it holds
// none: the whole string when it is base64 of text that holds a PEM private
// key; each PEM private-key block; in kubeconfig-shaped text (text that
// holds "users:" or "kind: Config"), the value of each kubeLine; each
// bearer token (bearerToken); each JWT.
func redactText(s []byte) []byte {
	if t := bytes.TrimSpace(s); bytes.HasPrefix(t, []byte(pemBase64)) && pemKey.Match(base64Prefix(t)) {
		return []byte(redactedValue)
	}
	// Each expression runs only where its bytes are: a string that gets
	// here for an escape seldom holds any.
	out := s
	if bytes.Contains(out, []byte("KEY-----")) {
		out = pemKey.ReplaceAll(out, []byte(redactedValue))
	}
	if bytes.Contains(out, []byte("users:")) || bytes.Contains(out, []byte("kind: Config")) {
		out = kubeLine.ReplaceAll(out, []byte("${1}"+redactedCredential))
	}
	if bytes.Contains(out, []byte("earer ")) {
		out = bearerToken(out)
	}
	if hasJWT(out) {
		out = jwt.ReplaceAll(out, []byte(redactedToken))
	}
	if bytes.Equal(out, s) {
		return nil
	}
	return out
}

// bearerToken returns s with each bearer token (RFC 6750) replaced: after
// Bearer or bearer as a word of its own (`\b[Bb]earer`), and spaces, at
// least 16 characters of the token alphabet, then = padding, among which a
// digit, so that "Bearer authentication-is-required" is prose. Written out
// rather than as an expression: regexp takes about 100 ns a byte of a
// string of "Bearer Bearer ...".
func bearerToken(s []byte) []byte {
	var out []byte
	last := 0
	for i := 0; ; {
		j := bytes.Index(s[i:], []byte("earer "))
		if j < 0 {
			break
		}
		b := i + j - 1 // the B, not inside the token replaced last
		i += j + len("earer ")
		if b < last || s[b]|0x20 != 'b' || b > 0 && isWordByte(s[b-1]) {
			continue
		}
		start := i
		for start < len(s) && s[start] == ' ' {
			start++
		}
		end, digit := start, false
		for end < len(s) && isTokenByte(s[end]) {
			digit = digit || s[end] >= '0' && s[end] <= '9'
			end++
		}
		if end-start < 16 || !digit {
			continue
		}
		for end < len(s) && s[end] == '=' {
			end++
		}
		out = append(append(out, s[last:start]...), redactedToken...)
		last, i = end, end
	}
	if out == nil {
		return s
	}
	return append(out, s[last:]...)
}

// isWordByte reports whether c is a letter, digit or underscore: what \b
// tells from other bytes.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// isTokenByte reports whether c is of a bearer token's alphabet
// (RFC 6750 b64token, = padding apart).
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
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
