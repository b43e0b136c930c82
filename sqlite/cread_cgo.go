//go:build cgo

package sqlite

/*
#include "csqlite.h"

extern int sqlite3_column_count(sqlite3_stmt*);
extern int sqlite3_column_type(sqlite3_stmt*, int);
extern long long sqlite3_column_int64(sqlite3_stmt*, int);
extern const void *sqlite3_column_blob(sqlite3_stmt*, int);
extern int sqlite3_column_bytes(sqlite3_stmt*, int);

enum { CPID_R_SMALL = -1 };

// cpid_bind binds n values, texts copied by SQLite (SQLITE_TRANSIENT).
static int cpid_bind(sqlite3_stmt *st, const char *arena, const cpid_val *v, int n) {
	for (int c = 1; c <= n; c++, v++) {
		int rc;
		switch (v->kind) {
		case CPID_NULL: rc = sqlite3_bind_null(st, c); break;
		case CPID_INT: rc = sqlite3_bind_int64(st, c, v->i); break;
		default: rc = sqlite3_bind_text(st, c, v->n ? arena + v->i : "", v->n, (void(*)(void*))-1); break;
		}
		if (rc) return rc;
	}
	return 0;
}

// cpid_read_batch steps st and copies up to maxrow rows of ncol columns
// into v (row after row) and their texts and blobs into arena, of cap
// bytes. *current says st stands on a row a previous call stepped to but
// could not copy (the arena was full); it is copied first. It returns
// CPID_SQLITE_ROW when the batch is full and rows may follow, CPID_SQLITE_DONE at
// the end, CPID_R_SMALL when a row alone is larger than the arena (*need
// is its size), or SQLite's error code. *nrow and *used say what it
// copied, whatever it returns.
static int cpid_read_batch(sqlite3_stmt *st, int ncol, int maxrow, cpid_val *v, char *arena, int64_t cap,
		int *nrow, int64_t *used, int *current, int64_t *need) {
	int n = 0;
	int64_t off = 0;
	*nrow = 0;
	*used = 0;
	for (;;) {
		if (!*current) {
			int rc = sqlite3_step(st);
			if (rc != CPID_SQLITE_ROW) {
				*nrow = n;
				*used = off;
				return rc;
			}
			*current = 1;
		}
		int64_t size = 0;
		for (int c = 0; c < ncol; c++) {
			int t = sqlite3_column_type(st, c);
			if (t == 3 || t == 4) {
				sqlite3_column_blob(st, c);
				size += sqlite3_column_bytes(st, c);
			}
		}
		if (off + size > cap) {
			*nrow = n;
			*used = off;
			if (n > 0) return CPID_SQLITE_ROW;
			*need = size;
			return CPID_R_SMALL;
		}
		cpid_val *r = v + (int64_t)n * ncol;
		for (int c = 0; c < ncol; c++) {
			switch (sqlite3_column_type(st, c)) {
			case 5: r[c].kind = CPID_NULL; r[c].i = 0; r[c].n = 0; break;
			case 1: case 2: r[c].kind = CPID_INT; r[c].i = sqlite3_column_int64(st, c); r[c].n = 0; break;
			default: {
				int t = sqlite3_column_type(st, c);
				const void *p = sqlite3_column_blob(st, c);
				int len = sqlite3_column_bytes(st, c);
				if (len > 0) memcpy(arena + off, p, len);
				r[c].kind = t == 3 ? CPID_TEXT : CPID_BLOB;
				r[c].i = off;
				r[c].n = len;
				off += len;
			}
			}
		}
		*current = 0;
		if (++n == maxrow) {
			*nrow = n;
			*used = off;
			return CPID_SQLITE_ROW;
		}
	}
}
*/
import "C"

import (
	"context"
	"database/sql"
	"fmt"
	"unsafe"

	mattn "github.com/mattn/go-sqlite3"
)

// scanC runs query with args on a connection of db, a pool of SQLite in C
// (a native Store), and calls fn with each batch of rows: many rows a
// call to C instead of one call per value. A batch's texts and blobs are
// in its arena, valid until fn returns.
func scanC(ctx context.Context, db *sql.DB, query string, args []any, fn func(*rows) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		mc, ok := dc.(*mattn.SQLiteConn)
		if !ok {
			return fmt.Errorf("sqlite: a native read on a connection of %T", dc)
		}
		h, err := handleOf(ctx, mc)
		if err != nil {
			return err
		}
		q := C.CString(query)
		defer C.free(unsafe.Pointer(q))
		var st *C.sqlite3_stmt
		if rc := C.cpid_prepare(h, q, &st); rc != 0 {
			return cError(h, rc)
		}
		defer C.sqlite3_finalize(st)
		bind := &rows{ncol: len(args)}
		for _, a := range args {
			switch v := a.(type) {
			case nil:
				bind.null()
			case int64:
				bind.int(v)
			case int:
				bind.int(int64(v))
			case string:
				bind.text(v)
			default:
				return fmt.Errorf("sqlite: a native read cannot bind %T", a)
			}
		}
		if len(args) > 0 {
			if rc := C.cpid_bind(st, (*C.char)(unsafe.Pointer(unsafe.SliceData(append(bind.arena, 0)))),
				(*C.cpid_val)(unsafe.Pointer(unsafe.SliceData(bind.vals))), C.int(len(args))); rc != 0 {
				return cError(h, rc)
			}
		}
		ncol := int(C.sqlite3_column_count(st))
		// current says that the statement stands on a row the last call
		// stepped to and did not copy (it did not fit): the next one
		// copies it first.
		var current C.int
		return readAhead(ctx, ncol, func(out *rows) (bool, error) {
			var nrow C.int
			var used, need C.int64_t
			for {
				rc := C.cpid_read_batch(st, C.int(ncol), readBatchRows, (*C.cpid_val)(unsafe.Pointer(unsafe.SliceData(out.vals))),
					(*C.char)(unsafe.Pointer(unsafe.SliceData(out.arena))), C.int64_t(cap(out.arena)), &nrow, &used, &current, &need)
				switch rc {
				case C.CPID_SQLITE_ROW, C.CPID_SQLITE_DONE:
				case C.CPID_R_SMALL:
					out.arena = make([]byte, 0, 2*int(need))
					continue
				default:
					return false, cError(h, rc)
				}
				out.vals, out.arena = out.vals[:int(nrow)*ncol], out.arena[:used]
				return rc == C.CPID_SQLITE_DONE, nil
			}
		}, fn)
	})
}
