package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

const auditAPIVersion = "audit.k8s.io/v1"

// errEventless is the error of an EventList item that has nothing of an
// event: no kind, apiVersion, auditID or timestamp.
var errEventless = errors.New("not an audit event: no auditID, stageTimestamp or requestReceivedTimestamp")

// DecodeAudit decodes one JSON value that is either an audit.k8s.io/v1 Event,
// as kube-apiserver's log backend writes it one per line, or an EventList, as
// its webhook backend posts it. The results do not alias line.
//
// The envelope is read as encoding/json reads it into
// k8s.io/apiserver/pkg/apis/audit/v1.Event: field names match case-
// insensitively, null leaves a field unset, and a value of the wrong JSON
// type rejects the event. DecodeAudit is stricter in a few documented ways:
// invalid UTF-8 anywhere, a top-level field given twice, a kind other than
// Event or EventList, an apiVersion other than audit.k8s.io/v1, and a null
// or non-Event list item are all rejected. Timestamps may carry 0 to 9
// fraction digits where the reference type insists on exactly 6.
//
// Request and response bodies are opaque objects read like unstructured
// Kubernetes objects: keys match exactly and the last of duplicated keys
// wins. Credentials are removed from bodies by DefaultRedaction (see
// Redaction).
//
// Each event's Hash is taken over its compact JSON, whatever the input's
// whitespace. An EventList item without kind and apiVersion (the webhook
// leaves them out) is hashed as the log backend writes the same event, so
// that an event both posted and logged collapses into one.
func DecodeAudit(line []byte) ([]cpid.AuditEvent, error) {
	return decodeAudit(line, DefaultRedaction)
}

// decodeAudit is DecodeAudit with the redaction red.
func decodeAudit(line []byte, red *Redaction) ([]cpid.AuditEvent, error) {
	line = trimSpace(line)
	d := getDoc(red)
	defer d.Release()
	if err := d.parse(line); err != nil {
		return nil, err
	}
	return d.audit()
}

// isAudit reports whether a kind and apiVersion make an object an audit
// event or event list.
func isAudit(kind, apiVersion []byte) bool {
	return (string(kind) == "Event" || string(kind) == "EventList") &&
		bytes.HasPrefix(apiVersion, []byte("audit.k8s.io/"))
}

// typeMeta returns the object's kind and apiVersion, matched like
// encoding/json matches them.
func (d *doc) typeMeta() (kind, apiVersion []byte) {
	for i := range d.Members {
		m := &d.Members[i]
		switch idx := lookup(listFields, m.Key(d.Buf)); idx {
		case 0, 1:
			if s, ok := jsonscan.String(d.Buf, m.Val()); ok {
				if idx == 0 {
					kind = s
				} else {
					apiVersion = s
				}
			}
		}
	}
	return kind, apiVersion
}

func (d *doc) audit() ([]cpid.AuditEvent, error) {
	kind, apiVersion := d.typeMeta()
	return d.auditOf(kind, apiVersion)
}

// auditOf is audit for the kind and apiVersion typeMeta found.
func (d *doc) auditOf(kind, apiVersion []byte) ([]cpid.AuditEvent, error) {
	switch {
	case string(kind) != "Event" && string(kind) != "EventList":
		if kind == nil {
			return nil, errors.New("not an audit event: no kind")
		}
		return nil, fmt.Errorf("not an audit event: kind %q", kind)
	case string(apiVersion) != auditAPIVersion:
		return nil, fmt.Errorf("unsupported audit apiVersion %q, want %s", apiVersion, auditAPIVersion)
	}
	if !d.Own {
		// Own the bytes: the bodies are returned as slices of this copy.
		d.Buf = bytes.Clone(d.Buf)
		d.Own = true
	}
	if string(kind) == "Event" {
		evs := make([]cpid.AuditEvent, 1)
		if err := decodeEvent(d.Buf, span{S: 0, E: len(d.Buf)}, d.Members, false, d.Index, d.red, &evs[0]); err != nil {
			return nil, err
		}
		return evs, nil
	}
	return d.list()
}

// list decodes an EventList.
func (d *doc) list() ([]cpid.AuditEvent, error) {
	b := d.Buf
	var seen uint32
	var items span
	for i := range d.Members {
		m := &d.Members[i]
		idx := lookup(listFields, m.Key(b))
		if idx < 0 {
			continue
		}
		if seen&(1<<idx) != 0 {
			return nil, fmt.Errorf("duplicate field %q", listFields[idx].name)
		}
		seen |= 1 << idx
		if idx == 3 { // items
			if b[m.ValStart] != '[' && b[m.ValStart] != 'n' {
				return nil, errors.New("items: want array")
			}
			items = m.Val()
			continue
		}
		if err := check(b, m.ValStart, m.ValEnd, &listFields[idx], nil); err != nil {
			return nil, err
		}
	}
	var evs []cpid.AuditEvent
	if items.S == 0 || b[items.S] == 'n' {
		return evs, nil
	}
	evs = make([]cpid.AuditEvent, jsonscan.Count(b, items.S))
	ms := make([]member, 0, 24)
	it := jsonscan.Elems(b, items.S)
	for k := range evs {
		el, _ := it.Next()
		s, e := el.S, el.E
		switch b[s] {
		case '{':
		case 'n':
			return nil, fmt.Errorf("item %d: null", k)
		default:
			return nil, fmt.Errorf("item %d: want object", k)
		}
		ms = ms[:0]
		var m member
		for mi := jsonscan.Members(b, s); mi.Next(&m); {
			ms = append(ms, m)
		}
		if err := decodeEvent(b, span{S: s, E: e}, ms, true, d.Index, d.red, &evs[k]); err != nil {
			return nil, fmt.Errorf("item %d: %w", k, err)
		}
	}
	var err error
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// Indexes of eventFields.
const (
	fKind = iota
	fAPIVersion
	fLevel
	fAuditID
	fStage
	fRequestURI
	fVerb
	fUser
	fImpersonatedUser
	fAuthenticationMetadata
	fSourceIPs
	fUserAgent
	fObjectRef
	fResponseStatus
	fRequestObject
	fResponseObject
	fRequestReceivedTimestamp
	fStageTimestamp
	fAnnotations
)

// decodeEvent decodes the Event at b[obj] whose members are ms into ev. item
// is set for an EventList item, which may omit kind and apiVersion. x is
// the index of b. red removes credentials from the bodies.
func decodeEvent(b []byte, obj span, ms []member, item bool, x index, red *Redaction, ev *cpid.AuditEvent) error {
	var v [fAnnotations + 1]span
	var user [4]span
	var ref, status [8]span
	outs := [fAnnotations + 1][]span{fUser: user[:], fObjectRef: ref[:], fResponseStatus: status[:]}
	var seen uint32
	for i := range ms {
		m := &ms[i]
		idx := lookup(eventFields, m.Key(b))
		if idx < 0 {
			continue
		}
		if seen&(1<<idx) != 0 {
			return fmt.Errorf("duplicate field %q", eventFields[idx].name)
		}
		seen |= 1 << idx
		if err := check(b, m.ValStart, m.ValEnd, &eventFields[idx], outs[idx]); err != nil {
			return err
		}
		if b[m.ValStart] != 'n' { // null leaves the field unset
			v[idx] = m.Val()
		}
	}
	kind, apiVersion := strOf(b, v[fKind]), strOf(b, v[fAPIVersion])
	if item {
		if len(kind) > 0 && string(kind) != "Event" {
			return fmt.Errorf("not an audit event: kind %q", kind)
		}
		if len(apiVersion) > 0 && string(apiVersion) != auditAPIVersion {
			return fmt.Errorf("unsupported audit apiVersion %q, want %s", apiVersion, auditAPIVersion)
		}
	}

	var err error
	if ev.ReceivedNS, err = timeField(b, v[fRequestReceivedTimestamp], "requestReceivedTimestamp"); err != nil {
		return err
	}
	if ev.StageNS, err = timeField(b, v[fStageTimestamp], "stageTimestamp"); err != nil {
		return err
	}
	// An EventList item with no kind, no apiVersion, no auditID and no
	// timestamp ({} above all) is no event: stored, it would be a row of
	// nothing at time 0. It is a bad item, as the same object on a line of
	// its own is a bad line (it has no kind).
	if item && len(kind) == 0 && len(apiVersion) == 0 && len(strOf(b, v[fAuditID])) == 0 && ev.StageNS == 0 && ev.ReceivedNS == 0 {
		return errEventless
	}

	var t strtab
	t.add(&ev.AuditID, b, v[fAuditID])
	t.add(&ev.RequestURI, b, v[fRequestURI])
	t.add(&ev.UserAgent, b, v[fUserAgent])
	t.common(&ev.Stage, b, v[fStage])
	t.common(&ev.Level, b, v[fLevel])
	t.common(&ev.Verb, b, v[fVerb])
	t.add(&ev.Username, b, user[0])
	t.common(&ev.Resource, b, ref[0])
	t.add(&ev.Namespace, b, ref[1])
	refName, refUID, refRV := ref[2], ref[3], ref[6]
	t.common(&ev.APIGroup, b, ref[4])
	t.common(&ev.APIVersion, b, ref[5])
	t.common(&ev.Subresource, b, ref[7])
	if c := status[len(statusFields)-1]; c.OK() {
		n, _ := jsonscan.ParseInt(b[c.S:c.E], 32)
		ev.Code = int(n)
	}
	if ips := v[fSourceIPs]; ips.OK() {
		ev.SourceIPs = make([]string, jsonscan.Count(b, ips.S))
		it := jsonscan.Elems(b, ips.S)
		for i := range ev.SourceIPs {
			el, _ := it.Next()
			t.add(&ev.SourceIPs[i], b, el)
		}
	}

	req, resp := v[fRequestObject], v[fResponseObject]
	var reqMeta, respMeta bodyMeta
	if req.OK() {
		reqMeta = readBody(b, req, x)
	}
	if resp.OK() {
		respMeta = readBody(b, resp, x)
	}
	t.add(&ev.Name, b, firstString(b, refName, respMeta.name))
	t.add(&ev.UID, b, firstString(b, respMeta.uid, refUID))
	t.add(&ev.ResourceVersion, b, firstString(b, respMeta.rv, refRV))
	// The trace context comes from the first body that has annotations: a
	// Scale or a Status answering a subresource has none, and a patch body
	// has them only when it sets them.
	switch {
	case respMeta.annotations.OK():
		t.add(&ev.CPID, b, respMeta.cpid)
		t.setTail(b, respMeta.ancestors)
		ev.Traceparent = traceparent(b, respMeta.traceparent)
	case reqMeta.annotations.OK():
		t.add(&ev.CPID, b, reqMeta.cpid)
		t.setTail(b, reqMeta.ancestors)
		ev.Traceparent = traceparent(b, reqMeta.traceparent)
	}
	switch {
	case respMeta.ownerRefs.OK():
		ev.OwnerRefs = raw(b, respMeta.ownerRefs)
	case reqMeta.ownerRefs.OK():
		ev.OwnerRefs = raw(b, reqMeta.ownerRefs)
	}
	ev.CPIDAncestors = splitList(t.done())

	ev.Annotations = raw(b, v[fAnnotations])
	// The status is redacted too: a failure's message can quote the
	// credential it refused.
	var r1, r2, r3 bool
	ev.RequestObject, r1 = red.body(b, req, x, ev.Resource, ev.Subresource, ev.APIGroup)
	ev.ResponseObject, r2 = red.body(b, resp, x, ev.Resource, ev.Subresource, ev.APIGroup)
	ev.ResponseStatus, r3 = red.body(b, v[fResponseStatus], x, "", "", "")
	ev.Redacted = r1 || r2 || r3
	bare := item && len(kind) == 0 && len(apiVersion) == 0
	ev.Hash = eventHash(b, obj, bare, ev.Redacted, []redacted{
		{req, ev.RequestObject}, {resp, ev.ResponseObject}, {v[fResponseStatus], ev.ResponseStatus}})
	return nil
}

// redacted is a value of an event, at, and what is stored of it, new (nil
// for a body dropped whole).
type redacted struct {
	at  span
	new []byte
}

// eventHash is the first 16 bytes of the SHA-256 of the event's compact
// JSON. An EventList item without kind and apiVersion is hashed as the log
// backend writes the same event, so that an event received by the webhook
// and read from a log file collapses into one. A redacted event is hashed
// with its redacted bodies and status (a removed body as null), so that the
// hash says nothing about the removed data.
func eventHash(b []byte, obj span, bare, isRedacted bool, parts []redacted) [16]byte {
	var h [16]byte
	if !bare && !isRedacted {
		sum := sha256.Sum256(b[obj.S:obj.E])
		copy(h[:], sum[:])
		return h
	}
	d := sha256.New()
	i := obj.S
	if bare {
		d.Write([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`))
		i++
		if b[i] != '}' {
			d.Write([]byte{','})
		}
	}
	if isRedacted {
		slices.SortFunc(parts, func(p, q redacted) int { return p.at.S - q.at.S })
		for _, p := range parts {
			if !p.at.OK() {
				continue
			}
			d.Write(b[i:p.at.S])
			if p.new == nil {
				d.Write([]byte("null"))
			} else {
				d.Write(p.new)
			}
			i = p.at.E
		}
	}
	d.Write(b[i:obj.E])
	copy(h[:], d.Sum(nil))
	return h
}

func timeField(b []byte, v span, name string) (int64, error) {
	if !v.OK() {
		return 0, nil
	}
	s := strOf(b, v)
	if ns, ok := parseTime(s, false); ok {
		return ns, nil
	}
	ns, err := parseAuditTime(string(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return ns, nil
}

// raw returns the value at v as a RawMessage that cannot grow into its
// neighbours, or nil when absent.
func raw(b []byte, v span) json.RawMessage {
	if !v.OK() {
		return nil
	}
	return b[v.S:v.E:v.E]
}

func isString(b []byte, v span) bool { return v.OK() && b[v.S] == '"' }

// firstString returns the first of vs that is a non-empty string.
func firstString(b []byte, vs ...span) span {
	for _, v := range vs {
		if isString(b, v) && v.E-v.S > 2 {
			return v
		}
	}
	return span{}
}

// strOf returns the contents of the string at v, unescaped.
func strOf(b []byte, v span) []byte {
	s, _ := jsonscan.String(b, v)
	return s
}

// splitList splits a comma-separated annotation value, dropping blanks.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// strtab gathers the strings of one event and makes them with a single
// allocation; values from a small vocabulary are shared instead.
type strtab struct {
	arr  [20]strRef
	more []strRef // beyond arr
	k    int      // refs in arr
	n    int      // bytes
	tail []byte   // a string that done returns
}

type strRef struct {
	dst *string
	s   []byte
}

// add schedules *dst to be set to the JSON string at v; anything else
// leaves *dst empty.
func (t *strtab) add(dst *string, b []byte, v span) {
	if isString(b, v) {
		t.addBytes(dst, strOf(b, v))
	}
}

// addBytes schedules *dst to be set to s.
func (t *strtab) addBytes(dst *string, s []byte) {
	if len(s) == 0 {
		return
	}
	if t.k < len(t.arr) {
		t.arr[t.k] = strRef{dst, s}
		t.k++
	} else {
		t.more = append(t.more, strRef{dst, s})
	}
	t.n += len(s)
}

// common is add for values that are mostly from a known vocabulary.
func (t *strtab) common(dst *string, b []byte, v span) {
	if !isString(b, v) {
		return
	}
	if s, ok := vocabulary[string(strOf(b, v))]; ok {
		*dst = s
		return
	}
	t.add(dst, b, v)
}

// setTail sets the string that done returns to the JSON string at v.
func (t *strtab) setTail(b []byte, v span) {
	if isString(b, v) {
		t.tail = strOf(b, v)
		t.n += len(t.tail)
	}
}

// done sets the strings and returns the tail.
func (t *strtab) done() string {
	if t.n == 0 {
		return ""
	}
	var sb strings.Builder
	sb.Grow(t.n)
	for _, r := range t.arr[:t.k] {
		sb.Write(r.s)
	}
	for _, r := range t.more {
		sb.Write(r.s)
	}
	sb.Write(t.tail)
	all := sb.String()
	i := 0
	for _, r := range t.arr[:t.k] {
		*r.dst = all[i : i+len(r.s)]
		i += len(r.s)
	}
	for _, r := range t.more {
		*r.dst = all[i : i+len(r.s)]
		i += len(r.s)
	}
	return all[i:]
}

var vocabulary = map[string]string{}

func init() {
	for _, s := range []string{
		"RequestReceived", "ResponseStarted", "ResponseComplete", "Panic",
		"None", "Metadata", "Request", "RequestResponse",
		"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
		"v1", "v1beta1", "v2", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io",
		"events.k8s.io", "rbac.authorization.k8s.io", "authentication.k8s.io",
		"authorization.k8s.io", "autoscaling", "policy", "networking.k8s.io",
		"storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
		"flowcontrol.apiserver.k8s.io", "scheduling.k8s.io", "certificates.k8s.io",
		"node.k8s.io", "resource.k8s.io",
		"pods", "replicasets", "deployments", "statefulsets", "daemonsets", "jobs", "cronjobs",
		"services", "endpoints", "endpointslices", "configmaps", "secrets", "serviceaccounts",
		"nodes", "namespaces", "leases", "events", "persistentvolumeclaims", "persistentvolumes",
		"status", "scale", "binding", "eviction", "token", "log", "exec", "ephemeralcontainers",
		"finalize", "approval", "resize",
		"info", "warn", "error", "debug", "dpanic", "panic", "fatal", "trace",
	} {
		vocabulary[s] = s
	}
}

// The shapes of k8s.io/apiserver/pkg/apis/audit/v1 Event and EventList and
// of the types they embed, as encoding/json decodes them.
var (
	userInfoFields = []field{
		{"username", kString, nil}, {"uid", kString, nil},
		{"groups", kStrings, nil}, {"extra", kStringsMap, nil},
	}
	objectRefFields = []field{
		{"resource", kString, nil}, {"namespace", kString, nil}, {"name", kString, nil},
		{"uid", kString, nil}, {"apiGroup", kString, nil}, {"apiVersion", kString, nil},
		{"resourceVersion", kString, nil}, {"subresource", kString, nil},
	}
	listMetaFields = []field{
		{"selfLink", kString, nil}, {"resourceVersion", kString, nil},
		{"continue", kString, nil}, {"remainingItemCount", kInt64, nil},
	}
	statusFields = []field{
		{"kind", kString, nil}, {"apiVersion", kString, nil},
		{"metadata", kObject, listMetaFields},
		{"status", kString, nil}, {"message", kString, nil}, {"reason", kString, nil},
		{"details", kObject, []field{
			{"name", kString, nil}, {"group", kString, nil}, {"kind", kString, nil},
			{"uid", kString, nil},
			{"causes", kObjects, []field{
				{"reason", kString, nil}, {"message", kString, nil}, {"field", kString, nil},
			}},
			{"retryAfterSeconds", kInt32, nil},
		}},
		{"code", kInt32, nil}, // last: decodeEvent reads it there
	}
	// eventFields is indexed by the f* constants.
	eventFields = []field{
		{"kind", kString, nil}, {"apiVersion", kString, nil},
		{"level", kString, nil}, {"auditID", kString, nil}, {"stage", kString, nil},
		{"requestURI", kString, nil}, {"verb", kString, nil},
		{"user", kObject, userInfoFields}, {"impersonatedUser", kObject, userInfoFields},
		{"authenticationMetadata", kObject, []field{{"impersonationConstraint", kString, nil}}},
		{"sourceIPs", kStrings, nil}, {"userAgent", kString, nil},
		{"objectRef", kObject, objectRefFields},
		{"responseStatus", kObject, statusFields},
		{"requestObject", kAny, nil}, {"responseObject", kAny, nil},
		{"requestReceivedTimestamp", kString, nil}, {"stageTimestamp", kString, nil},
		{"annotations", kStringMap, nil},
	}
	// listFields: kind and apiVersion come first, typeMeta relies on it.
	listFields = []field{
		{"kind", kString, nil}, {"apiVersion", kString, nil},
		{"metadata", kObject, listMetaFields}, {"items", kAny, nil},
	}
)

// parseAuditTime parses what metav1.MicroTime accepts (RFC 3339 with
// exactly 6 fraction digits) or what time.RFC3339Nano does.
func parseAuditTime(s string) (int64, error) {
	t, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", s)
	if err != nil {
		if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return 0, fmt.Errorf("invalid time %q", s)
		}
	}
	return unixNS(t), nil
}

// bodyMeta locates what cpid reads in a request or response body: the last
// value of each key of interest, whatever its type.
type bodyMeta struct {
	name, uid, rv          span
	annotations, ownerRefs span // only when an object and an array
	cpid, ancestors        span
	traceparent            span
}

// traceparent returns the W3C traceparent at v in canonical form, "" when
// v is absent or not one.
func traceparent(b []byte, v span) string {
	if !v.OK() || b[v.S] != '"' {
		return ""
	}
	s, ok := jsonscan.String(b, v)
	if !ok {
		return ""
	}
	tp, err := cpid.ParseTraceparent(string(s))
	if err != nil {
		return ""
	}
	return tp.String()
}

func readBody(b []byte, v span, x index) (m bodyMeta) {
	var meta, ann, owners span
	var mb member
	for it := x.Members(b, v.S); it.Next(&mb); {
		if keyIs(b, &mb, "metadata") {
			meta = mb.Val()
		}
	}
	if !meta.OK() {
		return m
	}
	for it := x.Members(b, meta.S); it.Next(&mb); {
		val := mb.Val()
		switch string(mb.Key(b)) {
		case "name":
			m.name = val
		case "uid":
			m.uid = val
		case "resourceVersion":
			m.rv = val
		case "annotations":
			ann = val
		case "ownerReferences":
			owners = val
		}
	}
	if ann.OK() && b[ann.S] == '{' {
		m.annotations = ann
		for it := x.Members(b, ann.S); it.Next(&mb); {
			switch string(mb.Key(b)) {
			case cpid.KeyCPID:
				m.cpid = mb.Val()
			case cpid.KeyAncestors:
				m.ancestors = mb.Val()
			case cpid.KeyTraceparent:
				m.traceparent = mb.Val()
			}
		}
	}
	if owners.OK() && b[owners.S] == '[' {
		m.ownerRefs = owners
	}
	return m
}

func keyIs(b []byte, m *member, name string) bool {
	return string(m.Key(b)) == name
}
