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
	"runtime"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
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

// newlineBomb is a gzip of n newlines (a multiple of 8 MiB) at the best
// compression, about 1025 times smaller: just over the default ratio, as
// one deflate layer cannot inflate more than about 1032 times. Its
// members repeat one of 8 MiB, which is quicker to make than one stream.
func newlineBomb(t *testing.T, n int) []byte {
	t.Helper()
	member := gzipped(t, bytes.Repeat([]byte("\n"), 8<<20))
	return bytes.Repeat(member, n/(8<<20))
}

// tarOf is a tar of members named m0, m1... with the contents given.
func tarOf(t *testing.T, members ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i, m := range members {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("m%d.log", i), Mode: 0o644, Size: int64(len(m)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInflateLimitEarly: a bomb, in one layer, two, or in the members of
// a bundle, is refused once InflateFloor of it is decompressed, not after
// hundreds of MiB split into lines (issue 30: 10 GiB of newlines took
// 47 s to refuse, at 256 MiB). The layers stream, so what the decoders got
// before the refusal is what was decompressed, but for a read-ahead of at
// most 64 KiB. With a floor of 1 MiB the ratio is still exact: the
// compressed bytes read ahead of the inflater are not counted as inflated
// (counted, they let that bomb run to 65 MB).
func TestInflateLimitEarly(t *testing.T) {
	bomb := newlineBomb(t, 64<<20)
	nested := gzipped(t, newlineBomb(t, 1<<30))
	members := tarOf(t, newlineBomb(t, 8<<20), newlineBomb(t, 8<<20), newlineBomb(t, 8<<20))
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		data  []byte
		floor int64
	}{
		{"one layer", bomb, 0},
		{"one layer, a floor of 1 MiB", bomb, 1 << 20},
		{"gzip of gzip", nested, 0},
		{"tar of gzip bombs", members, 0},
		{"tgz of gzip bombs", gzipped(t, members), 0},
		{"tgz of a plain bomb", gzipped(t, tarOf(t, bytes.Repeat([]byte("\n"), 64<<20))), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			w := &ingest.Walker{Limits: ingest.Limits{InflateFloor: c.floor}}
			var n int64
			err := w.Read(context.Background(), path, func(s ingest.Stream) error {
				m, err := io.Copy(io.Discard, s.R)
				n += m
				return err
			})
			if !errors.Is(err, ingest.ErrInflateLimit) {
				t.Errorf("err = %v after %d bytes, want ErrInflateLimit", err, n)
			}
			floor := c.floor
			if floor == 0 {
				floor = ingest.DefaultInflateFloor
			}
			if n > floor+128<<10 {
				t.Errorf("%d bytes decompressed before the refusal, want at most the floor, %d, and a read-ahead", n, floor)
			}
		})
	}
}

// TestTarMemberLimit: a bundle of more entries than MaxMembers (every
// header counts: files, empty or not, and directories) is refused past
// it, with ErrMemberLimit; the members before it are read.
func TestTarMemberLimit(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "d/", Mode: 0o755, Typeflag: tar.TypeDir})
	for i := range 9 {
		line := fmt.Appendf(nil, "line %d\n", i)
		if i%3 == 0 {
			line = nil
		}
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d/m%d.log", i), Mode: 0o644, Size: int64(len(line)), Typeflag: tar.TypeReg})
		tw.Write(line)
	}
	tw.Close()
	path := filepath.Join(t.TempDir(), "bundle.tar")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		max     int
		streams int
		err     error
	}{{10, 6, nil}, {9, 5, ingest.ErrMemberLimit}, {4, 2, ingest.ErrMemberLimit}} {
		t.Run(fmt.Sprint(c.max), func(t *testing.T) {
			w := &ingest.Walker{Limits: ingest.Limits{MaxMembers: c.max}}
			var streams int
			err := w.Read(context.Background(), path, func(s ingest.Stream) error {
				streams++
				_, err := io.Copy(io.Discard, s.R)
				return err
			})
			if !errors.Is(err, c.err) || (err != nil && !strings.Contains(err.Error(), fmt.Sprintf("more than %d", c.max))) {
				t.Errorf("err = %v, want %v naming the limit", err, c.err)
			}
			if streams != c.streams {
				t.Errorf("%d streams read, want %d (the empty members are not streams)", streams, c.streams)
			}
		})
	}
}

// TestTarEmptyMembers: an empty member costs its header, not a stream
// and its buffers (issue 30: a bundle of 100,000 empty files took 63 s
// and 156 MB).
func TestTarEmptyMembers(t *testing.T) {
	const n = 20000
	path := filepath.Join(t.TempDir(), "empty.tar")
	if err := os.WriteFile(path, tarOf(t, make([][]byte, n)...), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &ingest.Walker{}
	var streams int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := w.Read(context.Background(), path, func(s ingest.Stream) error { streams++; return nil })
	runtime.ReadMemStats(&after)
	if err != nil || streams != 0 {
		t.Errorf("err = %v, %d streams, want none", err, streams)
	}
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 4<<10 {
		t.Errorf("%d bytes allocated a member, want at most 4 KiB (a header)", per)
	}
}

// discard is a sink that stores nothing.
type discard struct{}

func (discard) Write(_ context.Context, b *cpid.Batch) (cpid.Written, error) {
	return cpid.Written{Audits: len(b.Audits), Logs: len(b.Logs)}, nil
}

// TestSmallMembersBuffers: the members of a bundle of one line each do
// not each cost a chunk buffer (576 KiB): the last chunk of a stream
// takes a buffer of its size, and the one left empty at its end goes back
// to the pool.
func TestSmallMembersBuffers(t *testing.T) {
	const n = 1000
	members := make([][]byte, n)
	for i := range members {
		members[i] = fmt.Appendf(nil, `{"level":"info","ts":"2026-11-22T16:27:01Z","msg":"member %d"}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "small.tar")
	if err := os.WriteFile(path, tarOf(t, members...), 0o600); err != nil {
		t.Fatal(err)
	}
	in := &ingest.Ingester{Sink: discard{}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sum, err := in.Run(context.Background(), []string{path})
	runtime.ReadMemStats(&after)
	if err != nil || sum.Written.Logs != n {
		t.Fatalf("err = %v, %d records, want %d", err, sum.Written.Logs, n)
	}
	// About 3 KiB a member; the bound is under one chunk buffer, as the
	// race detector's pools drop some of what they are given (330 KiB).
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 512<<10 {
		t.Errorf("%d bytes allocated a member of one line, want less than a chunk buffer (576 KiB)", per)
	}
}
