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
	"time"
)

// Limits bound what the readers accept, so that a hostile or broken bundle
// cannot exhaust memory or disk. Zero fields take the defaults.
type Limits struct {
	// MaxLine is the longest line kept; longer ones are reported and skipped
	// without being held in memory. Default 16 MiB.
	MaxLine int
	// MaxInflateRatio is the most decompressed bytes per compressed byte a
	// gzip stream may produce once past InflateFloor. Default 1000 (real audit
	// logs compress about 10 to 30 times).
	MaxInflateRatio int64
	// InflateFloor is how many decompressed bytes are always allowed before
	// MaxInflateRatio applies. Default 256 MiB.
	InflateFloor int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = 16 << 20
	}
	if l.MaxInflateRatio <= 0 {
		l.MaxInflateRatio = 1000
	}
	if l.InflateFloor <= 0 {
		l.InflateFloor = 256 << 20
	}
	return l
}

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
}

func (n Notice) String() string { return n.Name + ": " + n.Reason }

// ErrInflateLimit is returned by a stream whose decompressed size broke
// Limits.MaxInflateRatio.
var ErrInflateLimit = errors.New("decompressed size exceeds the inflate limit (decompression bomb?)")

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
// itself, oldest first by the time (or number) in their names. "-" stands for
// standard input. It fails when a path cannot be read at all.
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
				files = append(files, fp)
			case d.Type()&fs.ModeSymlink != 0:
				// Follow links to files (kubelet's /var/log/containers
				// are links), never to directories: no loops.
				if t, err := os.Stat(fp); err == nil && t.Mode().IsRegular() {
					files = append(files, fp)
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
	// The inflate limits hold for the input as a whole: every gzip layer,
	// and everything decoded from it (all layers, all members), against
	// the bytes read from disk. Per layer, a gzip inside a gzip inflates
	// the limit squared.
	b := &budget{in: &countReader{r: r}, lim: w.Limits.withDefaults()}
	return w.read(ctx, name, b.in, mod, fn, 0, false, b)
}

// budget is what one input may decompress: its bytes read (in), the bytes
// decoded from it so far (out), and the limits.
type budget struct {
	in  *countReader
	out int64
	lim Limits
}

// exceeded reports out bytes of output too many for the input read so far.
func (b *budget) exceeded(out int64) error {
	if out > b.lim.InflateFloor && out/max(b.in.n, 1) > b.lim.MaxInflateRatio {
		return fmt.Errorf("%w: %d bytes from %d compressed", ErrInflateLimit, out, b.in.n)
	}
	return nil
}

// read sniffs the content (not the name) for gzip and tar. gz counts the
// gzip layers already opened: a .gz member of a .tgz bundle is two, more is
// refused, and so is a tar inside a tar.
func (w *Walker) read(ctx context.Context, name string, r io.Reader, mod time.Time, fn func(Stream) error, gz int, inTar bool, b *budget) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(512)
	if isGzip(head) {
		if gz >= 2 {
			w.notice(name, "compressed more than twice over: skipped")
			return nil
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		if !zr.ModTime.IsZero() {
			mod = zr.ModTime // the original's, when gzip kept it
		}
		return w.read(ctx, name, &inflateLimit{r: zr, b: b}, mod, fn, gz+1, inTar, b)
	}
	if isTar(head) {
		if inTar {
			w.notice(name, "tar archive inside a tar archive: skipped")
			return nil
		}
		return w.readTar(ctx, name, br, fn, gz, b)
	}
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
		// Binary content is found line by line (a NUL byte makes a bad
		// line), so that a stray NUL does not hide the valid lines
		// around it.
		s.R = &decoded{r: br, b: b}
	}
	return fn(s)
}

// readTar reads a tar bundle as a stream, never extracting it: member names
// are only labels, so absolute paths and ".." cannot escape anywhere. Links
// and special files are skipped; members are read in archive order.
func (w *Walker) readTar(ctx context.Context, name string, r io.Reader, fn func(Stream) error, gz int, b *budget) error {
	tr := tar.NewReader(r)
	for {
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
		member := name + "!" + cleanMember(h.Name)
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
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

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// inflateLimit fails a gzip layer whose output outgrows the input's bytes
// read by more than the allowed ratio (past a floor).
type inflateLimit struct {
	r   io.Reader
	out int64
	b   *budget
}

func (l *inflateLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.out += int64(n)
	if lerr := l.b.exceeded(l.out); lerr != nil {
		return n, lerr
	}
	return n, err
}

// decoded counts what the decoders get of a compressed input, every
// stream of it together, against the input's inflate limit.
type decoded struct {
	r io.Reader
	b *budget
}

func (d *decoded) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.b.out += int64(n)
	if lerr := d.b.exceeded(d.b.out); lerr != nil {
		return n, lerr
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
