package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// DecodeLine classifies one line, already stripped of any CRI wrapper, and
// decodes it: an audit.k8s.io Event or EventList yields audit events, a
// managed cluster's envelope (GKE, EKS, AKS: envelope.go) the events it
// holds, a klog text line or any other JSON object a log record, and a
// blank line nothing. A leading UTF-8 byte order mark is ignored. The line
// is scanned once: the classification looks at the top-level "kind" and
// "apiVersion" found by the validating scan that the decoders then reuse.
// The year of a klog text line is the one that puts it at most a day after
// now (yearRef); one line of it is one record (the ingester joins the lines
// of a multi-line record first).
//
// The results do not alias line.
func DecodeLine(line []byte) (audits []cpid.AuditEvent, rec *cpid.LogRecord, err error) {
	return decodeLine(line, DefaultRedaction, false)
}

// decodeLine is DecodeLine with the redaction red. When owned, line is the
// caller's to give away: the results may alias it (a long line is not
// copied again).
func decodeLine(line []byte, red *Redaction, owned bool) (audits []cpid.AuditEvent, rec *cpid.LogRecord, err error) {
	audits, logs, _, err := decodeAt(line, lineInfo{}, red, owned)
	switch {
	case err != nil:
		return nil, nil, err
	case len(logs) > 1:
		return nil, nil, fmt.Errorf("%d log records in one line (an envelope of several): read it with cpid-tui ingest", len(logs))
	case len(logs) == 1:
		rec = &logs[0]
	}
	return audits, rec, nil
}

// lineInfo is what the reader knows of a line beyond its bytes.
type lineInfo struct {
	ref       yearRef // the year of a klog text line
	component string  // the program that wrote the stream
	// level is where the line is: 0 a line, 1 an element of an array of
	// envelopes, 2 what an envelope holds. Arrays are read at level 0 and
	// envelopes up to 1, so that nesting costs no more than one pass.
	level uint8
}

// decodeAt decodes one line (or a record the reader joined from several)
// and says what format it is in, or looked like when it is bad.
func decodeAt(line []byte, li lineInfo, red *Redaction, owned bool) (audits []cpid.AuditEvent, logs []cpid.LogRecord, f Format, err error) {
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	line = trimSpace(line)
	if len(line) == 0 {
		return nil, nil, 0, nil
	}
	if isKlogHeader(line) {
		r, err := decodeKlog(line, li.ref, li.component)
		if err != nil {
			return nil, nil, FormatKlogText, err
		}
		r.Program = program(li.component, r.Component)
		return nil, []cpid.LogRecord{r}, FormatKlogText, nil
	}
	if line[0] == '[' && li.level == 0 {
		return decodeArray(line, li, red)
	}
	d := getDoc(red)
	defer d.Release()
	if err := d.parse(line); err != nil {
		f = FormatOther
		if errors.Is(err, errLegacy) {
			f = FormatLegacyAudit
		}
		return nil, nil, f, err
	}
	if owned {
		d.Own = true // Buf is line, or a compact copy of it: either is ours
	}
	if kind, apiVersion := d.typeMeta(); isAudit(kind, apiVersion) {
		f = FormatAudit
		if string(kind) == "EventList" {
			f = FormatEventList
		}
		audits, err = d.auditOf(kind, apiVersion)
		return audits, nil, f, err
	}
	if li.level <= 1 {
		if env := d.envelope(); env != 0 && (env != FormatDocument || li.level == 0) {
			return d.unwrap(env, li, red)
		}
	}
	f = d.logFormat()
	r, err := d.log()
	if err != nil {
		return nil, nil, f, err
	}
	r.Program = program(li.component, r.Component)
	return nil, []cpid.LogRecord{r}, f, nil
}

// logFormat names the logger of a JSON log object by its keys.
func (d *doc) logFormat() Format {
	var ts, tm, level, caller byte
	for i := range d.Members {
		m := &d.Members[i]
		switch string(m.Key(d.Buf)) {
		case "ts":
			ts = d.Buf[m.ValStart]
		case "time":
			tm = d.Buf[m.ValStart]
		case "level":
			level = 1
		case "caller":
			caller = 1
		}
	}
	switch {
	case ts != 0 && ts != '"' && caller != 0 && level == 0:
		return FormatKlogJSON
	case ts != 0 && level != 0:
		return FormatZapJSON
	case tm != 0 && level != 0:
		return FormatSlogJSON
	case ts != 0 || tm != 0:
		return FormatJSONLog
	}
	return FormatOther
}

// decodeArray decodes a JSON array on one line whose elements are lines
// of their own (an envelope's entries); the first bad element makes the
// line bad.
func decodeArray(line []byte, li lineInfo, red *Redaction) (audits []cpid.AuditEvent, logs []cpid.LogRecord, f Format, err error) {
	d := getDoc(red)
	defer d.Release()
	if err := d.Parse(line); err != nil {
		return nil, nil, FormatOther, err
	}
	b := d.Buf
	it := jsonscan.Elems(b, 0)
	for k := 0; ; k++ {
		el, more := it.Next()
		if !more {
			break
		}
		if b[el.S] != '{' {
			return nil, nil, f | FormatOther, fmt.Errorf("element %d: not a JSON object", k)
		}
		eli := lineInfo{ref: li.ref, component: li.component, level: 1}
		a, l, ef, err := decodeAt(b[el.S:el.E], eli, red, false)
		f |= ef
		if err != nil {
			return nil, nil, f, fmt.Errorf("element %d: %w", k, err)
		}
		audits = append(audits, a...)
		logs = append(logs, l...)
	}
	if f == 0 {
		f = FormatOther
	}
	return audits, logs, f, nil
}

// Errors shared by the decoders. Messages are the reasons a LineError shows.
var (
	errEmpty    = errors.New("empty line")
	errLegacy   = errors.New("legacy text audit format is not supported; run kube-apiserver with --audit-log-format=json")
	errKlogText = errors.New("klog text format: a log line, not JSON (DecodeLine and cpid-tui ingest read it)")
)

// The shared reader's offsets, under the names the decoders use.
type (
	span   = jsonscan.Span
	member = jsonscan.Member
	index  = jsonscan.Index
)

// doc is one line validated by the shared reader (jsonscan) and the
// redaction its bodies get.
type doc struct {
	*jsonscan.Doc
	red *Redaction
}

// getDoc returns a doc whose reader comes from jsonscan's pool; Release
// returns it.
func getDoc(red *Redaction) doc { return doc{jsonscan.Get(), red} }

// parse validates line (already trimmed) as exactly one JSON object. Invalid
// UTF-8 anywhere in the line rejects it (jsonscan.Parse).
func (d *doc) parse(line []byte) error {
	if len(line) == 0 {
		return errEmpty
	}
	if line[0] != '{' {
		if err := textFormat(line); err != nil {
			return err
		}
	}
	if err := d.Parse(line); err != nil {
		return err
	}
	if !d.Object() {
		return errors.New("not a JSON object")
	}
	return nil
}

// textFormat explains a line that cannot be JSON: the legacy audit text
// format, klog's text header, or anything else.
func textFormat(line []byte) error {
	if i := bytes.IndexByte(line, ' '); i > 0 && i < 40 && bytes.HasPrefix(line[i:], []byte(" AUDIT: ")) {
		return errLegacy
	}
	if isKlogHeader(line) {
		return errKlogText
	}
	switch c := line[0]; {
	case c == '[' || c == '"' || c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		return nil // JSON but maybe not an object: let the scanner tell
	}
	p := line
	if len(p) > 16 {
		p = p[:16]
	}
	return fmt.Errorf("not a JSON object: line starts with %q", p)
}

// isKlogHeader reports whether line starts like klog's text header,
// "I1122 15:47:58.123456 ".
func isKlogHeader(b []byte) bool {
	const pattern = "X0000 00:00:00.000000 "
	if len(b) < len(pattern) || bytes.IndexByte([]byte("IWEF"), b[0]) < 0 {
		return false
	}
	for i := 1; i < len(pattern); i++ {
		if p := pattern[i]; p == '0' && !isDigit(b[i]) || p != '0' && b[i] != p {
			return false
		}
	}
	return true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// kind is the JSON shape a Go type accepts from encoding/json.
type kind uint8

const (
	kString     kind = iota // string (null is accepted by every kind)
	kInt32                  // int32: an integer literal in range
	kInt64                  // int64
	kStrings                // []string
	kStringMap              // map[string]string
	kStringsMap             // map[string][]string
	kObject                 // a struct with fields sub
	kObjects                // a slice of such structs
	kAny                    // anything (runtime.Unknown, or checked later)
)

var kindNames = [...]string{"string", "integer", "integer", "array of strings", "object of strings",
	"object of string arrays", "object", "array of objects", "any"}

// field is a struct field as encoding/json sees it.
type field struct {
	name string
	kind kind
	sub  []field
}

// lookup returns the index of the field that encoding/json would fill for
// key: an exact match, else a case-insensitive one; -1 when none.
func lookup(fields []field, key []byte) int {
	for i := range fields {
		if string(key) == fields[i].name {
			return i
		}
	}
	// An ASCII key folds to an ASCII name of its length only (a
	// non-ASCII one may fold shorter: the Kelvin sign is k). Every member
	// of an event misses typeMeta's names: this test saves their folds.
	ascii := true
	for _, c := range key {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for i := range fields {
		if (!ascii || len(key) == len(fields[i].name)) && bytes.EqualFold(key, []byte(fields[i].name)) {
			return i
		}
	}
	return -1
}

// typeError is a value of the wrong JSON type for its field.
type typeError struct {
	path string // dotted path from the outermost field checked
	want kind
}

func (e *typeError) Error() string {
	return fmt.Sprintf("%s: want %s", e.path, kindNames[e.want])
}

// in prefixes the path of a typeError with the enclosing field's name.
func in(name string, err error) error {
	if te, ok := err.(*typeError); ok {
		if strings.HasPrefix(te.path, "[]") {
			te.path = name + te.path
		} else {
			te.path = name + "." + te.path
		}
	}
	return err
}

// check reports whether encoding/json can decode the value at b[vs:ve] into
// a field of f's kind. For an object, out
// (when not nil) receives the last non-null value of each of its fields.
func check(b []byte, vs, ve int, f *field, out []span) error {
	c := b[vs]
	if c == 'n' {
		return nil
	}
	ok := true
	switch f.kind {
	case kString:
		ok = c == '"'
	case kInt32, kInt64:
		bits := 32
		if f.kind == kInt64 {
			bits = 64
		}
		_, ok = jsonscan.ParseInt(b[vs:ve], bits)
	case kStrings:
		ok = c == '['
		for it := jsonscan.Elems(b, vs); ok; {
			el, more := it.Next()
			if !more {
				break
			}
			ok = b[el.S] == '"' || b[el.S] == 'n'
		}
	case kStringMap:
		ok = c == '{'
		var m member
		for it := jsonscan.Members(b, vs); ok && it.Next(&m); {
			ok = b[m.ValStart] == '"' || b[m.ValStart] == 'n'
		}
	case kStringsMap:
		ok = c == '{'
		var m member
		elem := field{name: "[]", kind: kStrings}
		for it := jsonscan.Members(b, vs); ok && it.Next(&m); {
			if err := check(b, m.ValStart, m.ValEnd, &elem, nil); err != nil {
				return in(f.name, err)
			}
		}
	case kObject:
		ok = c == '{'
		var m member
		for it := jsonscan.Members(b, vs); ok && it.Next(&m); {
			i := lookup(f.sub, m.Key(b))
			if i < 0 {
				continue
			}
			if err := check(b, m.ValStart, m.ValEnd, &f.sub[i], nil); err != nil {
				return in(f.name, err)
			}
			if out != nil && b[m.ValStart] != 'n' {
				out[i] = m.Val()
			}
		}
	case kObjects:
		ok = c == '['
		elem := field{name: "[]", kind: kObject, sub: f.sub}
		for it := jsonscan.Elems(b, vs); ok; {
			el, more := it.Next()
			if !more {
				break
			}
			if err := check(b, el.S, el.E, &elem, nil); err != nil {
				return in(f.name, err)
			}
		}
	}
	if !ok {
		return &typeError{f.name, f.kind}
	}
	return nil
}
