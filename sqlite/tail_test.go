package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestWriteCheckpoints: checkpoints are stored with their batch, their
// counters add up, and each counts the duplicates among the records it
// covers.
func TestWriteCheckpoints(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	audit := func(id byte, file string) cpid.Audit {
		return cpid.Audit{AuditEvent: cpid.AuditEvent{Hash: [16]byte{id}, AuditID: string(rune('a' + id)),
			Stage: "ResponseComplete", StageNS: int64(id) * 1e9}, Pos: cpid.Pos{File: file, Line: int(id)}}
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
			name: "a checkpoint without records moves the position",
			batch: cpid.Batch{
				Checkpoints: []cpid.Checkpoint{ck("b.log", 150, 0, 1)},
			},
			want: map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {150, 1, 0}},
		},
		{
			name: "checkpoints that do not cover the batch are refused, nothing stored",
			batch: cpid.Batch{
				Audits:      []cpid.Audit{audit(5, "a.log")},
				Checkpoints: []cpid.Checkpoint{ck("a.log", 999, 0, 1)},
			},
			wantErr: "checkpoints cover",
			want:    map[string][3]int64{"a.log": {400, 3, 1}, "b.log": {150, 1, 0}},
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
