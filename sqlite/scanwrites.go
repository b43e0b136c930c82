package sqlite

import (
	"bytes"
	"context"
	"errors"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

// The columns of ScanWrites' query, in order.
const (
	wcID = iota
	wcAuditID
	wcVerb
	wcGroup
	wcResource
	wcSubresource
	wcNamespace
	wcName
	wcUID
	wcRV
	wcUsername
	wcUserAgent
	wcCode
	wcReceived
	wcStage
	wcCPID
	wcAncestors
	wcTraceparent
	wcOwners
	wcLatency
	wcWantResp
	wcBlock
	wcOffset
	wcReqLen
	wcRespLen
	wcFile
	wcCount
)

// ownCols are the columns of texts of one write alone (cut(i) in
// scanWritesC is the i-th).
var ownCols = [...]int{wcAuditID, wcName, wcUID, wcRV, wcCPID, wcTraceparent}

// scanWritesC is ScanWrites on a native store: the rows come from SQLite
// in C by the batch (scanC). The texts that repeat (verbs, resources,
// namespaces, users, agents) are made once and shared; those of one
// write (its audit ID, name, UID, resource version, CPID, traceparent)
// are one string it shares, one allocation a row.
func (s *Store) scanWritesC(ctx context.Context, query string, args []any, fn func(*cpid.WriteEvent) error) error {
	paths, err := s.filePaths(ctx)
	if err != nil {
		return err
	}
	blocks := s.blockReader()
	in := interner{}
	var slab []cpid.WriteEvent
	var buf []byte
	return scanC(ctx, s.r, query, args, func(b *rows) error {
		for r := range b.len() {
			v := b.vals[r*b.ncol : (r+1)*b.ncol : (r+1)*b.ncol]
			if len(v) < wcCount {
				return errColumns
			}
			if len(slab) == 0 {
				slab = make([]cpid.WriteEvent, 256)
			}
			e := &slab[0]
			slab = slab[1:]
			// One string for the texts of this write alone; ends[i] is
			// where the i-th of them ends in it.
			buf = buf[:0]
			var ends [len(ownCols)]int
			for i, c := range ownCols {
				buf = append(buf, b.bytesAt(v[c])...)
				ends[i] = len(buf)
			}
			all := string(buf)
			cut := func(i int) string {
				if i == 0 {
					return all[:ends[0]]
				}
				return all[ends[i-1]:ends[i]]
			}
			*e = cpid.WriteEvent{ID: v[wcID].i, AuditID: cut(0), Name: cut(1), UID: cut(2),
				ResourceVersion: cut(3), CPID: cut(4), Traceparent: cut(5),
				Verb: in.of(b.bytesAt(v[wcVerb])), APIGroup: in.of(b.bytesAt(v[wcGroup])),
				Resource: in.of(b.bytesAt(v[wcResource])), Subresource: in.of(b.bytesAt(v[wcSubresource])),
				Namespace: in.of(b.bytesAt(v[wcNamespace])), Username: in.of(b.bytesAt(v[wcUsername])),
				UserAgent: in.of(b.bytesAt(v[wcUserAgent])), Code: int(v[wcCode].i),
				ReceivedNS: v[wcReceived].i, StageNS: v[wcStage].i, File: paths[v[wcFile].i]}
			if x := b.bytesAt(v[wcAncestors]); len(x) > 0 {
				e.Ancestors = bytes.Clone(x)
			}
			if x := b.bytesAt(v[wcOwners]); len(x) > 0 {
				e.OwnerRefs = bytes.Clone(x)
			}
			if x := b.bytesAt(v[wcLatency]); len(x) > 0 {
				e.Latency = bytes.Clone(x)
			}
			block, req, resp := v[wcBlock], v[wcReqLen], v[wcRespLen]
			wantResp := v[wcWantResp].i != 0
			if block.kind == valInt && (req.kind == valInt || wantResp && resp.kind == valInt) {
				lens := [3]int64{-1, -1, -1}
				if req.kind == valInt {
					lens[0] = req.i
				}
				if resp.kind == valInt {
					lens[1] = resp.i
				}
				if err := attachBodies(ctx, blocks, e, block.i, v[wcOffset].i, lens, wantResp); err != nil {
					return err
				}
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// errColumns: the query of ScanWrites and its columns here disagree.
var errColumns = errors.New("sqlite: a read in C got other columns than its query names")

// attachBodies gives e its request and, when wanted, its response, from
// block id at off with the lengths lens (bodyblocks.Part).
func attachBodies(ctx context.Context, br *blockReaderOf, e *cpid.WriteEvent, id, off int64, lens [3]int64, wantResp bool) error {
	raw, err := br.raw(ctx, id)
	if err != nil {
		return err
	}
	// Copies: an event may outlive the block's place in the cache.
	if b := blocks.Part(raw, off, lens, 0); len(b) > 0 {
		e.Request = bytes.Clone(b)
	}
	if b := blocks.Part(raw, off, lens, 1); wantResp && len(b) > 0 {
		e.Response = bytes.Clone(b)
	}
	return nil
}

// bytesAt is the text or blob of v in the batch's arena; nil for any
// other value.
func (r *rows) bytesAt(v cval) []byte {
	if v.kind != valText && v.kind != valBlob || v.n == 0 {
		return nil
	}
	return r.arena[v.i : v.i+int64(v.n) : v.i+int64(v.n)]
}

// interner makes each text that repeats one string.
type interner map[string]string

func (in interner) of(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in[string(b)]; ok { // no allocation: the compiler sees a lookup
		return s
	}
	s := string(b)
	if len(in) < 1<<16 {
		in[s] = s
	}
	return s
}
