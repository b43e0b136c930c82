package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpid-dev/cpid"
)

// follow is one followed log: its live path, the file being read, the
// position the next checkpoint stores, and what was read since the last one.
// It is owned by the Tailer's reading goroutine.
type follow struct {
	source    string // the live path, also the checkpoint's key
	dir, base string
	lim       Limits
	notice    func(Notice)
	red       *Redaction

	cur *tailFile // nil: find the file to read at the next step
	// pos is where a restart would go on: in cur once a line of it was
	// consumed, else at the end of the file read before it (posFile), or
	// as loaded from the store (posFile nil).
	pos     cpid.Checkpoint
	posFile *tailFile

	// cri joins CRI partial lines of the current file; while one is
	// pending, the position stays at the start of its first part, so a
	// restart joins it again.
	cri        CRI
	criOff     int64
	criLine    int
	criPending bool

	// join gathers the records that span lines (a klog text record with a
	// multi-line value) of the current file, as ingest does; while one is
	// open the position stays at its first line (joinOff, joinLine). A klog
	// record is completed when the file has nothing more for now.
	join        joiner
	component   string
	joinOff     int64
	joinLine    int
	joinPending bool

	wake    bool   // something may have changed: step it
	retry   bool   // a listed file moved before it was opened: list again
	waiting bool   // said that the log has no file yet
	lastErr string // the last error reported, not repeated

	// audits and logs are the records read since the last checkpoint;
	// their bytes are in arena's buffers until the batch is written.
	audits           []cpid.Audit
	logs             []cpid.Log
	arena            arena
	pendingBytes     int // of the lines the records were decoded from
	lines, bad, loss int64
	newest           int64
	dirty            bool
	m                *Metrics
}

func newFollow(source string, ck cpid.Checkpoint, lim Limits, red *Redaction, notice func(Notice), m *Metrics) *follow {
	f := &follow{source: source, dir: filepath.Dir(source), base: filepath.Base(source), lim: lim,
		red: red, notice: notice, wake: true, m: m, component: Component(source)}
	if ck.FingerprintLen > 0 {
		f.pos = ck
	}
	f.pos.Source = source
	return f
}

// step reads up to budget lines of the log, following rotation, and returns
// how many it read (or 1 when it moved to another file). 0 means nothing
// more for now.
func (f *follow) step(budget int) (int, error) {
	if f.cur == nil {
		if err := f.locate(); err != nil || f.cur == nil {
			if f.retry {
				f.retry = false
				return 1, err // a name moved under us: list again at once
			}
			return 0, err
		}
	}
	n, err := f.cur.read(budget, f.line)
	if n > 0 || err != nil {
		return n, err
	}
	if f.cur.gz() {
		return f.advance(budget)
	}
	trunc, err := f.cur.truncated()
	if err != nil {
		return 0, err
	}
	if trunc {
		lost := f.cur.pending()
		f.possibleLoss(f.cur.name, fmt.Sprintf("truncated in place at line %d (copytruncate?): going on from the copy if one has the same content; %d bytes of an unfinished line dropped", f.cur.line, lost))
		f.endFile()
		f.cur.close()
		f.cur = nil
		return 1, nil
	}
	live, err := os.Stat(f.source)
	if err == nil && os.SameFile(live, f.cur.fi) {
		if f.joinPending && !f.criPending {
			f.join.idle()
			f.takeJoined()
			f.joinPending = false
			f.pos.Offset, f.pos.Line = f.cur.off, f.cur.line
			f.dirty = true
		}
		return 0, nil // caught up with the live file
	}
	return f.advance(budget)
}

// locate finds the file to read: the one whose content the stored position
// names, at its offset; with no position, the oldest file of the log.
func (f *follow) locate() error {
	ms, err := stableMembers(f.dir, f.base)
	if err != nil || len(ms) == 0 {
		if err == nil && !f.waiting {
			f.waiting = true
			f.notice(Notice{Name: f.source, Reason: "no such file yet: waiting for it to appear"})
		}
		return err
	}
	f.refreshPos()
	if f.pos.FingerprintLen > 0 {
		// Newest first: the position is usually in the live file or the
		// last backups.
		for i := len(ms) - 1; i >= 0; i-- {
			ok, err := matchHead(ms[i], f.pos.Fingerprint, f.pos.FingerprintLen)
			if errors.Is(err, errMoved) {
				// Rotation is renaming files: never conclude from a
				// listing that went stale; list again.
				f.retry = true
				return nil
			}
			if err != nil {
				return err
			}
			if ok {
				if err := f.open(ms[i], f.pos.Offset, f.pos.Line); err != nil || f.cur == nil {
					return err
				}
				// The content may have changed between the match and the
				// open (copytruncate): check the head again.
				if n := f.pos.FingerprintLen; len(f.cur.head) < n || fingerprint(f.cur.head[:n]) != f.pos.Fingerprint {
					f.cur.close()
					f.cur, f.retry = nil, true
					return nil
				}
				f.copiedWhileStopped(ms, i)
				return nil
			}
		}
		f.possibleLoss(f.pos.File, fmt.Sprintf("the file read last (line %d) is gone: rotated and pruned before it was read to its end? reading every file of %s from the oldest (duplicates are skipped)", f.pos.Line, f.base))
	}
	return f.open(ms[0], 0, 0)
}

// copiedWhileStopped counts a possible loss when the stored position was in
// the live file and that file, same inode, now holds other content while the
// position's content is in backup ms[i]: copytruncate ran while the tailer
// was stopped. (With rename rotation the live path has a new inode.) A
// compressed backup says nothing either way: gzip removes the renamed
// original, and the filesystem may give its inode to the next live file, so
// the inode hint is only trusted when the backup is a plain file that is not
// the original itself.
func (f *follow) copiedWhileStopped(ms []logFile, i int) {
	last := ms[len(ms)-1]
	if f.posFile != nil || ms[i].live || !last.live || f.pos.File != f.source || f.pos.Inode == 0 ||
		strings.HasSuffix(ms[i].path, ".gz") {
		return
	}
	if dev, ino := fileKey(ms[i].fi); dev == f.pos.Device && ino == f.pos.Inode {
		return // the backup is the renamed original: rename rotation
	}
	if dev, ino := fileKey(last.fi); dev == f.pos.Device && ino == f.pos.Inode {
		f.possibleLoss(f.source, "truncated in place while the tailer was stopped (copytruncate?): going on from the copy")
	}
}

// open opens the listed file m at an offset. When its name now holds
// another file (renamed since the listing), it opens nothing: the next step
// lists again.
func (f *follow) open(m logFile, off int64, line int) error {
	t, err := openTail(m.path, off, line, f.lim)
	if errors.Is(err, fs.ErrNotExist) {
		f.retry = true
		return nil
	}
	if err != nil {
		return err
	}
	if !os.SameFile(t.fi, m.fi) {
		t.close()
		f.retry = true
		return nil
	}
	f.reading(t)
	return nil
}

// reading makes t the current file, with nothing of another pending.
func (f *follow) reading(t *tailFile) {
	f.cur = t
	f.cri = CRI{}
	f.criPending = false
	f.join = joiner{max: f.lim.MaxLine}
	if mt := t.fi.ModTime(); mt.Year() >= 2000 {
		f.join.ref = yearRef{ns: mt.UnixNano()}
	}
	f.joinPending = false
}

// advance moves on from the current file, which is no longer the live one
// (rotated), to the next newer file of the log, once that exists and the
// current file was read to its end after it appeared.
func (f *follow) advance(budget int) (int, error) {
	ms, err := stableMembers(f.dir, f.base)
	if err != nil {
		return 0, err
	}
	idx := -1
	for i, m := range ms {
		if os.SameFile(m.fi, f.cur.fi) {
			idx = i
			break
		}
	}
	if idx < 0 && len(f.cur.head) > 0 {
		// Unlinked: compressed into a .gz of its own content.
		fp := fingerprint(f.cur.head)
		for i, m := range ms {
			if m.live {
				continue
			}
			ok, err := matchHead(m, fp, len(f.cur.head))
			if errors.Is(err, errMoved) {
				return 1, nil // list again
			}
			if ok {
				idx = i
				break
			}
		}
	}
	// Not found: pruned. Pruning removes the oldest files first, so every
	// file left is newer.
	next := idx + 1
	if next >= len(ms) {
		return 0, nil
	}
	if !f.cur.gz() {
		if ms[next].live && ms[next].fi.Size() == 0 {
			// kubelet renames the file, then asks the runtime to reopen it:
			// until the new file has data, the old one may still grow.
			return 0, nil
		}
		// Read to the end once more now that a newer file was seen: a
		// writer that has moved on writes nothing more here.
		if n, err := f.cur.read(budget, f.line); n > 0 || err != nil {
			return n, err
		}
		f.cur.finish(f.line)
	} else if !f.cur.eof {
		return 0, nil
	}
	// Open the next file before leaving this one: if its name moved since
	// the listing, stay here and list again.
	t, err := openTail(ms[next].path, 0, 0, f.lim)
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	if !os.SameFile(t.fi, ms[next].fi) {
		t.close()
		return 1, nil
	}
	if n := min(len(t.head), len(f.cur.head)); n > 0 && bytes.Equal(t.head[:n], f.cur.head[:n]) {
		// The same content: copytruncate has copied the live file (the
		// current file is the copy) and not truncated it yet. Wait.
		t.close()
		return 0, nil
	}
	// With copytruncate the live file keeps its inode while its content
	// is copied away and replaced. Its head was read when it was opened:
	// if no backup appeared since the listing, that head is still the
	// content that follows the current file (the copy is made before the
	// truncation).
	again, err := stableMembers(f.dir, f.base)
	if err != nil {
		t.close()
		return 0, err
	}
	if appeared(ms, again) {
		t.close()
		return 1, nil
	}
	f.endFile()
	f.cur.close()
	f.reading(t)
	return 1, nil
}

// appeared reports a backup in now that was not in before.
func appeared(before, now []logFile) bool {
	for _, n := range now {
		if n.live {
			continue
		}
		found := false
		for _, b := range before {
			if os.SameFile(b.fi, n.fi) {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// endFile reports a CRI partial line the file ended in, and completes
// what the joiner held open.
func (f *follow) endFile() {
	if err := f.cri.End(); err != nil && f.cur != nil {
		f.badLine(cpid.Pos{File: f.cur.name, Line: f.cur.line}, err.Error())
	}
	f.criPending = false
	if f.cur != nil {
		f.join.end()
		f.takeJoined()
	}
	f.joinPending = false
}

// line decodes one line of the current file into the pending records and
// moves the position past it.
func (f *follow) line(ev lineEvent) {
	f.lines++
	f.dirty = true
	f.m.Lines.Add(1)
	pos := cpid.Pos{File: f.cur.name, Line: ev.n}
	defer f.moved(ev)
	if ev.tooLong > 0 {
		f.join.interrupt()
		f.takeJoined()
		f.joinPending = false
		f.badLine(pos, errLineTooLong{int(min(ev.tooLong, math.MaxInt32)), f.lim.MaxLine}.Error())
		return
	}
	text, ok, err := f.cri.Feed(ev.text)
	pending := f.cri.pending[0] || f.cri.pending[1]
	if pending && !f.criPending {
		f.criOff, f.criLine = ev.start, ev.n-1
	}
	f.criPending = pending
	if err != nil {
		f.badLine(pos, err.Error())
		return
	}
	if !ok {
		return
	}
	text, m := wrapMeta(ev.text, text, f.join.klogNum > 0)
	f.join.push(text, ev.n, m)
	f.takeJoined()
	switch open := f.join.open(); {
	case open == 0:
		f.joinPending = false
	case open == ev.n:
		f.joinOff, f.joinLine, f.joinPending = ev.start, ev.n-1, true
	}
}

// takeJoined decodes the records the joiner completed into the pending
// records.
func (f *follow) takeJoined() {
	for _, p := range f.join.out {
		pos := cpid.Pos{File: f.cur.name, Line: p.num}
		if p.bad != "" {
			f.badLine(pos, p.bad)
			continue
		}
		// The record is copied once into the arena and decoded from
		// there: its records keep slices of it (bodies, fields) until
		// their batch is written, as ingest's chunks lend theirs, instead
		// of a copy allocated for each.
		f.pendingBytes += len(p.b)
		audits, logs, _, err := decodeAt(f.arena.keep(p.b), lineInfo{ref: p.ref, component: f.component}, f.red, true)
		if err != nil {
			f.badLine(pos, err.Error())
			continue
		}
		for i := range audits {
			f.audits = append(f.audits, cpid.Audit{AuditEvent: audits[i], Pos: pos})
			f.newest = max(f.newest, audits[i].StageNS)
		}
		for i := range logs {
			f.logs = append(f.logs, cpid.Log{LogRecord: logs[i], Pos: pos})
			f.newest = max(f.newest, logs[i].TimeNS)
		}
	}
	f.join.out, f.join.arena = f.join.out[:0], f.join.arena[:0]
}

// moved sets the position after a consumed line.
func (f *follow) moved(ev lineEvent) {
	f.posFile = f.cur
	f.pos.File = f.cur.name
	switch {
	case f.joinPending:
		f.pos.Offset, f.pos.Line = f.joinOff, f.joinLine
	case f.criPending:
		f.pos.Offset, f.pos.Line = f.criOff, f.criLine
	default:
		f.pos.Offset, f.pos.Line = f.cur.off, f.cur.line
	}
}

func (f *follow) badLine(p cpid.Pos, reason string) {
	f.bad++
	f.dirty = true
	f.m.Bad.Add(1)
	f.notice(Notice{Name: p.String(), Reason: reason})
}

func (f *follow) possibleLoss(name, reason string) {
	f.loss++
	f.dirty = true
	f.m.PossibleLoss.Add(1)
	f.notice(Notice{Name: name, Reason: "possible loss: " + reason})
}

// checkpoint returns the position and counters since the last checkpoint,
// and resets the counters. Its records are f.audits and f.logs.
func (f *follow) checkpoint() cpid.Checkpoint {
	f.refreshPos()
	c := f.pos
	c.Audits, c.Logs = len(f.audits), len(f.logs)
	c.Lines, c.Bad, c.PossibleLoss, c.NewestNS = f.lines, f.bad, f.loss, f.newest
	f.lines, f.bad, f.loss, f.newest = 0, 0, 0, 0
	f.dirty = false
	f.pendingBytes = 0
	return c
}

// refreshPos sets the position's fingerprint from the file it is in.
func (f *follow) refreshPos() {
	if t := f.posFile; t != nil {
		n := int(min(f.pos.Offset, int64(len(t.head))))
		f.pos.Fingerprint, f.pos.FingerprintLen = fingerprint(t.head[:n]), n
		f.pos.Device, f.pos.Inode = fileKey(t.fi)
	}
}

// pendingRecords is how many records wait for the next batch.
func (f *follow) pendingRecords() int { return len(f.audits) + len(f.logs) }

func (f *follow) close() {
	f.arena.drop()
	if f.cur != nil {
		f.cur.close()
		f.cur = nil
	}
}

// arena holds the bytes of a followed log's records until the batch that
// takes them is written: records are copied into buffers of chunkCap bytes
// (from bufPool, as ingest's chunks), and each buffer goes back once the
// arena and every batch that took records of it are done with it
// (chunkBuf's count). It is owned by the reading goroutine.
type arena struct {
	cur  *chunkBuf   // being filled; the arena holds a count of it
	lent []*chunkBuf // buffers with records not yet in a batch, one count each
}

// keep copies b into the arena and returns the copy.
func (a *arena) keep(b []byte) []byte {
	if a.cur == nil || cap(a.cur.b)-len(a.cur.b) < len(b) {
		a.drop()
		var buf []byte
		if len(b) <= chunkCap {
			if p := bufPool.Get().(*[]byte); cap(*p) == chunkCap {
				buf = (*p)[:0]
			}
		}
		if buf == nil {
			buf = make([]byte, 0, max(chunkCap, len(b)))
		}
		a.cur = &chunkBuf{b: buf}
		a.cur.refs.Store(1)
	}
	if n := len(a.lent); n == 0 || a.lent[n-1] != a.cur {
		a.cur.refs.Add(1)
		a.lent = append(a.lent, a.cur)
	}
	s := len(a.cur.b)
	a.cur.b = append(a.cur.b, b...)
	return a.cur.b[s:len(a.cur.b):len(a.cur.b)]
}

// lend hands the counts of the buffers whose records go into a batch to
// that batch's bufs.
func (a *arena) lend(bufs []*chunkBuf) []*chunkBuf {
	bufs = append(bufs, a.lent...)
	clear(a.lent)
	a.lent = a.lent[:0]
	return bufs
}

// drop lets go of the buffer being filled.
func (a *arena) drop() {
	if a.cur != nil {
		a.cur.release()
		a.cur = nil
	}
}
