package ingest

import (
	"crypto/sha256"
	"fmt"
)

// Checkpoint is where a Tailer stands in one followed log. It travels in the
// Batch of the records read before it and is stored in the same
// transaction, so that after a crash at any instant the tailer goes on from
// exactly what was stored: nothing is lost, nothing is read twice.
//
// The position names a file by its content, not its name or inode: rotation
// renames, compresses and prunes files, and inodes are reused. Counters are
// deltas since the source's previous checkpoint; the store adds them up.
type Checkpoint struct {
	// Source is the followed path: the live file of a log ("audit.log"),
	// whatever rotation does to the files behind it.
	Source string

	// File is the name the file being read had when it was opened: a hint
	// for people, never used to find it again.
	File string
	// Fingerprint is the first 16 bytes of the SHA-256 of the first
	// FingerprintLen bytes of the file's content (decompressed); 0 when no
	// line of the source was stored yet.
	Fingerprint    [16]byte
	FingerprintLen int
	// Offset is how many bytes of the file's content are stored (up to the
	// end of a complete line); Line is how many lines.
	Offset int64
	Line   int
	// Device and Inode of the file when it was read: a hint only.
	Device, Inode uint64

	// Audits and Logs are how many of the batch's records this checkpoint
	// covers: the next ones in order after those of the previous
	// checkpoints of the batch. The store counts their duplicates.
	Audits, Logs int
	// Lines, Bad and PossibleLoss are counted since the previous
	// checkpoint: lines read, lines that could not be decoded, and events
	// where data may have been lost (a truncated file, a file rotated away
	// and pruned before it could be read).
	Lines, Bad, PossibleLoss int64
	// NewestNS is the newest stage (or log) time among the covered records.
	NewestNS int64
}

// fingerprintMax is the most bytes of a file's head that identify it.
const fingerprintMax = 1024

// fingerprint identifies content by its first bytes.
func fingerprint(head []byte) [16]byte {
	sum := sha256.Sum256(head)
	var fp [16]byte
	copy(fp[:], sum[:])
	return fp
}

func (c Checkpoint) String() string {
	return fmt.Sprintf("%s: %s line %d (byte %d)", c.Source, c.File, c.Line, c.Offset)
}
