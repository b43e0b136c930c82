package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// logFile is one file of a followed log: a rotated backup or the live file.
type logFile struct {
	path  string
	live  bool
	order int64       // age order from the name: larger is newer, the live file is newest
	fi    os.FileInfo // when listed: names move (logrotate renumbers), files do not
}

// stableMembers is listMembers taken twice in a row until both agree, so
// that a rename in the middle of a directory listing (logrotate shifting
// app.log.1 to app.log.2) cannot hide a file or show one twice.
func stableMembers(dir, base string) ([]logFile, error) {
	prev, err := listMembers(dir, base)
	for try := 0; err == nil && try < 20; try++ {
		var cur []logFile
		if cur, err = listMembers(dir, base); err != nil {
			break
		}
		if sameMembers(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

func sameMembers(a, b []logFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || !os.SameFile(a[i].fi, b[i].fi) {
			return false
		}
	}
	return true
}

// listMembers returns the files of the log whose live file is dir/base:
// rotated backups oldest first (lumberjack, kubelet and logrotate names, see
// rotation), then the live file when it exists. A backup present both plain
// and compressed is listed plain: lumberjack removes the plain file only once
// its .gz is complete, so until then the .gz is a partial copy. Temporary
// files (kubelet compresses into NAME.tmp) are left out.
func listMembers(dir, base string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	var ms []logFile
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasSuffix(n, ".tmp") {
			continue
		}
		if n == base {
			ms = append(ms, logFile{path: filepath.Join(dir, n), live: true, order: math.MaxInt64})
			continue
		}
		fam, ord := rotation(n)
		if fam != base || ord == math.MaxInt64 {
			continue
		}
		if plain, ok := strings.CutSuffix(n, ".gz"); ok && names[plain] {
			continue
		}
		ms = append(ms, logFile{path: filepath.Join(dir, n), order: ord})
	}
	kept := ms[:0]
	for _, m := range ms {
		fi, err := os.Stat(m.path)
		if err != nil {
			continue // gone since the listing
		}
		m.fi = fi
		kept = append(kept, m)
	}
	ms = kept
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].order != ms[j].order {
			return ms[i].order < ms[j].order
		}
		return ms[i].path < ms[j].path
	})
	return ms, nil
}

// tailFile is one open file of a followed log, read in complete lines from
// an offset. A plain file is read with ReadAt, so it may keep growing; a
// gzip file (sniffed by content) is a finished backup read as a stream.
type tailFile struct {
	name string
	f    *os.File
	fi   os.FileInfo // at open: os.SameFile finds the file again after renames
	zr   io.Reader   // the decompressed content of a gzip file, else nil
	max  int         // longest line kept

	// head is the start of the content, up to fingerprintMax bytes: it
	// identifies the file across restarts and shows truncation.
	head []byte

	off     int64  // content offset of the first byte not consumed: the end of the last complete line
	line    int    // complete lines consumed
	rd      int64  // content offset of the next byte to read
	buf     []byte // bytes read and not consumed: buf[start:] is content [rd-len(buf)+start, rd)
	start   int
	scanned int   // bytes of buf[start:] known to hold no newline
	skipped int64 // bytes dropped of a line longer than max (off stays at its start)
	eof     bool  // a gzip stream ended: nothing more will come
}

// openTail opens path and positions it at content offset off, which is
// line lines in. A plain file shorter than off is positioned at its end. A
// gzip file is decompressed up to off.
func openTail(path string, off int64, line int, lim Limits) (*tailFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	t := &tailFile{name: path, f: f, fi: fi, max: lim.MaxLine}
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); isGzip(magic[:n]) {
		in := newInlet(f, bufio.NewReaderSize(nil, 64<<10))
		zr, err := gzip.NewReader(in.buf)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("gzip %s: %w", path, err)
		}
		t.zr = &inflateLimit{r: zr, in: in, n: 1, b: &budget{disk: in, lim: lim}}
		// Read the head, then decompress and drop up to off.
		t.head = make([]byte, fingerprintMax)
		n, err := io.ReadFull(t.zr, t.head)
		t.head = t.head[:n]
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			f.Close()
			return nil, fmt.Errorf("gzip %s: %w", path, err)
		}
		t.eof = err != nil
		t.rd = int64(n)
		if off < t.rd {
			t.buf = append(t.buf, t.head[off:]...)
		} else if !t.eof {
			m, err := io.CopyN(io.Discard, t.zr, off-t.rd)
			t.rd += m
			if err != nil && !errors.Is(err, io.EOF) {
				f.Close()
				return nil, fmt.Errorf("gzip %s: %w", path, err)
			}
			t.eof = err != nil
		}
		t.off = min(off, t.rd)
		t.line = line
		return t, nil
	}
	t.off = min(off, fi.Size())
	t.rd, t.line = t.off, line
	t.head = make([]byte, min(fingerprintMax, fi.Size()))
	n, _ := f.ReadAt(t.head, 0)
	t.head = t.head[:n]
	return t, nil
}

func (t *tailFile) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// gz reports a gzip file: a finished backup.
func (t *tailFile) gz() bool { return t.zr != nil }

// fill reads more content into buf; 0 means nothing more for now (the end
// of a plain file) or ever (a gzip stream, t.eof).
func (t *tailFile) fill() (int, error) {
	if t.start > 0 && (t.start >= len(t.buf)/2 || cap(t.buf)-len(t.buf) < 32<<10) {
		n := copy(t.buf, t.buf[t.start:])
		t.buf = t.buf[:n]
		t.start = 0
	}
	if cap(t.buf)-len(t.buf) < 32<<10 {
		nb := make([]byte, len(t.buf), max(256<<10, 2*cap(t.buf)))
		copy(nb, t.buf)
		t.buf = nb
	}
	p := t.buf[len(t.buf):cap(t.buf)]
	var n int
	var err error
	if t.zr != nil {
		if t.eof {
			return 0, nil
		}
		for n == 0 && err == nil {
			n, err = t.zr.Read(p)
		}
		if errors.Is(err, io.EOF) {
			t.eof, err = true, nil
		}
	} else {
		n, err = t.f.ReadAt(p, t.rd)
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	t.buf = t.buf[:len(t.buf)+n]
	t.rd += int64(n)
	return n, err
}

// growHead extends head with the n bytes just read, while it is shorter
// than fingerprintMax and they follow it.
func (t *tailFile) growHead(n int) {
	at := t.rd - int64(n)
	if len(t.head) < fingerprintMax && int64(len(t.head)) >= at && int64(len(t.head)) < t.rd {
		from := len(t.buf) - n + int(int64(len(t.head))-at)
		t.head = append(t.head, t.buf[from:min(len(t.buf), from+fingerprintMax-len(t.head))]...)
	}
}

// lineEvent is what read hands on: a complete line, or a line dropped for
// being longer than the limit (tooLong is its length).
type lineEvent struct {
	text    []byte // valid until the next read
	n       int    // 1-based line number
	start   int64  // content offset of its first byte
	tooLong int64
}

// read consumes up to budget complete lines and hands each to fn. It returns
// how many it consumed; 0 means the file has nothing more for now. A last
// line without its newline is never consumed here (see finish): the writer
// may be in the middle of it.
func (t *tailFile) read(budget int, fn func(lineEvent)) (int, error) {
	done := 0
	for done < budget {
		rest := t.buf[t.start:]
		if i := bytes.IndexByte(rest[t.scanned:], '\n'); i >= 0 {
			end := t.scanned + i
			ev := lineEvent{n: t.line + 1, start: t.off}
			if t.skipped > 0 {
				ev.tooLong = t.skipped + int64(end)
			} else {
				ev.text = trimEOL(rest[:end])
			}
			t.off += t.skipped + int64(end) + 1
			t.skipped = 0
			t.line++
			t.start += end + 1
			t.scanned = 0
			done++
			fn(ev)
			continue
		}
		t.scanned = len(rest)
		if int64(t.scanned)+t.skipped > int64(t.max) {
			// Too long to keep: drop what is held, remember how much.
			t.skipped += int64(len(rest))
			t.start, t.scanned = len(t.buf), 0
		}
		n, err := t.fill()
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		if !t.gz() && !t.sameHead() {
			// Truncated while we read: what was just read may be the
			// new content at an old offset. Drop it; truncated() says so.
			t.buf = t.buf[:len(t.buf)-n]
			t.rd -= int64(n)
			return done, nil
		}
		t.growHead(n)
	}
	return done, nil
}

// finish consumes a last line that has no newline: called once the file is
// known to be finished (a newer file exists and this one was read to its
// end after that was seen), when no writer can complete it any more.
func (t *tailFile) finish(fn func(lineEvent)) {
	rest := t.buf[t.start:]
	if len(rest) == 0 && t.skipped == 0 {
		return
	}
	ev := lineEvent{n: t.line + 1, start: t.off}
	if t.skipped > 0 {
		ev.tooLong = t.skipped + int64(len(rest))
	} else {
		ev.text = trimEOL(rest)
	}
	t.off += t.skipped + int64(len(rest))
	t.skipped = 0
	t.line++
	t.start, t.scanned = len(t.buf), 0
	fn(ev)
}

// pending is how many bytes were read past the last complete line.
func (t *tailFile) pending() int64 { return t.rd - t.off }

// sameHead reports whether the file still starts with the bytes it started
// with: a copytruncate, or any rewrite, changes them.
func (t *tailFile) sameHead() bool {
	if len(t.head) == 0 {
		return true
	}
	var arr [fingerprintMax]byte
	b := arr[:len(t.head)]
	n, _ := t.f.ReadAt(b, 0)
	return n == len(b) && bytes.Equal(b, t.head)
}

// truncated reports a plain file that shrank below what was read, or whose
// head changed: it was truncated (copytruncate) or rewritten in place.
func (t *tailFile) truncated() (bool, error) {
	if t.gz() {
		return false, nil
	}
	fi, err := t.f.Stat()
	if err != nil {
		return false, err
	}
	return fi.Size() < t.rd || !t.sameHead(), nil
}

// errMoved says that a listed file is no longer at its path.
var errMoved = errors.New("renamed since it was listed")

// matchHead reports whether the file listed as m starts with content whose
// first n bytes have fingerprint fp (decompressing a gzip file). It fails
// with errMoved when another file (or none) has taken m's path.
func matchHead(m logFile, fp [16]byte, n int) (bool, error) {
	f, err := os.Open(m.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, errMoved
		}
		return false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, m.fi) {
		return false, errMoved
	}
	var r io.Reader = f
	var magic [2]byte
	if m, _ := f.ReadAt(magic[:], 0); isGzip(magic[:m]) {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return false, nil // a .gz still being written
		}
		r = zr
	}
	var arr [fingerprintMax]byte
	b := arr[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return false, nil
	}
	return fingerprint(b) == fp, nil
}
