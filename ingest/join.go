package ingest

import (
	"bytes"
	"fmt"
	"time"
)

// joiner reassembles, in the reader and before lines are chunked, the
// records that span lines, so that the workers decode every record on its
// own:
//
//   - a klog text record and the lines that continue it (a block value, an
//     unstructured message over several lines), up to the next klog header,
//     JSON object or end of stream; in a CRI container log, the lines of
//     the other stream (stdout, stderr) pass meanwhile, so the record comes
//     after them;
//   - a JSON document printed over many lines, as gcloud and aws print
//     their --format=json/--output json (a line "[" or "{" starts one):
//     the elements of its top-level array, or of the array under "events",
//     "records" or "entries" of its top-level object, are records of their
//     own (the object's other members are dropped); another object is one
//     record.
//
// It also reads the header klog writes at the top of its own log files
// ("Log file created at: 2006/01/02 15:04:05" and three more lines), which
// dates the records after it. Other lines pass through.
type joiner struct {
	max int     // longest record (Limits.MaxLine)
	ref yearRef // the stream's year reference (its modification time)

	out   []piece // what the last push completed, in order
	arena []byte  // bytes of the assembled records in out

	created int64 // time of klog's file header, 0 when none was read
	header  int   // lines of klog's file header still expected

	klog     []byte // the open klog record, when klogNum > 0
	klogNum  int
	klogRef  yearRef
	klogWrap Format
	klogCRI  int  // CRI stream of its header line, -1 when not wrapped
	klogOver bool // it grew past max: reported, the rest dropped

	doc *document // the JSON document being split, or nil
}

// piece is a record for the chunker: b (valid until the next push), its
// first line, the year reference of a klog text record, the wrappers the
// reader removed; or a record that could not be assembled (bad), with its
// format in wrap when known.
type piece struct {
	b    []byte
	num  int
	ref  yearRef
	wrap Format
	bad  string
	pass bool // b is the line pushed, unchanged
}

// lineMeta is what the reader knows of a line besides its text: the CRI
// stream it was written to (-1 when not CRI-wrapped), the time of its
// wrapper (CRI, a CloudWatch export), and the wrappers removed.
type lineMeta struct {
	cri  int
	ns   int64
	wrap Format
}

// wrapMeta returns the line to push for raw, which CRI.Feed turned into
// line, and what its wrapper says: the CRI stream and time of a klog line
// (klogOpen: a klog record is open), or the time a CloudWatch export put
// before it (removed from the line).
func wrapMeta(raw, line []byte, klogOpen bool) ([]byte, lineMeta) {
	m := lineMeta{cri: -1}
	if len(line) != len(raw) || len(line) > 0 && &line[0] != &raw[0] {
		m.wrap = FormatCRI
		if klogOpen || isKlogHeader(line) {
			// The stream and time of the wrapper: a klog record
			// continues on its own stream, and is dated by it.
			m.cri, _, _, _ = splitCRI(raw)
			if i := bytes.IndexByte(raw, ' '); i > 0 {
				m.ns, _ = parseTime(raw[:i], false)
			}
		}
	} else if ns, rest, ok := cutExportTime(line); ok {
		line, m.ns, m.wrap = rest, ns, FormatTimestamped
	}
	return line, m
}

// open returns the first line of what the joiner holds open (a klog text
// record, a JSON document), 0 when none: where a reader that stops now
// must start again.
func (j *joiner) open() int {
	switch {
	case j.doc != nil:
		return j.doc.first
	case j.klogNum > 0:
		return j.klogNum
	}
	return 0
}

// idle completes an open klog text record: the stream has nothing more for
// now, and klog writes a record at once. A JSON document stays open.
func (j *joiner) idle() {
	j.out, j.arena = j.out[:0], j.arena[:0]
	if j.klogNum > 0 {
		j.flushKlog()
	}
}

// push takes line num; j.out holds the records it completed, in order.
func (j *joiner) push(line []byte, num int, m lineMeta) {
	j.out, j.arena = j.out[:0], j.arena[:0]
	if j.doc != nil {
		j.doc.feed(line, num, j)
		if j.doc.done {
			j.doc = nil
		}
		return
	}
	if j.klogNum > 0 {
		switch {
		case m.cri >= 0 && j.klogCRI >= 0 && m.cri != j.klogCRI:
			// The kubelet interleaves stdout and stderr: a line of the
			// other stream passes, the record goes on on its own.
			j.out = append(j.out, piece{b: line, num: num, wrap: m.wrap, pass: true})
			return
		case !isKlogHeader(line) && !jsonLine(line) && m.cri == j.klogCRI && !bytes.HasPrefix(line, []byte(klogCreated)):
			j.continueKlog(line)
			return
		}
		j.flushKlog()
	}
	if j.header > 0 && klogFileHeader(line, 3-j.header) {
		j.header--
		return
	}
	j.header = 0
	if t, ok := cutKlogCreated(line); ok {
		j.created, j.header = t, 3
		return
	}
	if isKlogHeader(line) {
		j.klog = append(j.klog[:0], line...)
		j.klogNum, j.klogWrap, j.klogCRI, j.klogOver = num, m.wrap, m.cri, len(line) > j.max
		switch {
		case m.ns != 0:
			j.klogRef = yearRef{ns: m.ns}
		case j.created != 0:
			j.klogRef = yearRef{ns: j.created, after: true}
		default:
			j.klogRef = j.ref
		}
		return
	}
	if t := trimSpace(line); len(t) == 1 && (t[0] == '[' || t[0] == '{') {
		j.doc = &document{max: j.max, top: t[0], depth: 1, start: num, first: num}
		if t[0] == '[' {
			j.doc.elems = 1
		} else {
			j.doc.buf = append(j.doc.buf, '{')
		}
		return
	}
	j.out = append(j.out, piece{b: line, num: num, wrap: m.wrap, pass: true})
}

// interrupt is a line the reader found bad (too long, binary): it ends an
// open klog record; the record of a document it falls in is reported bad,
// and the document goes on.
func (j *joiner) interrupt() {
	j.out, j.arena = j.out[:0], j.arena[:0]
	if j.doc != nil {
		j.doc.broken = true
	}
	if j.klogNum > 0 {
		j.flushKlog()
	}
}

// end completes what the stream left open.
func (j *joiner) end() {
	j.out, j.arena = j.out[:0], j.arena[:0]
	if j.doc != nil {
		j.doc.truncated(j)
		j.doc = nil
	}
	if j.klogNum > 0 {
		j.flushKlog()
	}
}

// jsonLine reports a line that is a JSON object of its own, not the "{"
// of one printed over lines (in a klog message, that continues it).
func jsonLine(line []byte) bool {
	return len(line) > 0 && line[0] == '{' && len(trimSpace(line)) > 1
}

func (j *joiner) continueKlog(line []byte) {
	if j.klogOver || len(j.klog)+1+len(line) > j.max {
		j.klogOver = true
		return
	}
	j.klog = append(append(j.klog, '\n'), line...)
}

func (j *joiner) flushKlog() {
	p := piece{num: j.klogNum, ref: j.klogRef, wrap: j.klogWrap}
	if j.klogOver {
		p.bad = fmt.Sprintf("klog text record longer than %d bytes (--max-line): skipped", j.max)
		p.wrap |= FormatKlogText
	} else {
		p.b = j.keep(j.klog)
	}
	j.out = append(j.out, p)
	j.klogNum = 0
}

// keep copies b to the arena of the current push.
func (j *joiner) keep(b []byte) []byte {
	s := len(j.arena)
	j.arena = append(j.arena, b...)
	return j.arena[s:len(j.arena):len(j.arena)]
}

// klog's file header (klog.go, createLogDirs and create in klog_file.go):
//
//	Log file created at: 2006/01/02 15:04:05
//	Running on machine: HOST
//	Binary: Built with gc go1.22 for linux/amd64
//	Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg
const klogCreated = "Log file created at: "

var klogHeaderLines = []string{"Running on machine: ", "Binary: ", "Log line format: "}

func klogFileHeader(line []byte, i int) bool {
	return i >= 0 && i < len(klogHeaderLines) && bytes.HasPrefix(line, []byte(klogHeaderLines[i]))
}

// cutKlogCreated reads the first line of klog's file header. klog writes
// the process's local time; it is read as UTC, as the records' times are.
func cutKlogCreated(line []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(klogCreated))
	if !ok {
		return 0, false
	}
	t, err := time.Parse("2006/01/02 15:04:05", string(trimSpace(rest)))
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

// cutExportTime removes the "<time> " a CloudWatch Logs export to S3 puts
// before each message, as kubectl logs --timestamps (and oc adm
// must-gather, which uses it) puts before each line, when what follows is
// a record cpid reads (a JSON object or a klog header), and returns the
// time.
func cutExportTime(line []byte) (ns int64, rest []byte, ok bool) {
	if len(line) < 22 || !isDigit(line[0]) {
		return 0, nil, false
	}
	i := bytes.IndexByte(line[:min(len(line), 40)], ' ')
	if i < 20 {
		return 0, nil, false
	}
	rest = line[i+1:]
	if len(rest) == 0 || rest[0] != '{' && !isKlogHeader(rest) {
		return 0, nil, false
	}
	ns, ok = parseTime(line[:i], false)
	return ns, rest, ok
}

// document splits one JSON document printed over many lines (see joiner).
type document struct {
	max   int
	top   byte // '[' or '{'
	depth int
	inStr bool
	esc   bool
	start int // first line of the record being gathered
	first int // the document's first line

	// elems is the depth inside the array whose elements are records; 0
	// while the top-level object is gathered whole, -1 once that array
	// has ended (the rest of the object is skipped).
	elems  int
	inElem bool
	keyOn  bool   // reading a string at depth 1 of the object: a key
	key    []byte // the last key read
	colon  bool   // a ':' after a key naming an array of records

	buf    []byte
	over   bool
	broken bool // a bad line fell in the record
	done   bool
}

// recordArrays are the members whose arrays hold the records: aws logs
// filter-log-events ("events"), Azure Event Hubs and Storage ("records"),
// Cloud Logging's entries.list ("entries").
var recordArrays = map[string]bool{"events": true, "records": true, "entries": true}

func (d *document) feed(line []byte, num int, j *joiner) {
	for i := 0; i <= len(line) && !d.done; i++ {
		c := byte('\n') // between lines
		if i < len(line) {
			c = line[i]
		}
		d.byte(c, num, j)
		if d.done && i+1 < len(line) {
			if rest := trimSpace(line[i+1:]); len(rest) > 0 {
				j.out = append(j.out, piece{b: j.keep(rest), num: num})
			}
		}
	}
}

func (d *document) byte(c byte, num int, j *joiner) {
	gather := d.elems == 0 || d.elems > 0 && d.inElem
	if d.inStr {
		switch {
		case d.esc:
			d.esc = false
		case c == '\\':
			d.esc = true
		case c == '"':
			d.inStr = false
		}
		if d.keyOn {
			if d.inStr {
				d.key = append(d.key, c)
			} else {
				d.keyOn = false
			}
		}
		if gather {
			d.add(c)
		}
		return
	}
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		if gather {
			d.add(c)
		}
		return
	}
	if d.colon {
		d.colon = false
		if c == '[' && d.depth == 1 {
			d.depth, d.elems, d.buf, d.over, d.broken = 2, 2, d.buf[:0], false, false
			return
		}
	}
	if d.elems > 0 && d.depth == d.elems && !d.inElem && c != ',' && c != ']' {
		d.inElem, d.start, d.buf, d.over, d.broken = true, num, d.buf[:0], false, false
		gather = true
	}
	switch c {
	case '"':
		d.inStr = true
		if d.top == '{' && d.depth == 1 && d.elems == 0 {
			d.keyOn, d.key = true, d.key[:0]
		}
	case '{', '[':
		d.depth++
	case '}', ']':
		if d.elems > 0 && d.depth == d.elems && c == ']' {
			d.endElem(j)
			d.depth--
			if d.top == '[' {
				d.done = true
			} else {
				d.elems = -1
			}
			return
		}
		d.depth--
		if d.depth == 0 {
			d.done = true
			if d.elems == 0 {
				d.add(c)
				d.emit(j, d.start)
			}
			return
		}
	case ',':
		if d.elems > 0 && d.depth == d.elems {
			d.endElem(j)
			return
		}
	case ':':
		if d.top == '{' && d.depth == 1 && d.elems == 0 && recordArrays[string(d.key)] {
			d.colon = true
		}
	}
	if gather {
		d.add(c)
	}
}

func (d *document) add(c byte) {
	if d.over {
		return
	}
	if len(d.buf) >= d.max {
		d.over = true
		return
	}
	d.buf = append(d.buf, c)
}

func (d *document) endElem(j *joiner) {
	if d.inElem {
		d.emit(j, d.start)
	}
	d.inElem = false
}

func (d *document) emit(j *joiner, num int) {
	p := piece{num: num, wrap: FormatDocument}
	switch {
	case d.broken:
		p.bad = "record of a JSON document with a bad line in it: skipped"
	case d.over:
		p.bad = fmt.Sprintf("record of a JSON document longer than %d bytes (--max-line): skipped", d.max)
	default:
		p.b = j.keep(trimSpace(d.buf))
	}
	j.out = append(j.out, p)
	d.buf, d.over, d.broken = d.buf[:0], false, false
}

// truncated reports a document the stream ended in.
func (d *document) truncated(j *joiner) {
	what := "JSON document"
	if d.inElem || d.elems == 0 {
		what = "record of a JSON document"
	}
	j.out = append(j.out, piece{num: d.start, wrap: FormatDocument,
		bad: fmt.Sprintf("%s starting here never ends: the stream ends first", what)})
}
