package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
)

// DecodeLine classifies one line, already stripped of any CRI wrapper, and
// decodes it: an audit.k8s.io Event or EventList yields audit events, any
// other JSON object yields a log record, and a blank line yields nothing. A
// leading UTF-8 byte order mark is ignored. The line is scanned once: the
// classification looks at the top-level "kind" and "apiVersion" found by the
// validating scan that the decoders then reuse.
//
// The results do not alias line.
func DecodeLine(line []byte) (audits []cpid.AuditEvent, rec *cpid.LogRecord, err error) {
	return decodeLine(line, DefaultRedaction)
}

// decodeLine is DecodeLine with the redaction red.
func decodeLine(line []byte, red *Redaction) (audits []cpid.AuditEvent, rec *cpid.LogRecord, err error) {
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	line = trimSpace(line)
	if len(line) == 0 {
		return nil, nil, nil
	}
	d := getDoc()
	d.red = red
	defer d.release()
	if err := d.parse(line); err != nil {
		return nil, nil, err
	}
	if d.isAudit() {
		audits, err = d.audit()
		return audits, nil, err
	}
	r, err := d.log()
	if err != nil {
		return nil, nil, err
	}
	return nil, &r, nil
}

// Errors shared by the decoders. Messages are the reasons a LineError shows.
var (
	errTruncated = errors.New("truncated JSON")
	errDepth     = errors.New("JSON nested deeper than 10000 levels")
	errEmpty     = errors.New("empty line")
	errLegacy    = errors.New("legacy text audit format is not supported; run kube-apiserver with --audit-log-format=json")
	errKlogText  = errors.New("klog text format is not supported; run the component with --logging-format=json")
)

// maxDepth is encoding/json's nesting limit: deeper input is rejected there,
// so it is rejected here too.
const maxDepth = 10000

// member is one top-level key/value of a JSON object, as offsets into the
// compact buffer: the key without its quotes, and the value.
type member struct {
	start      int // the key's opening quote
	keyStart   int
	keyEnd     int
	keyEscaped bool
	valStart   int
	valEnd     int
}

// key returns the member's key, unescaped when needed.
func (m *member) key(b []byte) []byte {
	k := b[m.keyStart:m.keyEnd]
	if m.keyEscaped {
		return unquote(k)
	}
	return k
}

// doc is one line validated as JSON: its compact form and, when it is an
// object, its top-level members.
type doc struct {
	buf     []byte // compact JSON; aliases the line when that was compact
	own     bool   // buf is a private copy
	members []member
	arr     [24]member
	big     index // the large containers of buf
	red     *Redaction
}

var docs = sync.Pool{New: func() any { return new(doc) }}

// getDoc returns a doc from the pool; release returns it.
func getDoc() *doc { return docs.Get().(*doc) }

func (d *doc) release() {
	if cap(d.big) > 1024 || cap(d.members) > 1024 {
		return // do not keep what a huge line grew
	}
	d.buf, d.own, d.members, d.big, d.red = nil, false, d.members[:0], d.big[:0], nil
	docs.Put(d)
}

// parse validates line (already trimmed) as exactly one JSON object. Invalid
// UTF-8 anywhere in the line rejects it: kube-apiserver and the loggers we
// read always write valid UTF-8, so invalid bytes mean a corrupt line, and
// encoding/json would silently replace them.
func (d *doc) parse(line []byte) error {
	if len(line) == 0 {
		return errEmpty
	}
	if line[0] != '{' {
		if err := textFormat(line); err != nil {
			return err
		}
	}
	d.members = d.arr[:0]
	d.big = d.big[:0]
	s := scanner{b: line, top: &d.members, big: &d.big}
	end := s.value(0, 0)
	if s.err != nil {
		return s.err
	}
	if end != len(line) {
		s.unexpected(end)
		return s.err
	}
	if line[0] != '{' {
		return errors.New("not a JSON object")
	}
	d.buf = line
	if s.space {
		d.buf = compact(line)
		d.own = true
		d.members = d.members[:0]
		d.big = d.big[:0]
		s = scanner{b: d.buf, top: &d.members, big: &d.big}
		s.value(0, 0)
	}
	slices.SortFunc(d.big, func(a, b span) int { return a.s - b.s })
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

// scanner validates JSON with the grammar encoding/json accepts, plus the
// requirement that strings are valid UTF-8. It records the members of the
// outermost object and whether any whitespace separates tokens.
type scanner struct {
	b     []byte
	top   *[]member
	big   *index
	space bool
	err   error
	esc   bool // the last string scanned had a backslash
}

func (s *scanner) fail(err error) int {
	if s.err == nil {
		s.err = err
	}
	return -1
}

func (s *scanner) unexpected(i int) int {
	if i >= len(s.b) {
		return s.fail(errTruncated)
	}
	c := s.b[i]
	if c < utf8.RuneSelf && c >= ' ' {
		return s.fail(fmt.Errorf("invalid JSON: unexpected %q at byte %d", c, i))
	}
	return s.fail(fmt.Errorf("invalid JSON: unexpected byte 0x%02x at byte %d", c, i))
}

func (s *scanner) ws(i int) int {
	b := s.b
	j := i
	for j < len(b) && b[j] <= ' ' && isSpace(b[j]) {
		j++
	}
	if j != i {
		s.space = true
	}
	return j
}

// value scans the value at i and returns the index after it, or -1.
func (s *scanner) value(i, depth int) int {
	b := s.b
	i = s.ws(i)
	if i >= len(b) {
		return s.fail(errTruncated)
	}
	switch c := b[i]; c {
	case '{':
		return s.object(i, depth+1)
	case '[':
		return s.array(i, depth+1)
	case '"':
		return s.str(i)
	case 't':
		return s.lit(i, "true")
	case 'f':
		return s.lit(i, "false")
	case 'n':
		return s.lit(i, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.num(i)
		}
		return s.unexpected(i)
	}
}

func (s *scanner) lit(i int, want string) int {
	b := s.b
	for k := 0; k < len(want); k++ {
		if i+k >= len(b) {
			return s.fail(errTruncated)
		}
		if b[i+k] != want[k] {
			return s.unexpected(i + k)
		}
	}
	return i + len(want)
}

func (s *scanner) num(i int) int {
	b := s.b
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return s.fail(errTruncated)
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return s.unexpected(i)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		if !isDigit(b[i]) {
			return s.unexpected(i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		if !isDigit(b[i]) {
			return s.unexpected(i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags the bytes of w (little-endian) that end or escape a string
// or need a check: a quote, a backslash, a control byte or a non-ASCII byte.
// The lowest flag is exact; flags above it may be false.
func special(w uint64) uint64 {
	q := w ^ (lsb * '"')
	e := w ^ (lsb * '\\')
	return ((w-lsb*0x20)&^w | (q-lsb)&^q | (e-lsb)&^e | w) & msb
}

// str scans the string whose opening quote is at i.
func (s *scanner) str(i int) int {
	b := s.b
	s.esc = false
	i++
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			s.esc = true
			i++
			if i >= len(b) {
				return s.fail(errTruncated)
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) {
						return s.fail(errTruncated)
					}
					if !isHex(b[i+k]) {
						return s.unexpected(i + k)
					}
				}
				i += 5
			default:
				return s.unexpected(i)
			}
		case c < ' ':
			return s.unexpected(i)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return s.fail(fmt.Errorf("invalid UTF-8 at byte %d", i))
			}
			i += n
		default:
			i++
		}
	}
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func (s *scanner) object(i, depth int) int {
	if depth > maxDepth {
		return s.fail(errDepth)
	}
	b := s.b
	start := i
	i = s.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		if b[i] != '"' {
			return s.unexpected(i)
		}
		ks := i
		i = s.str(i)
		if i < 0 {
			return i
		}
		kesc := s.esc
		ke := i
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		if b[i] != ':' {
			return s.unexpected(i)
		}
		i = s.ws(i + 1)
		vs := i
		i = s.value(i, depth)
		if i < 0 {
			return i
		}
		if depth == 1 {
			*s.top = append(*s.top, member{ks, ks + 1, ke - 1, kesc, vs, i})
		}
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		switch b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return s.end(start, i+1)
		default:
			return s.unexpected(i)
		}
	}
}

func (s *scanner) array(i, depth int) int {
	if depth > maxDepth {
		return s.fail(errDepth)
	}
	b := s.b
	start := i
	i = s.ws(i + 1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		i = s.value(i, depth)
		if i < 0 {
			return i
		}
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(errTruncated)
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return s.end(start, i+1)
		default:
			return s.unexpected(i)
		}
	}
}

// bigValue is the size from which a container goes into the index.
const bigValue = 128

// end records the container b[start:end] in the index when it is large and
// returns end.
func (s *scanner) end(start, end int) int {
	if end-start >= bigValue && s.big != nil {
		*s.big = append(*s.big, span{start, end})
	}
	return end
}

// index holds the offsets of the large containers of a buffer, by start, so
// that walking an object does not scan its large values again.
type index []span

// skip is skip, using the index when the value at i is in it.
func (x index) skip(b []byte, i int) int {
	if len(x) > 0 && (b[i] == '{' || b[i] == '[') {
		lo, hi := 0, len(x)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if x[m].s < i {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(x) && x[lo].s == i {
			return x[lo].e
		}
	}
	return skip(b, i)
}

// members is members using the index.
func (x index) members(b []byte, i int) objIter {
	it := members(b, i)
	it.x = x
	return it
}

// compact returns valid JSON b without whitespace between tokens.
func compact(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if isSpace(c) {
			continue
		}
		if c != '"' {
			out = append(out, c)
			continue
		}
		j := skipString(b, i)
		out = append(out, b[i:j]...)
		i = j - 1
	}
	return out
}

// The functions below walk JSON that is already validated and compact.

// skipString returns the index after the string whose quote is at i.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skip returns the index after the value at i.
func skip(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// objIter iterates over the members of an object in compact, validated
// JSON.
type objIter struct {
	b []byte
	i int
	x index
}

// members returns an iterator over the members of the object at b[i]; it
// yields nothing when the value is not an object.
func members(b []byte, i int) objIter {
	if b[i] != '{' {
		return objIter{b: b, i: len(b)}
	}
	return objIter{b: b, i: i + 1}
}

// next sets m to the next member and reports whether there was one.
func (it *objIter) next(m *member) bool {
	b, i := it.b, it.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	m.start, m.keyStart = i, i+1
	j := skipString(b, i)
	m.keyEnd = j - 1
	m.keyEscaped = bytes.IndexByte(b[m.keyStart:m.keyEnd], '\\') >= 0
	m.valStart = j + 1
	m.valEnd = it.x.skip(b, m.valStart)
	it.i = len(b)
	if m.valEnd < len(b) && b[m.valEnd] == ',' {
		it.i = m.valEnd + 1
	}
	return true
}

// arrIter iterates over the elements of an array in compact, validated JSON.
type arrIter struct {
	b []byte
	i int
}

// elems returns an iterator over the elements of the array at b[i]; it
// yields nothing when the value is not an array.
func elems(b []byte, i int) arrIter {
	if b[i] != '[' || b[i+1] == ']' {
		return arrIter{b, len(b)}
	}
	return arrIter{b, i + 1}
}

// next returns the offsets of the next element.
func (it *arrIter) next() (start, end int, ok bool) {
	if it.i >= len(it.b) {
		return 0, 0, false
	}
	start, end = it.i, skip(it.b, it.i)
	it.i = len(it.b)
	if end < len(it.b) && it.b[end] == ',' {
		it.i = end + 1
	}
	return start, end, true
}

// count returns the number of elements of the array at b[i].
func count(b []byte, i int) int {
	n := 0
	for it := elems(b, i); ; n++ {
		if _, _, ok := it.next(); !ok {
			return n
		}
	}
}

// strValue returns the contents of the JSON string at b[vs:ve], unescaped,
// and whether it was a string.
func strValue(b []byte, vs, ve int) ([]byte, bool) {
	if vs >= ve || b[vs] != '"' {
		return nil, false
	}
	raw := b[vs+1 : ve-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return unquote(raw), true
	}
	return raw, true
}

// unquote decodes the escapes of a valid JSON string's contents the way
// encoding/json does, including its replacement of lone surrogates.
func unquote(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 5
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
		i++
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

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
	for i := range fields {
		if bytes.EqualFold(key, []byte(fields[i].name)) {
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
		_, ok = parseInt(b[vs:ve], bits)
	case kStrings:
		ok = c == '['
		for it := elems(b, vs); ok; {
			s, _, more := it.next()
			if !more {
				break
			}
			ok = b[s] == '"' || b[s] == 'n'
		}
	case kStringMap:
		ok = c == '{'
		var m member
		for it := members(b, vs); ok && it.next(&m); {
			ok = b[m.valStart] == '"' || b[m.valStart] == 'n'
		}
	case kStringsMap:
		ok = c == '{'
		var m member
		elem := field{name: "[]", kind: kStrings}
		for it := members(b, vs); ok && it.next(&m); {
			if err := check(b, m.valStart, m.valEnd, &elem, nil); err != nil {
				return in(f.name, err)
			}
		}
	case kObject:
		ok = c == '{'
		var m member
		for it := members(b, vs); ok && it.next(&m); {
			i := lookup(f.sub, m.key(b))
			if i < 0 {
				continue
			}
			if err := check(b, m.valStart, m.valEnd, &f.sub[i], nil); err != nil {
				return in(f.name, err)
			}
			if out != nil && b[m.valStart] != 'n' {
				out[i] = span{m.valStart, m.valEnd}
			}
		}
	case kObjects:
		ok = c == '['
		elem := field{name: "[]", kind: kObject, sub: f.sub}
		for it := elems(b, vs); ok; {
			s, e, more := it.next()
			if !more {
				break
			}
			if err := check(b, s, e, &elem, nil); err != nil {
				return in(f.name, err)
			}
		}
	}
	if !ok {
		return &typeError{f.name, f.kind}
	}
	return nil
}

// parseInt parses a JSON number as encoding/json does for an integer field
// of the given size: no fraction, no exponent, no overflow.
func parseInt(b []byte, bits int) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // magnitude of the smallest value
	var n uint64
	for _, c := range b {
		if !isDigit(c) || n > limit/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if !neg && n == limit {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}
