package ingest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestSortRotated(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "lumberjack backups oldest first, live last",
			in: []string{"a/audit.log", "a/audit-2026-11-22T16-27-01.500.log.gz", "a/audit-2026-11-22T16-26-45.615.log.gz",
				"a/audit-2026-11-22T16-26-59.899.log"},
			want: []string{"a/audit-2026-11-22T16-26-45.615.log.gz", "a/audit-2026-11-22T16-26-59.899.log",
				"a/audit-2026-11-22T16-27-01.500.log.gz", "a/audit.log"},
		},
		{
			name: "kubelet container log rotation",
			in:   []string{"p/0.log", "p/0.log.20261122-162700.gz", "p/0.log.20261122-162800", "p/0.log.20261122-162600.gz"},
			want: []string{"p/0.log.20261122-162600.gz", "p/0.log.20261122-162700.gz", "p/0.log.20261122-162800", "p/0.log"},
		},
		{
			name: "logrotate numbering: higher is older",
			in:   []string{"x.log", "x.log.1", "x.log.3.gz", "x.log.2.gz"},
			want: []string{"x.log.3.gz", "x.log.2.gz", "x.log.1", "x.log"},
		},
		{
			name: "families apart, directories apart",
			in:   []string{"b/kcm.log", "a/sched.log", "a/audit.log", "a/audit-2026-01-01T00-00-00.000.log"},
			want: []string{"a/audit-2026-01-01T00-00-00.000.log", "a/audit.log", "a/sched.log", "b/kcm.log"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := append([]string(nil), c.in...)
			sortRotated(got)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 300)
	in := "a\r\nbb\n\n" + long + "\n" + "c\n" + strings.Repeat("y", 100) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 200)
	type res struct {
		line string
		n    int
		long bool
	}
	var got []res
	for {
		l, n, err := lr.next()
		if err == io.EOF {
			break
		}
		var tl errLineTooLong
		if errors.As(err, &tl) {
			got = append(got, res{"", n, true})
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res{string(l), n, false})
	}
	want := []res{{"a", 1, false}, {"bb", 2, false}, {"", 3, false}, {"", 4, true}, {"c", 5, false},
		{strings.Repeat("y", 100), 6, false}, {"last", 7, false}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

// TestLineReaderLongLineMemory checks that a line far longer than the limit
// is skipped without being held: the buffer stays near the limit.
func TestLineReaderLongLineMemory(t *testing.T) {
	r := io.MultiReader(strings.NewReader(strings.Repeat("z", 50<<20)), strings.NewReader("\nok\n"))
	lr := newLineReader(r, 1<<20)
	if _, _, err := lr.next(); !errors.As(err, new(errLineTooLong)) {
		t.Fatalf("err = %v, want errLineTooLong", err)
	}
	c := cap(lr.scratch)
	for _, p := range lr.parts {
		c += cap(p)
	}
	if c > 4<<20 {
		t.Errorf("buffer grew to %d bytes for a 50 MB line with a 1 MB limit", c)
	}
	if l, n, err := lr.next(); err != nil || string(l) != "ok" || n != 2 {
		t.Errorf("next line = %q %d %v", l, n, err)
	}
}

// TestLineReaderLongLineCost: a long line within the limit costs about
// twice its size to read (its parts, then the line), not the dozen copies
// of a slice grown by append.
func TestLineReaderLongLineCost(t *testing.T) {
	const size = 32 << 20
	text := strings.Repeat("x", size) + "\nok\n"
	lr := newLineReader(strings.NewReader(text), 64<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, n, err := lr.next()
	runtime.ReadMemStats(&after)
	if err != nil || len(l) != size || n != 1 {
		t.Fatalf("next = %d bytes, line %d, %v", len(l), n, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 5*size/2 {
		t.Errorf("reading a %d MiB line allocated %d MiB, want at most 2.5 times the line", size>>20, got>>20)
	}
	if cap(l) != size+1 {
		t.Errorf("the line's slice has capacity %d for %d bytes and its newline", cap(l), size+1)
	}
	if l, n, err := lr.next(); err != nil || string(l) != "ok" || n != 2 {
		t.Errorf("next line = %q %d %v", l, n, err)
	}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func readAll(t *testing.T, w *Walker, path string) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	err := w.Read(context.Background(), path, func(s Stream) error {
		b, err := io.ReadAll(s.R)
		got[s.Name] = string(b)
		return err
	})
	return got, err
}

func TestReadSniffsContent(t *testing.T) {
	dir := t.TempDir()
	// A gzip file without .gz in its name, a tar.gz with a nested .gz member,
	// a link and a device entry. (Binary content is found line by line:
	// TestBinaryLines.)
	plain := filepath.Join(dir, "compressed-without-suffix")
	os.WriteFile(plain, gz(t, []byte("hello\n")), 0o644)

	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	add := func(h *tar.Header, body []byte) {
		h.Size = int64(len(body))
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		tw.WriteHeader(h)
		tw.Write(body)
	}
	add(&tar.Header{Name: "logs/", Typeflag: tar.TypeDir}, nil)
	add(&tar.Header{Name: "logs/a.log", Typeflag: tar.TypeReg}, []byte("a1\na2\n"))
	add(&tar.Header{Name: "logs/audit-2026-01-01T00-00-00.000.log.gz", Typeflag: tar.TypeReg}, gz(t, []byte("z1\n")))
	add(&tar.Header{Name: "/etc/abs.log", Typeflag: tar.TypeReg}, []byte("abs\n"))
	add(&tar.Header{Name: "logs/link", Typeflag: tar.TypeSymlink, Linkname: "../../etc/shadow"}, nil)
	add(&tar.Header{Name: "dev", Typeflag: tar.TypeChar}, nil)
	tw.Close()
	bundle := filepath.Join(dir, "bundle.tgz")
	os.WriteFile(bundle, gz(t, tb.Bytes()), 0o644)

	var notices []string
	w := &Walker{Notice: func(n Notice) { notices = append(notices, n.String()) }}
	got, err := readAll(t, w, plain)
	if err != nil || got[plain] != "hello\n" {
		t.Errorf("gzip by content: %v %q", err, got)
	}
	got, err = readAll(t, w, bundle)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		bundle + "!logs/a.log":                                "a1\na2\n",
		bundle + "!logs/audit-2026-01-01T00-00-00.000.log.gz": "z1\n",
		bundle + "!etc/abs.log":                               "abs\n",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("member %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("streams = %v", got)
	}
	all := strings.Join(notices, "\n")
	for _, want := range []string{"logs/link: link inside a bundle: skipped", "dev: tar entry", "unsafe member name \"/etc/abs.log\""} {
		if !strings.Contains(all, want) {
			t.Errorf("notices lack %q:\n%s", want, all)
		}
	}
}

func TestInflateLimit(t *testing.T) {
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.log.gz")
	// 64 MiB of one letter compress to about 64 KiB: a ratio of about 1000.
	os.WriteFile(bomb, gz(t, bytes.Repeat([]byte("a"), 64<<20)), 0o644)
	w := &Walker{Limits: Limits{MaxInflateRatio: 100, InflateFloor: 1 << 20}}
	err := w.Read(context.Background(), bomb, func(s Stream) error {
		_, err := io.Copy(io.Discard, s.R)
		return err
	})
	if !errors.Is(err, ErrInflateLimit) {
		t.Errorf("err = %v, want ErrInflateLimit", err)
	}
	// Ordinary text is never refused, past the floor too: 4.2 MB of one
	// line over and over inflates about 340 times.
	text := filepath.Join(dir, "text.log.gz")
	os.WriteFile(text, gz(t, bytes.Repeat([]byte(`{"kind":"Event","stage":"ResponseComplete"}`+"\n"), 100000)), 0o644)
	w = &Walker{}
	if _, err := readAll(t, w, text); err != nil {
		t.Errorf("ordinary gzip refused: %v", err)
	}
}

func TestFilesErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.log"), []byte("x\n"), 0o644)
	os.Symlink(filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"))
	os.Symlink(dir, filepath.Join(dir, "loop"))
	var notices []string
	w := &Walker{Notice: func(n Notice) { notices = append(notices, n.String()) }}
	files, err := w.Files([]string{dir, filepath.Join(dir, "missing"), "-"})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v, want the missing path", err)
	}
	want := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), "-"}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files = %v, want %v", files, want)
	}
	if !strings.Contains(strings.Join(notices, "\n"), "loop: symbolic link to something other than a file") {
		t.Errorf("notices = %v", notices)
	}
}
