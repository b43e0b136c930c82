package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFileKeepsWhatIsNotAFile: report and export write a file whole
// (a temporary file renamed over it), with the mode of the file replaced,
// but what is not a file is written through and stays what it was: a
// rename over /dev/null put a file there for every program after, as
// root. A named pipe stands for the devices here (one nobody reads is an
// error, not a wait); a symbolic link is followed by the open and stays a
// link, a link to nothing makes the file it names; a directory is
// refused; a missing directory is named.
func TestWriteFileKeepsWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fill := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := writeFile(fifo, fill("nobody reads")); err == nil || !strings.Contains(err.Error(), "no process reads this pipe") {
		t.Errorf("writing a pipe nobody reads: %v", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := writeFile(fifo, fill("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after writing it, %s is %v (%v), not a named pipe", fifo, fi.Mode(), err)
	}
	if got, err := io.ReadAll(r); err != nil || string(got) != "through the pipe" {
		t.Errorf("the pipe's reader got %q (%v)", got, err)
	}

	real, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old, and longer than new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(link, fill("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Errorf("the file the link names holds %q, want new", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("after writing it, %s is %v (%v), not a link", link, fi.Mode(), err)
	}
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink("made.json", dangling); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dangling, fill("made")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "made.json")); string(b) != "made" {
		t.Errorf("the file a link to nothing names holds %q, want made", b)
	}

	// A file replaced keeps its mode; a new one is 0644.
	if err := writeFile(real, fill("again")); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.html")
	if err := writeFile(fresh, fill("x")); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{real: 0o600, fresh: 0o644} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", f, fi.Mode().Perm(), err, want)
		}
	}

	if err := writeFile(dir, fill("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writing a directory: %v", err)
	}
	missing := filepath.Join(dir, "nodir", "x.html")
	if err := writeFile(missing, fill("x")); err == nil || !strings.Contains(err.Error(), "no directory "+filepath.Dir(missing)) {
		t.Errorf("writing into a missing directory: %v", err)
	}
}
