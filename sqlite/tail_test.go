package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestWriteCheckpoints: checkpoints are stored with their batch, their
// counters add up, and each counts the duplicates among the records it
// covers (audit events and log records), with the pure-Go SQLite and with
// SQLite in C (a tailer's store, cpid.Native: its rows go by the batch).
func TestWriteCheckpoints(t *testing.T) {
	t.Parallel()
	engines := map[string][]cpid.OpenOption{"go": nil}
	if haveC {
		engines["c"] = []cpid.OpenOption{cpid.Native()}
	}
	for name, opts := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.native != (name == "c") {
				t.Fatalf("native %v", s.native)
			}
			testWriteCheckpoints(t, s)
		})
	}
}

func testWriteCheckpoints(t *testing.T, s *Store) {
	ctx := context.Background()
	audit := func(id byte, file string) cpid.Audit {
		return cpid.Audit{AuditEvent: cpid.AuditEvent{Hash: [16]byte{id}, AuditID: string(rune('a' + id)),
			Stage: "ResponseComplete", StageNS: int64(id) * 1e9}, Pos: cpid.Pos{File: file, Line: int(id)}}
	}
	log := func(id byte, file string) cpid.Log {
		return cpid.Log{LogRecord: cpid.LogRecord{Hash: [16]byte{id}, TimeNS: int64(id) * 1e9, Level: "info", Msg: "m",
			Fields: []byte(`{"msg":"m"}`)}, Pos: cpid.Pos{File: file, Line: int(id)}}
	}
	ck := func(src string, off int64, audits int, lines int64) cpid.Checkpoint {
		return cpid.Checkpoint{Source: src, File: src, Fingerprint: [16]byte{9}, FingerprintLen: 100,
			Offset: off, Line: int(lines), Audits: audits, Lines: lines}
	}
	for _, c := range []struct {
		name    string
		batch   cpid.Batch
		wantErr string
		want    map[string][3]int64 // source: offset, records, dups
	}{
		{
			name: "two sources",
			batch: cpid.Batch{
				Audits:      []cpid.Audit{audit(1, "a.log"), audit(2, "a.log"), audit(3, "b.log")},
				Checkpoints: []cpid.Checkpoint{ck("a.log", 200, 2, 2), ck("b.log", 100, 1, 1)},
			},
			want: map[string][3]int64{"a.log": {200, 2, 0}, "b.log": {100, 1, 0}},
		},
		{
			name: "duplicates are counted for the source that read them",
			batch: cpid.Batch{
				Audits:      []cpid.Audit{audit(3, "a.log"), audit(4, "a.log")},
				Checkpoints: []cpid.Checkpoint{ck("a.log", 400, 2, 2)},
			},
			want: map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {100, 1, 0}},
		},
		{
			name: "log records count as records, their duplicates too",
			batch: cpid.Batch{
				Audits:      []cpid.Audit{audit(6, "b.log")},
				Logs:        []cpid.Log{log(1, "b.log"), log(1, "b.log"), log(2, "b.log")},
				Checkpoints: []cpid.Checkpoint{{Source: "b.log", File: "b.log", Fingerprint: [16]byte{9}, FingerprintLen: 100, Offset: 300, Line: 4, Audits: 1, Logs: 3, Lines: 4}},
			},
			want: map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {300, 4, 1}},
		},
		{
			name: "a checkpoint without records moves the position",
			batch: cpid.Batch{
				Checkpoints: []cpid.Checkpoint{ck("b.log", 150, 0, 1)},
			},
			want: map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {150, 4, 1}},
		},
		{
			name: "checkpoints that do not cover the batch are refused, nothing stored",
			batch: cpid.Batch{
				Audits:      []cpid.Audit{audit(5, "a.log")},
				Checkpoints: []cpid.Checkpoint{ck("a.log", 999, 0, 1)},
			},
			wantErr: "checkpoints cover",
			want:    map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {150, 4, 1}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Write(ctx, &c.batch)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			srcs, err := s.TailSources(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][3]int64{}
			for _, r := range srcs {
				got[r.Source] = [3]int64{r.Offset, r.Records, r.Dups}
				if r.Fingerprint != [16]byte{9} || r.FingerprintLen != 100 || r.CommittedNS == 0 {
					t.Errorf("%s: fingerprint %x/%d, committed %d", r.Source, r.Fingerprint, r.FingerprintLen, r.CommittedNS)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("sources %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: offset, records, dups = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}
