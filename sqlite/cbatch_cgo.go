//go:build cgo

package sqlite

/*
// The sqlite3_* functions are mattn/go-sqlite3's copy of SQLite, linked
// into the same binary: this package declares what it calls and leaves
// the symbols to the final link (cgo's test link of this package alone
// would call them undefined).
#cgo LDFLAGS: -Wl,--unresolved-symbols=ignore-all
#include <stdint.h>
#include <stdlib.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
extern int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**);
extern int sqlite3_bind_null(sqlite3_stmt*, int);
extern int sqlite3_bind_int64(sqlite3_stmt*, int, long long);
extern int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void(*)(void*));
extern int sqlite3_bind_blob(sqlite3_stmt*, int, const void*, int, void(*)(void*));
extern int sqlite3_step(sqlite3_stmt*);
extern int sqlite3_reset(sqlite3_stmt*);
extern int sqlite3_finalize(sqlite3_stmt*);
extern int sqlite3_changes(sqlite3*);
extern long long sqlite3_last_insert_rowid(sqlite3*);
extern const char *sqlite3_errmsg(sqlite3*);
extern int sqlite3_extended_errcode(sqlite3*);

// cpid_val is cval (rows.go): an integer, or a text or blob at an offset
// of the arena.
typedef struct { int64_t i; int32_t n; int32_t kind; } cpid_val;

// cpid_exec_batch binds and steps st once per row; ids[r] is the rowid
// row r inserted, 0 when it changed nothing. On an error it returns the
// code, sets *failed to the row, and leaves st unreset for its message.
static int cpid_exec_batch(sqlite3 *db, sqlite3_stmt *st, const char *arena, const cpid_val *v,
		int ncol, int nrow, int64_t *ids, int *failed) {
	for (int r = 0; r < nrow; r++) {
		for (int c = 1; c <= ncol; c++, v++) {
			int rc;
			switch (v->kind) {
			case 0: rc = sqlite3_bind_null(st, c); break;
			case 1: rc = sqlite3_bind_int64(st, c, v->i); break;
			// A text or blob is bound in place (SQLITE_STATIC, 0): the
			// arena outlives the call. An empty one is not NULL.
			case 2: rc = sqlite3_bind_text(st, c, v->n ? arena + v->i : "", v->n, 0); break;
			default: rc = sqlite3_bind_blob(st, c, v->n ? arena + v->i : "", v->n, 0); break;
			}
			if (rc) {
				*failed = r;
				return rc;
			}
		}
		int rc = sqlite3_step(st);
		if (rc != 101) { // SQLITE_DONE
			*failed = r;
			return rc;
		}
		ids[r] = sqlite3_changes(db) > 0 ? sqlite3_last_insert_rowid(db) : 0;
		sqlite3_reset(st);
	}
	return 0;
}

static int cpid_prepare(sqlite3 *db, const char *q, sqlite3_stmt **st) {
	return sqlite3_prepare_v2(db, q, -1, st, 0);
}

extern int sqlite3_config(int, ...);

// cpid_no_memstatus turns off SQLite's count of the memory it holds, which
// takes a global mutex on every allocation. It works only before SQLite
// initializes (the first connection): after, it is refused and changes
// nothing.
static int cpid_no_memstatus(void) {
	return sqlite3_config(9, 0); // SQLITE_CONFIG_MEMSTATUS
}
*/
import "C"

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	mattn "github.com/mattn/go-sqlite3"
)

// haveC says this build has SQLite in C (cgo): the bulk load of a new
// database uses it.
const haveC = true

// openC opens the database at the URI dsn (fileURI) with SQLite in C, as
// one connection whose inserts can go by the batch (batchExec).
func openC(dsn string) (*sql.DB, *batchExec, error) {
	memstatus.Do(func() { C.cpid_no_memstatus() })
	c, err := newCConnector(dsn)
	if err != nil {
		return nil, nil, err
	}
	return oneConn(sql.OpenDB(c)), &batchExec{c: c, stmts: map[string]*C.sqlite3_stmt{}}, nil
}

var memstatus sync.Once

// cConnector opens mattn/go-sqlite3 connections with the _pragma
// parameters of fileURI (which that driver does not know) run on each,
// and cpid_body registered. It remembers the last connection it opened:
// with one connection at most, that is the one every transaction is in.
type cConnector struct {
	dsn     string
	pragmas []string
	d       *mattn.SQLiteDriver

	mu   sync.Mutex
	last *mattn.SQLiteConn
	gen  int // counts the connections opened
}

func newCConnector(dsn string) (*cConnector, error) {
	c := &cConnector{dsn: dsn}
	if i := strings.IndexByte(dsn, '?'); i >= 0 {
		q, err := url.ParseQuery(dsn[i+1:])
		if err != nil {
			return nil, fmt.Errorf("database URI %s: %w", dsn, err)
		}
		c.pragmas = q["_pragma"]
		q.Del("_pragma")
		// No mutex of the connection's own (SQLITE_OPEN_NOMUTEX):
		// database/sql gives a connection to one goroutine at a time, and
		// SQLite in serialized mode locks and unlocks it for each value
		// bound and each step, 30 times a row.
		q.Set("_mutex", "no")
		c.dsn = dsn[:i] + "?" + q.Encode()
	}
	c.d = &mattn.SQLiteDriver{ConnectHook: func(conn *mattn.SQLiteConn) error {
		if err := conn.RegisterFunc("cpid_body", func(data, off, n any) (any, error) {
			return cpidBody([]driver.Value{data, off, n})
		}, true); err != nil {
			return err
		}
		for _, p := range c.pragmas {
			name, arg, _ := strings.Cut(p, "(")
			if _, err := conn.ExecContext(context.Background(), "PRAGMA "+name+" = "+strings.TrimSuffix(arg, ")"), nil); err != nil {
				return fmt.Errorf("PRAGMA %s: %w", p, err)
			}
		}
		return nil
	}}
	return c, nil
}

func (c *cConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.last, c.gen = conn.(*mattn.SQLiteConn), c.gen+1
	c.mu.Unlock()
	return conn, nil
}

func (c *cConnector) Driver() driver.Driver { return c.d }

// handle is the sqlite3* of the connection last opened.
func (c *cConnector) handle() (*C.sqlite3, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return nil, 0
	}
	// mattn/go-sqlite3 keeps it unexported in the field db (go.mod pins
	// the version; TestBulk fails if another one moved it).
	f := reflect.ValueOf(c.last).Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		return nil, 0
	}
	return (*C.sqlite3)(f.UnsafePointer()), c.gen
}

// batchExec runs the inserts of a batch of rows in one call to C, in the
// transaction the caller is in (on the one connection).
type batchExec struct {
	c     *cConnector
	gen   int
	stmts map[string]*C.sqlite3_stmt // prepared on connection gen
}

func (b *batchExec) exec(query string, r *rows, ids []int64) error {
	n := r.len()
	if n == 0 {
		return nil
	}
	db, gen := b.c.handle()
	if db == nil {
		return errors.New("sqlite: no connection handle for the batch (mattn/go-sqlite3's SQLiteConn.db)")
	}
	if gen != b.gen {
		b.close()
		b.gen = gen
	}
	st, ok := b.stmts[query]
	if !ok {
		q := C.CString(query)
		defer C.free(unsafe.Pointer(q))
		if rc := C.cpid_prepare(db, q, &st); rc != 0 {
			return cError(db, rc)
		}
		b.stmts[query] = st
	}
	var failed C.int
	rc := C.cpid_exec_batch(db, st, (*C.char)(unsafe.Pointer(unsafe.SliceData(r.arena))),
		(*C.cpid_val)(unsafe.Pointer(unsafe.SliceData(r.vals))), C.int(r.ncol), C.int(n),
		(*C.int64_t)(unsafe.Pointer(unsafe.SliceData(ids))), &failed)
	if rc != 0 {
		err := cError(db, rc)
		C.sqlite3_reset(st)
		return &rowError{row: int(failed), err: err}
	}
	return nil
}

// close finalizes the statements; the connection closes after.
func (b *batchExec) close() {
	for q, st := range b.stmts {
		C.sqlite3_finalize(st)
		delete(b.stmts, q)
	}
}

func cError(db *C.sqlite3, rc C.int) error {
	return &cSQLiteError{code: int(rc), msg: C.GoString(C.sqlite3_errmsg(db))}
}

// cSQLiteError is an error of a batch.
type cSQLiteError struct {
	code int // the extended result code
	msg  string
}

func (e *cSQLiteError) Error() string { return e.msg }

// cCode returns the primary result code of an error of SQLite in C.
func cCode(err error) (int, bool) {
	var me mattn.Error
	if errors.As(err, &me) {
		return int(me.Code), true
	}
	var ce *cSQLiteError
	if errors.As(err, &ce) {
		return ce.code & 0xff, true
	}
	return 0, false
}
