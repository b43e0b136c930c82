package ingest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestInflateLimitTotal: the inflate limit holds for an input as a whole.
// A gzip inside a gzip, each layer under the ratio, and a bundle of gzip
// members, each under it, are refused when what they decode together is
// over it.
func TestInflateLimitTotal(t *testing.T) {
	data := bytes.Repeat([]byte("a"), 32<<20) // no newline: one line, too long, cheap to skip
	inner := gzipped(t, data)
	outer := gzipped(t, inner)
	if r := len(data) / len(inner); r > 2000 {
		t.Fatalf("the inner layer alone inflates %d times: the test needs each layer under the limit", r)
	}
	if r := len(inner) / len(outer); r > 2000 {
		t.Fatalf("the outer layer alone inflates %d times", r)
	}
	if r := len(data) / len(outer); r <= 2000 {
		t.Fatalf("both layers inflate only %d times", r)
	}

	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	member := gzipped(t, bytes.Repeat([]byte("b"), 1<<20)) // at the floor, 1000 times
	for i := range 64 {
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("m%d.log.gz", i), Mode: 0o644, Size: int64(len(member)), Typeflag: tar.TypeReg})
		tw.Write(member)
	}
	tw.Close()
	// Uncompressed tar: each member is a first gzip layer under the floor;
	// together they decode 64 MiB from about 100 KiB.
	bundle := tb.Bytes()
	if r := 64 << 20 / len(bundle); r <= 500 {
		t.Fatalf("the bundle inflates only %d times", r)
	}

	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		data  []byte
		ratio int64
	}{{"nested.log.gz", outer, 2000}, {"bundle.tar", bundle, 500}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			w := &ingest.Walker{Limits: ingest.Limits{MaxInflateRatio: c.ratio, InflateFloor: 1 << 20}}
			var n int64
			err := w.Read(context.Background(), path, func(s ingest.Stream) error {
				m, err := io.Copy(io.Discard, s.R)
				n += m
				return err
			})
			if !errors.Is(err, ingest.ErrInflateLimit) {
				t.Errorf("err = %v after %d bytes, want ErrInflateLimit", err, n)
			}
		})
	}
}
