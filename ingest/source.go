package ingest

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits bound what the readers accept, so that a hostile or broken bundle
// cannot exhaust memory, disk or time. Zero fields take the defaults.
type Limits struct {
	// MaxLine is the longest line kept; longer ones are reported and skipped
	// without being held in memory. Default 16 MiB.
	MaxLine int
	// MaxInflateRatio is the most decompressed bytes per compressed byte
	// allowed once past InflateFloor: for each gzip layer, against the
	// compressed bytes that layer has consumed, and for an input as a
	// whole, everything decoded from it against the bytes it has consumed
	// on disk. Default 1000: real audit logs compress about 10 to 30
	// times, and one deflate layer cannot inflate more than about 1032
	// times, so only a bomb made at the highest ratio, or of nested
	// layers, is over it.
	MaxInflateRatio int64
	// InflateFloor is how many decompressed bytes, per layer and per
	// input, are always allowed before MaxInflateRatio applies (the ratio
	// of a few bytes says nothing). Default 4 MiB: a bomb is refused once
	// that much of it has been decompressed, a moment's work, since the
	// limits are checked on the bytes as they leave each layer, before
	// lines are split.
	InflateFloor int64
	// MaxMembers is the most entries a tar bundle may have (files,
	// directories, links: every header); the rest of a bundle past it is
	// refused (ErrMemberLimit). Default 100000.
	MaxMembers int
}

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = 16 << 20
	}
	if l.MaxInflateRatio <= 0 {
		l.MaxInflateRatio = 1000
	}
	if l.InflateFloor <= 0 {
		l.InflateFloor = DefaultInflateFloor
	}
	if l.MaxMembers <= 0 {
		l.MaxMembers = DefaultMaxMembers
	}
	return l
}

// The defaults of Limits.InflateFloor and Limits.MaxMembers.
const (
	DefaultInflateFloor = 4 << 20
	DefaultMaxMembers   = 100000
)

// Stream is one input to decode: a plain file, a decompressed .gz, a member
// of a tar bundle, or standard input.
type Stream struct {
	// Name is the path as given (a bundle member is "bundle.tgz!dir/file").
	Name string
	R    io.Reader
	// ModTime is when the stream was last written, as the file system, the
	// tar header or the gzip header says (zero when unknown): the year of
	// klog text lines is inferred from it (docs/INPUTS.md).
	ModTime time.Time
	// Component names the program that wrote the stream: from its path
	// (Component), or Walker.Component for standard input.
	Component string
}

// Notice is something a reader skipped or refused, with its reason. It is
// reported in the ingest summary; it does not stop the run.
type Notice struct {
	Name   string
	Reason string
	// NotLog is set for a file skipped as clearly not a log (a note, a
	// script, a table found beside the logs), which would be read if
	// named on its own.
	NotLog bool
}

func (n Notice) String() string { return n.Name + ": " + n.Reason }

// ErrInflateLimit is returned by a stream whose decompressed size broke
// Limits.MaxInflateRatio.
var ErrInflateLimit = errors.New("decompressed size exceeds the inflate limit (decompression bomb?)")

// ErrMemberLimit is returned by a tar bundle of more entries than
// Limits.MaxMembers.
var ErrMemberLimit = errors.New("tar bundle has too many members")

// Walker finds the streams under a list of paths and reads them in order.
type Walker struct {
	Limits Limits
	Stdin  io.Reader
	// Notice is called for each skipped input; nil ignores them.
	Notice func(Notice)
	// Counted, when set, is wrapped around every file read from disk, so the
	// caller can measure bytes read for progress.
	Counted func(io.Reader) io.Reader
	// Component names the program that wrote standard input (cpid-tui
	// ingest --component), which its name cannot tell.
	Component string
}

// Files expands paths into the files to read, in reading order: directories
// recursively; in each directory the rotated backups of a log before the log
// itself, oldest first by the time (or number) in their names. A file found
// in a directory that is clearly not a log (notes, scripts, tables: notLog)
// is skipped and told to Notice; a file named in paths never is. "-" stands
// for standard input. It fails when a path cannot be read at all.
func (w *Walker) Files(paths []string) ([]string, error) {
	var out []string
	var errs []error
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			switch {
			case d.IsDir():
				return nil
			case d.Type().IsRegular():
				if !w.skipNotLog(fp, nil) {
					files = append(files, fp)
				}
			case d.Type()&fs.ModeSymlink != 0:
				// Follow links to files (kubelet's /var/log/containers
				// are links), never to directories: no loops.
				if t, err := os.Stat(fp); err == nil && t.Mode().IsRegular() {
					if !w.skipNotLog(fp, nil) {
						files = append(files, fp)
					}
				} else {
					w.notice(fp, "symbolic link to something other than a file: skipped")
				}
			default:
				w.notice(fp, "not a regular file: skipped")
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
		sortRotated(files)
		out = append(out, files...)
	}
	return out, errors.Join(errs...)
}

func (w *Walker) notice(name, reason string) {
	if w.Notice != nil {
		w.Notice(Notice{Name: name, Reason: reason})
	}
}

// Read opens one path from Files and calls fn for each stream in it: the file
// itself, its decompressed content, or each member of a tar bundle. fn must
// consume the stream before returning. The error is about the input as a
// whole (cannot open, corrupt compression, inflate limit); errors of fn are
// returned as they are.
func (w *Walker) Read(ctx context.Context, name string, fn func(Stream) error) error {
	var r io.Reader
	var mod time.Time
	if name == "-" {
		if w.Stdin == nil {
			return errors.New("standard input is not available")
		}
		r = w.Stdin
		// A file redirected to standard input has a time; a pipe's is
		// the time of its last write, which says nothing.
		if f, ok := w.Stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				mod = fi.ModTime()
			}
		}
	} else {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
		if fi, err := f.Stat(); err == nil {
			mod = fi.ModTime()
		}
	}
	if w.Counted != nil {
		r = w.Counted(r)
	}
	return w.read(ctx, name, r, mod, fn, 0, false, &budget{lim: w.Limits.withDefaults()})
}

// budget is what one input may decompress: the bytes decoded from it so
// far (out), against the bytes it has consumed on disk (disk), and the
// limits.
type budget struct {
	disk *inlet
	out  int64
	lim  Limits
}

// exceeded reports out bytes of output too many for in bytes of input.
func (b *budget) exceeded(out, in int64) bool {
	return out > b.lim.InflateFloor && out/max(in, 1) > b.lim.MaxInflateRatio
}

// decoded counts n more bytes decoded from the input, and fails when
// they are too many for the bytes it has consumed on disk.
func (b *budget) decoded(n int64) error {
	b.out += n
	if disk := b.disk.consumed(); b.exceeded(b.out, disk) {
		return fmt.Errorf("%w: %d bytes decoded from %d read", ErrInflateLimit, b.out, disk)
	}
	return nil
}

// inlet is one layer's input as it is read: what was read of it (src)
// through its read-ahead (buf). What the layer has consumed is what was
// read less what is still buffered, exact to the byte: counting what was
// read alone would credit a layer with up to 64 KiB it has not inflated
// yet, worth 64 MiB of output at a ratio of 1000, and a bomb at 1030
// times would only be caught gigabytes later.
type inlet struct {
	src countReader
	buf *bufio.Reader
}

// newInlet reads r through buf, which it resets.
func newInlet(r io.Reader, buf *bufio.Reader) *inlet {
	in := &inlet{src: countReader{r: r}, buf: buf}
	buf.Reset(&in.src)
	return in
}

func (l *inlet) consumed() int64 { return l.src.n - int64(l.buf.Buffered()) }

// bufs are the read-ahead buffers of inlets, reused: a tar bundle of
// 100,000 members does not allocate 100,000 of them.
var bufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// gzips are gzip readers, reused: each holds a 32 KiB window and tables
// that a bundle of many compressed members would otherwise allocate for
// each.
var gzips sync.Pool

func gzipReader(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := gzips.Get().(*gzip.Reader); ok {
		return zr, zr.Reset(r)
	}
	return gzip.NewReader(r)
}

// read sniffs the content (not the name) for gzip and tar. gz counts the
// gzip layers already opened: a .gz member of a .tgz bundle is two, more is
// refused, and so is a tar inside a tar. The first inlet read is the
// input's on disk.
func (w *Walker) read(ctx context.Context, name string, r io.Reader, mod time.Time, fn func(Stream) error, gz int, inTar bool, b *budget) error {
	lv := newInlet(r, bufs.Get().(*bufio.Reader))
	defer func() { lv.buf.Reset(nil); bufs.Put(lv.buf) }()
	if b.disk == nil {
		b.disk = lv
	}
	br := lv.buf
	head, _ := br.Peek(512)
	if isGzip(head) {
		if gz >= 2 {
			w.notice(name, "compressed more than twice over: skipped")
			return nil
		}
		zr, err := gzipReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer gzips.Put(zr)
		if !zr.ModTime.IsZero() {
			mod = zr.ModTime // the original's, when gzip kept it
		}
		return w.read(ctx, name, &inflateLimit{r: zr, in: lv, n: gz + 1, b: b}, mod, fn, gz+1, inTar, b)
	}
	if isTar(head) {
		if inTar {
			w.notice(name, "tar archive inside a tar archive: skipped")
			return nil
		}
		return w.readTar(ctx, name, br, fn, gz, b)
	}
	if inTar && !logName(name) {
		// A member is found, not named: notes and scripts packed with
		// the logs are skipped, as in a directory.
		h, _ := br.Peek(sniffBytes)
		if h == nil {
			h = []byte{}
		}
		if w.skipNotLog(name, h) {
			return nil
		}
	}
	// Binary content is found line by line (a NUL byte makes a bad
	// line), not from the head, so that a stray NUL does not hide the
	// valid lines around it.
	s := Stream{Name: name, R: br, ModTime: mod, Component: Component(name)}
	if name == "-" {
		s.Component = w.Component
		// The stream's name is the log's identity in the store (files.path):
		// "-" for every program piped in would make one log of them all,
		// and a leader's handover between two of them unseen.
		if w.Component != "" {
			s.Name = StdinName(w.Component)
		}
	}
	if gz > 0 {
		// What the inlet reads from here on is what the decoders get,
		// counted for the input as a whole as it is read, before lines
		// are split; s.R stays the inlet's buffer, which the line
		// reader reads without another one.
		lv.src.total = b
		if err := b.decoded(lv.src.n); err != nil {
			return err
		}
	}
	return fn(s)
}

// readTar reads a tar bundle as a stream, never extracting it: member names
// are only labels, so absolute paths and ".." cannot escape anywhere. Links
// and special files are skipped; members are read in archive order.
func (w *Walker) readTar(ctx context.Context, name string, r io.Reader, fn func(Stream) error, gz int, b *budget) error {
	tr := tar.NewReader(r)
	for members := 0; ; members++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if members == b.lim.MaxMembers {
			return fmt.Errorf("%w: more than %d, the rest is not read (raise --max-members)", ErrMemberLimit, b.lim.MaxMembers)
		}
		member := name + "!" + cleanMember(h.Name)
		switch h.Typeflag {
		case tar.TypeReg: // tar.Reader reports the old TypeRegA as TypeReg
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeSymlink, tar.TypeLink:
			w.notice(member, "link inside a bundle: skipped")
			continue
		default:
			w.notice(member, fmt.Sprintf("tar entry of type %q: skipped", h.Typeflag))
			continue
		}
		if unsafeMember(h.Name) {
			w.notice(member, fmt.Sprintf("unsafe member name %q: read as %q, nothing is extracted", h.Name, cleanMember(h.Name)))
		}
		if h.Size == 0 {
			continue // nothing to read: an empty member costs its header only
		}
		if err := w.read(ctx, member, tr, h.ModTime, fn, gz, true, b); err != nil {
			var le *LineError
			if errors.As(err, &le) || errors.Is(err, context.Canceled) {
				return err
			}
			return fmt.Errorf("%s: %w", member, err)
		}
	}
}

// cleanMember turns a tar member name into a relative slash path without
// "..", a leading "/" or "./".
func cleanMember(n string) string {
	c := path.Clean("/" + strings.ReplaceAll(n, "\\", "/"))
	return strings.TrimPrefix(c, "/")
}

// unsafeMember reports a name that would escape the extraction directory if
// someone extracted the bundle: absolute, or with a ".." element.
func unsafeMember(n string) bool {
	n = strings.ReplaceAll(n, "\\", "/")
	if path.IsAbs(n) {
		return true
	}
	for _, e := range strings.Split(n, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

func isTar(b []byte) bool {
	return len(b) >= 262 && string(b[257:262]) == "ustar"
}

// countReader counts what is read from r; with total set, it is decoded
// output, counted against the input's inflate limit.
type countReader struct {
	r     io.Reader
	n     int64
	total *budget
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.total != nil {
		if terr := c.total.decoded(int64(n)); terr != nil {
			return n, terr
		}
	}
	return n, err
}

// inflateLimit counts what one gzip layer inflates, as it leaves the
// layer, and fails when it outgrows the compressed bytes the layer has
// consumed (in) by more than the ratio: before lines are split, so that a
// bomb is refused after InflateFloor of it, not after the time it takes
// to split it. The outermost layer's input is the bytes on disk.
type inflateLimit struct {
	r   io.Reader
	in  *inlet
	n   int // the layer, 1 the outermost
	out int64
	b   *budget
}

func (l *inflateLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.out += int64(n)
	if in := l.in.consumed(); l.b.exceeded(l.out, in) {
		return n, fmt.Errorf("%w: gzip layer %d inflated %d bytes from %d", ErrInflateLimit, l.n, l.out, in)
	}
	return n, err
}

var (
	// lumberjack (kube-apiserver --audit-log-path rotation):
	// audit-2006-01-02T15-04-05.000.log and .log.gz
	lumberjackRe = regexp.MustCompile(`^(.*)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3})(\.[^.]+)(\.gz)?$`)
	// kubelet container logs: 0.log.20060102-150405 and .gz
	kubeletRe = regexp.MustCompile(`^(.*\.log)\.(\d{8}-\d{6})(\.gz)?$`)
	// logrotate numbering: x.log.1 (newest backup), x.log.2.gz ...
	numberedRe = regexp.MustCompile(`^(.*)\.(\d+)(\.gz)?$`)
)

// rotation returns the name of the live file that a rotated backup belongs to
// and its age order (larger is newer); the live file itself has MaxInt64.
func rotation(base string) (family string, order int64) {
	if m := lumberjackRe.FindStringSubmatch(base); m != nil {
		if t, err := time.Parse("2006-01-02T15-04-05.000", m[2]); err == nil {
			return m[1] + m[3], t.UnixNano()
		}
	}
	if m := kubeletRe.FindStringSubmatch(base); m != nil {
		if t, err := time.Parse("20060102-150405", m[2]); err == nil {
			return m[1], t.UnixNano()
		}
	}
	if m := numberedRe.FindStringSubmatch(base); m != nil {
		if n, err := strconv.ParseInt(m[2], 10, 64); err == nil && n < 1000 {
			return m[1], -n
		}
	}
	return strings.TrimSuffix(base, ".gz"), math.MaxInt64
}

// sortRotated orders files by directory, then by the log they belong to, then
// oldest backup first and the live file last.
func sortRotated(files []string) {
	type key struct {
		dir, family string
		order       int64
		name        string
	}
	keys := make(map[string]key, len(files))
	for _, f := range files {
		dir, base := filepath.Split(f)
		fam, ord := rotation(base)
		keys[f] = key{dir, fam, ord, base}
	}
	sort.SliceStable(files, func(i, j int) bool {
		a, b := keys[files[i]], keys[files[j]]
		if a.dir != b.dir {
			return a.dir < b.dir
		}
		if a.family != b.family {
			return a.family < b.family
		}
		if a.order != b.order {
			return a.order < b.order
		}
		return a.name < b.name
	})
}

func fileSize(name string) int64 {
	if name == "-" {
		return 0
	}
	fi, err := os.Stat(name)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Family names the log a file belongs to: its directory (or bundle member's)
// and the live file's name, rotation suffixes removed. The rotated backups
// of one apiserver's audit log share it; two apiservers' logs do not.
func Family(name string) string {
	dir, base := path.Split(filepath.ToSlash(name))
	fam, _ := rotation(base)
	return dir + fam
}

var (
	// kubelet's /var/log/pods/NAMESPACE_POD_UID/CONTAINER/N.log
	podLogRe = regexp.MustCompile(`^\d+\.log$`)
	// kubelet's /var/log/containers/POD_NAMESPACE_CONTAINER-ID.log links
	containerLogRe = regexp.MustCompile(`^[^_]+_[^_]+_(.+)-[0-9a-f]{64}\.log$`)
	// OpenShift must-gather: .../pods/POD/CONTAINER/CONTAINER/logs/current.log
	mustGatherLogRe = regexp.MustCompile(`^(current|previous)(\.insecure)?\.log$`)
)

// StdinName is the name standard input is stored under when the program
// that wrote it is given (cpid-tui ingest --component): stdin:PROGRAM.
func StdinName(component string) string { return "stdin:" + component }

// Component names the program that wrote the log at name, from the path
// alone: the container of a kubelet container log (/var/log/pods/NS_POD_UID/
// CONTAINER/0.log, /var/log/containers/POD_NS_CONTAINER-ID.log, as kind
// export logs copies them), the container of an OpenShift must-gather pod
// log (.../CONTAINER/CONTAINER/logs/current.log), else the file's name
// without rotation suffixes and ".log" (kube-controller-manager.log). A
// bundle member is named by its path in the bundle. It is what the records
// of klog text lines, which do not name their program, are attributed to.
func Component(name string) string {
	if name == "-" || name == "" {
		return ""
	}
	if _, member, ok := strings.Cut(name, "!"); ok {
		name = member
	}
	dir, base := path.Split(filepath.ToSlash(name))
	fam, _ := rotation(base)
	parent := path.Base(dir)
	switch {
	case podLogRe.MatchString(fam) && dir != "" && parent != "." && parent != "/":
		return parent
	case mustGatherLogRe.MatchString(fam) && parent == "logs":
		return path.Base(path.Dir(path.Clean(dir)))
	}
	if m := containerLogRe.FindStringSubmatch(fam); m != nil {
		return m[1]
	}
	for _, ext := range []string{".gz", ".log", ".txt"} {
		fam = strings.TrimSuffix(fam, ext)
	}
	return fam
}
