package blocks

import (
	"context"
	"sync"
)

// Tx is what an engine does with blocks inside one of its transactions:
// SQL only; Writer decides what to store.
type Tx interface {
	// Last returns the id and decompressed size of the last block of
	// cluster and kind (ok false when there is none), locking it until the
	// transaction ends where the engine has row locks, so that writers of
	// one cluster append to it in turn.
	Last(ctx context.Context, cluster, kind string) (id, rawLen int64, ok bool, err error)
	// Content returns block id's decompressed content, of rawLen bytes.
	Content(ctx context.Context, id, rawLen int64) ([]byte, error)
	// Put stores the blocks Pack returned (inserting those of ID 0 and
	// setting their ID, updating the others) and the references.
	Put(ctx context.Context, cluster, kind string, bs []*Block, refs []Ref) error
}

// Writer packs the bodies of a database's transactions into its blocks.
// It remembers the content of each cluster's open blocks as it stored them,
// so that the next transaction appends to them without reading them back
// (unless another writer changed them meanwhile). It is safe for
// concurrent use.
type Writer struct {
	mu   sync.Mutex
	open map[string]Block // cluster and kind -> the open block as last committed
}

// Write packs bodies into the cluster's blocks through tx, each kind
// apart: the open block of a kind takes them first and is written again.
// It returns what to call once the transaction committed.
func (w *Writer) Write(ctx context.Context, tx Tx, cluster string, bodies []Body) (committed func(), err error) {
	var lasts []func()
	for _, kind := range Kinds {
		of := OfKind(bodies, kind)
		if len(of) == 0 {
			continue
		}
		open, err := w.load(ctx, tx, cluster, kind)
		if err != nil {
			return nil, err
		}
		bs, refs := Pack(open, of)
		if len(bs) == 0 {
			continue
		}
		if err := tx.Put(ctx, cluster, kind, bs, refs); err != nil {
			return nil, err
		}
		// The blocks before the last are sealed and stored: their
		// contents are not read again (Put compressed them).
		for _, b := range bs[:len(bs)-1] {
			recycle(b.Raw)
		}
		last := bs[len(bs)-1]
		lasts = append(lasts, func() { w.remember(cluster, kind, last) })
	}
	return func() {
		for _, f := range lasts {
			f()
		}
	}, nil
}

// Forget drops what is remembered of cluster's blocks: a transaction that
// wrote them failed.
func (w *Writer) Forget(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range Kinds {
		delete(w.open, cluster+"\x00"+k)
	}
}

func (w *Writer) remember(cluster, kind string, last *Block) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open == nil {
		w.open = map[string]Block{}
	}
	if Open(int64(len(last.Raw))) {
		w.open[cluster+"\x00"+kind] = Block{ID: last.ID, Raw: last.Raw}
	} else {
		delete(w.open, cluster+"\x00"+kind)
	}
}

// load returns the open block of cluster and kind, nil when the last one
// is full or there is none. The content remembered is reused when the block
// is as this writer left it (same id, same size: blocks only grow).
func (w *Writer) load(ctx context.Context, tx Tx, cluster, kind string) (*Block, error) {
	id, rawLen, ok, err := tx.Last(ctx, cluster, kind)
	if err != nil || !ok || !Open(rawLen) {
		return nil, err
	}
	raw := newRaw(0) // Pack appends to it
	w.mu.Lock()
	o, ok := w.open[cluster+"\x00"+kind]
	w.mu.Unlock()
	if ok && o.ID == id && int64(len(o.Raw)) == rawLen {
		return &Block{ID: id, Raw: append(raw, o.Raw...)}, nil
	}
	content, err := tx.Content(ctx, id, rawLen)
	if err != nil {
		return nil, err
	}
	return &Block{ID: id, Raw: append(raw, content...)}, nil
}
