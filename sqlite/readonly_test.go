package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// readOnlyFile makes the database file and its directory read-only: modes
// 0444 and 0555, and for root, whom modes do not stop, the immutable
// attribute (chattr +i), which stops root too. Cleanup undoes it.
func readOnlyFile(t *testing.T, path string) {
	t.Helper()
	dir := filepath.Dir(path)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
	if os.Geteuid() != 0 {
		return
	}
	if out, err := exec.Command("chattr", "+i", path, dir).CombinedOutput(); err != nil {
		t.Skipf("root, and chattr +i failed (%v: %s): cannot make a file read-only", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path, dir).Run() })
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("the immutable file opens for writing: cannot make a file read-only here")
	}
}

// TestOpenReadOnly: a reading open never creates or migrates a database,
// and reads one it may not write.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "typo.db")
		_, err := Open(ctx, path, cpid.ReadOnly())
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no database") {
			t.Fatalf("Open(missing, ReadOnly) = %v, want an error naming %s", err, path)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("Open(missing, ReadOnly) created %s", path)
		}
	})
	t.Run("older schema", func(t *testing.T) {
		s, path := openAt(t, 5)
		s.Close()
		_, err := Open(ctx, path, cpid.ReadOnly())
		if err == nil || !strings.Contains(err.Error(), "schema version 5") || !strings.Contains(err.Error(), "0006_cluster.sql") ||
			!strings.Contains(err.Error(), "cpid-tui reconstruct") {
			t.Fatalf("Open(version 5, ReadOnly) = %v, want the version needed and how to migrate", err)
		}
		s, err = Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// Migrated by the writing open only.
		ms, _ := migrations()
		latest := ms[len(ms)-1].Version
		if v, err := s.SchemaVersion(ctx); err != nil || v != latest {
			t.Errorf("after a writing open: schema version %d, %v; want %d", v, err, latest)
		}
	})
	t.Run("not migrated", func(t *testing.T) {
		s, path := openAt(t, 5)
		defer s.Close()
		Open(ctx, path, cpid.ReadOnly())
		if v, err := s.SchemaVersion(ctx); err != nil || v != 5 {
			t.Errorf("after a reading open: schema version %d, %v; want 5 still", v, err)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "empty.db")
		os.WriteFile(path, nil, 0o600)
		if _, err := Open(ctx, path, cpid.ReadOnly()); err == nil || !strings.Contains(err.Error(), "no cpid schema") {
			t.Fatalf("Open(empty file, ReadOnly) = %v, want no cpid schema", err)
		}
	})
	t.Run("read-only file and directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ro.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		b := &cpid.Batch{Audits: []cpid.Audit{{AuditEvent: cpid.AuditEvent{AuditID: "a", Stage: "ResponseComplete", Verb: "get", Hash: [16]byte{1}}, Pos: cpid.Pos{File: "f", Line: 1}}}}
		if _, err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		s.Close()
		readOnlyFile(t, path)
		s, err = Open(ctx, path, cpid.ReadOnly())
		if err != nil {
			t.Fatalf("Open(read-only file, ReadOnly): %v", err)
		}
		defer s.Close()
		cs, err := s.Clusters(ctx)
		if err != nil || len(cs) != 1 {
			t.Errorf("Clusters = %v, %v; want the default cluster", cs, err)
		}
		if _, err := s.Write(ctx, b); err == nil {
			t.Error("Write through a read-only store succeeded")
		}
	})
}

// TestIsFull: a write the database has no room for (max_page_count, as a
// full disk would) is told apart from other errors.
func TestIsFull(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	var pages int
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	b := &cpid.Batch{}
	for i := range 2000 {
		b.Audits = append(b.Audits, cpid.Audit{AuditEvent: cpid.AuditEvent{AuditID: fmt.Sprint(i), Hash: [16]byte{byte(i), byte(i >> 8)}, Stage: "ResponseComplete", Verb: "get"},
			Pos: cpid.Pos{File: "f", Line: i + 1}})
	}
	_, err := s.Write(ctx, b)
	if err == nil || !IsFull(err) {
		t.Fatalf("Write past max_page_count = %v; IsFull %v", err, IsFull(err))
	}
	if IsFull(errors.New("no such table")) {
		t.Error("IsFull of another error")
	}
}
