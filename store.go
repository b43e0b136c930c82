package cpid

import "context"

// RecordWriter stores batches of records; the storage engines implement it.
// Writing the same batch twice must store nothing the second time (records
// are keyed by their Hash), and a batch is stored in one transaction with its
// checkpoints. It is safe for concurrent use.
type RecordWriter interface {
	Write(ctx context.Context, b *Batch) (Written, error)
}
