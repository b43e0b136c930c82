package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/cpid-dev/cpid"
)

// rows is a batch of rows for one INSERT statement, its values packed
// without Go pointers (texts and blobs in one arena, by offset) so that
// the whole batch crosses to C SQLite in one call (batchExec). The same
// batch runs through database/sql where there is no C SQLite: one list
// of columns either way.
type rows struct {
	ncol  int
	arena []byte
	vals  []cval
}

// cval is one value; its layout is the C struct cpid_val's (cbatch_cgo.go).
type cval struct {
	i    int64 // an integer, or the offset of a text or blob in the arena
	n    int32 // the length of a text or blob
	kind int32
}

const (
	valNull int32 = iota
	valInt
	valText
	valBlob
)

// rowsPool keeps batches' arenas from one write to the next.
var rowsPool = sync.Pool{New: func() any { return &rows{} }}

// newRows is an empty batch of rows of ncol values from the pool; give it
// back with put.
func newRows(ncol int) *rows {
	r := rowsPool.Get().(*rows)
	r.reset(ncol)
	return r
}

func (r *rows) put() { rowsPool.Put(r) }

func (r *rows) reset(ncol int) {
	r.ncol, r.arena, r.vals = ncol, r.arena[:0], r.vals[:0]
}

func (r *rows) len() int { return len(r.vals) / r.ncol }

func (r *rows) null() { r.vals = append(r.vals, cval{kind: valNull}) }

func (r *rows) int(i int64) { r.vals = append(r.vals, cval{i: i, kind: valInt}) }

func (r *rows) text(s string) {
	r.vals = append(r.vals, cval{i: int64(len(r.arena)), n: int32(len(s)), kind: valText})
	r.arena = append(r.arena, s...)
}

func (r *rows) blob(b []byte) { r.bytes(b, valBlob) }

// bytes stores b as a value of kind (a text or a blob).
func (r *rows) bytes(b []byte, kind int32) {
	r.vals = append(r.vals, cval{i: int64(len(r.arena)), n: int32(len(b)), kind: kind})
	r.arena = append(r.arena, b...)
}

// textOrNull stores "" as NULL.
func (r *rows) textOrNull(s string) {
	if s == "" {
		r.null()
		return
	}
	r.text(s)
}

// intOrNull stores 0 as NULL.
func (r *rows) intOrNull(i int64) {
	if i == 0 {
		r.null()
		return
	}
	r.int(i)
}

// jsonText stores a JSON value as cpid.JSONText does (NULL for none or
// null), without making a string of it first.
func (r *rows) jsonText(b []byte) {
	if len(b) == 0 || string(b) == "null" {
		r.null()
		return
	}
	r.bytes(b, valText)
}

// jsonStrings stores a list of strings as cpid.JSONStrings does (a JSON
// array, NULL for none), written in place when no string needs escaping.
func (r *rows) jsonStrings(ss []string) {
	if len(ss) == 0 {
		r.null()
		return
	}
	for _, s := range ss {
		if !plainJSON(s) {
			r.text(cpid.JSONStrings(ss).(string)) // encoding/json's escapes
			return
		}
	}
	start := len(r.arena)
	r.arena = append(r.arena, '[')
	for i, s := range ss {
		if i > 0 {
			r.arena = append(r.arena, ',')
		}
		r.arena = append(r.arena, '"')
		r.arena = append(r.arena, s...)
		r.arena = append(r.arena, '"')
	}
	r.arena = append(r.arena, ']')
	r.vals = append(r.vals, cval{i: int64(start), n: int32(len(r.arena) - start), kind: valText})
}

// plainJSON reports whether encoding/json writes s as it is between
// quotes: printable ASCII but for the characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x80, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// args returns row i's values for database/sql, in dst. Texts point into
// the arena: they are valid until the next reset, and the driver copies
// them when it binds.
func (r *rows) args(i int, dst []any) []any {
	dst = dst[:0]
	for _, v := range r.vals[i*r.ncol : (i+1)*r.ncol] {
		switch v.kind {
		case valNull:
			dst = append(dst, nil)
		case valInt:
			dst = append(dst, v.i)
		case valText:
			if v.n == 0 {
				dst = append(dst, "")
			} else {
				dst = append(dst, unsafe.String(&r.arena[v.i], v.n))
			}
		case valBlob:
			dst = append(dst, r.arena[v.i:v.i+int64(v.n):v.i+int64(v.n)])
		}
	}
	return dst
}

// execRows runs query once per row of r in tx, and sets ids[i] to the
// rowid row i inserted, or 0 when it inserted nothing (an INSERT OR IGNORE
// of a duplicate). It goes by the C batch when there is one (tx is then
// a transaction of its connection).
func execRows(ctx context.Context, tx *sql.Tx, batch *batchExec, query string, r *rows, ids []int64) error {
	if batch != nil {
		return batch.exec(query, r, ids)
	}
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	var args []any
	for i := range r.len() {
		args = r.args(i, args)
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return &rowError{row: i, err: err}
		}
		ids[i] = 0
		if n, _ := res.RowsAffected(); n > 0 {
			if ids[i], err = res.LastInsertId(); err != nil {
				return &rowError{row: i, err: err}
			}
		}
	}
	return nil
}

// atRow says which row of a batch err is of, by what(row), when it is a
// row's (rowError).
func atRow(err error, what func(row int) string) error {
	var re *rowError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %w", what(re.row), err)
	}
	return err
}

// rowError is the failure of one row of a batch.
type rowError struct {
	row int
	err error
}

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }
