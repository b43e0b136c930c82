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
// (a temporary file renamed over it), but what is not a file is written
// through and stays what it was: a rename over /dev/null put a file there
// for every program after, as root. A named pipe stands for the devices
// here; a symbolic link keeps pointing at the file it names, which is
// replaced; a directory is refused; a missing directory is named.
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
	read := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(fifo) // blocks until the writer opens it
		if err != nil {
			read <- "error: " + err.Error()
			return
		}
		read <- string(b)
	}()
	if err := writeFile(fifo, fill("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		// Replaced: the reader waits on the pipe nobody opens (left to
		// the end of the test binary).
		t.Fatalf("after writing it, %s is %v (%v), not a named pipe", fifo, fi.Mode(), err)
	}
	if got := <-read; got != "through the pipe" {
		t.Errorf("the pipe's reader got %q", got)
	}

	real, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
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

	if err := writeFile(dir, fill("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writing a directory: %v", err)
	}
	missing := filepath.Join(dir, "nodir", "x.html")
	if err := writeFile(missing, fill("x")); err == nil || !strings.Contains(err.Error(), "no directory "+filepath.Dir(missing)) {
		t.Errorf("writing into a missing directory: %v", err)
	}
}
