//go:build cgo

package sqlite

/*
// The sqlite3_* functions are mattn/go-sqlite3's copy of SQLite (the one
// copy in the process: two would not see each other's POSIX locks). This
// file declares the few it calls and links with no flag of its own: the
// final link of a program, which has mattn/go-sqlite3's objects, resolves
// them. (cgo's trial link of this package alone cannot; the go command
// then leaves the package to the external linker, which every program
// with mattn/go-sqlite3 uses anyway.) The declarations are sqlite3.h's.
#include "csqlite.h"

typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
extern int sqlite3_config(int, ...);
extern int sqlite3_auto_extension(void(*)(void));
extern int sqlite3_create_function(sqlite3*, const char*, int, int, void*,
	void(*)(sqlite3_context*, int, sqlite3_value**), void(*)(sqlite3_context*, int, sqlite3_value**),
	void(*)(sqlite3_context*));
extern sqlite3 *sqlite3_context_db_handle(sqlite3_context*);
extern void sqlite3_result_int64(sqlite3_context*, long long);
extern int sqlite3_bind_blob(sqlite3_stmt*, int, const void*, int, void(*)(void*));
extern int sqlite3_reset(sqlite3_stmt*);
extern int sqlite3_changes(sqlite3*);
extern long long sqlite3_last_insert_rowid(sqlite3*);

enum {
	CPID_SQLITE_CONFIG_MEMSTATUS = 9,
	CPID_SQLITE_UTF8 = 1,
	CPID_SQLITE_DIRECTONLY = 0x80000, // not callable from a trigger or a view
};

// cpid_exec_batch binds and steps st once per row; ids[r] is the rowid
// row r inserted, 0 when it changed nothing. On an error it returns the
// code, sets *failed to the row, and leaves st unreset for its message.
static int cpid_exec_batch(int64_t h, sqlite3_stmt *st, const char *arena, const cpid_val *v,
		int ncol, int nrow, int64_t *ids, int *failed) {
	sqlite3 *db = cpid_db(h);
	for (int r = 0; r < nrow; r++) {
		for (int c = 1; c <= ncol; c++, v++) {
			int rc;
			switch (v->kind) {
			case CPID_NULL: rc = sqlite3_bind_null(st, c); break;
			case CPID_INT: rc = sqlite3_bind_int64(st, c, v->i); break;
			// A text or blob is bound in place (SQLITE_STATIC, 0): the
			// arena outlives the call. An empty one is not NULL.
			case CPID_TEXT: rc = sqlite3_bind_text(st, c, v->n ? arena + v->i : "", v->n, 0); break;
			default: rc = sqlite3_bind_blob(st, c, v->n ? arena + v->i : "", v->n, 0); break;
			}
			if (rc) {
				*failed = r;
				return rc;
			}
		}
		int rc = sqlite3_step(st);
		if (rc != CPID_SQLITE_DONE) {
			*failed = r;
			return rc;
		}
		ids[r] = sqlite3_changes(db) > 0 ? sqlite3_last_insert_rowid(db) : 0;
		sqlite3_reset(st);
	}
	return 0;
}

// cpid_handle_fn is the SQL function cpid_handle(): the sqlite3* of the
// connection that calls it, as an integer. It is how this package learns
// the handle of a connection that mattn/go-sqlite3 opened, through
// SQLite's public API instead of the driver's private fields.
static void cpid_handle_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	sqlite3_result_int64(ctx, (int64_t)(intptr_t)sqlite3_context_db_handle(ctx));
}

// cpid_register defines cpid_handle() on a new connection: SQLite calls
// it for every connection its copy opens (cpid_init).
static int cpid_register(sqlite3 *db, char **err, const void *api) {
	return sqlite3_create_function(db, "cpid_handle", 0, CPID_SQLITE_UTF8 | CPID_SQLITE_DIRECTONLY, 0,
		cpid_handle_fn, 0, 0);
}

// cpid_init runs once, before the first connection in C. It turns off
// SQLite's count of the memory it holds, which takes a global mutex on
// every allocation (it works only before SQLite initializes, and is
// refused and changes nothing after, so its result is not an error), then
// has cpid_register run on every connection opened from then on.
static int cpid_init(void) {
	sqlite3_config(CPID_SQLITE_CONFIG_MEMSTATUS, 0);
	return sqlite3_auto_extension((void(*)(void))cpid_register);
}
*/
import "C"

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"unsafe"

	mattn "github.com/mattn/go-sqlite3"
)

// cval and cpid_val are one layout, and the kinds of value are numbered
// alike: each line fails to compile (an array of negative length, or one
// that is not [0]) where the two differ.
var (
	_ [0]struct{} = [unsafe.Sizeof(cval{}) - C.sizeof_cpid_val]struct{}{}
	_ [0]struct{} = [unsafe.Offsetof(cval{}.i) - unsafe.Offsetof(C.cpid_val{}.i)]struct{}{}
	_ [0]struct{} = [unsafe.Offsetof(cval{}.n) - unsafe.Offsetof(C.cpid_val{}.n)]struct{}{}
	_ [0]struct{} = [unsafe.Offsetof(cval{}.kind) - unsafe.Offsetof(C.cpid_val{}.kind)]struct{}{}
	_ [0]struct{} = [unsafe.Sizeof(cval{}.n) - unsafe.Sizeof(C.cpid_val{}.n)]struct{}{}
	_ [0]struct{} = [unsafe.Sizeof(cval{}.kind) - unsafe.Sizeof(C.cpid_val{}.kind)]struct{}{}
	_ [0]struct{} = [valNull - C.CPID_NULL]struct{}{}
	_ [0]struct{} = [valInt - C.CPID_INT]struct{}{}
	_ [0]struct{} = [valText - C.CPID_TEXT]struct{}{}
	_ [0]struct{} = [valBlob - C.CPID_BLOB]struct{}{}
)

// haveC says this build has SQLite in C (cgo): the bulk load of a new
// database uses it.
const haveC = true

// openC opens the database at the URI dsn (fileURI) with SQLite in C, as
// one connection whose inserts can go by the batch (batchExec).
func openC(dsn string) (*sql.DB, *batchExec, error) {
	if err := initC(); err != nil {
		return nil, nil, err
	}
	c, err := newCConnector(dsn)
	if err != nil {
		return nil, nil, err
	}
	return oneConn(sql.OpenDB(c)), &batchExec{c: c, stmts: map[string]*C.sqlite3_stmt{}}, nil
}

// newNativeConnector is a pool's connector of SQLite in C (Store with
// OpenOptions.Native).
func newNativeConnector(dsn string) (driver.Connector, error) {
	if err := initC(); err != nil {
		return nil, err
	}
	return newCConnector(dsn)
}

// initC registers cpid_handle() on every connection of SQLite in C, once.
func initC() error {
	cinit.Do(func() {
		if rc := C.cpid_init(); rc != 0 {
			cinitErr = fmt.Errorf("sqlite: register cpid_handle (SQLite error %d)", int(rc))
		}
	})
	return cinitErr
}

var (
	cinit    sync.Once
	cinitErr error
)

// cConnector opens mattn/go-sqlite3 connections with the _pragma
// parameters of fileURI (which that driver does not know) run on each,
// and cpid_body registered. It remembers the handle of the last
// connection it opened: with one connection at most, that is the one
// every transaction is in.
type cConnector struct {
	dsn     string
	pragmas []string
	d       *mattn.SQLiteDriver

	mu   sync.Mutex
	last C.int64_t // the sqlite3* of the last connection, from cpid_handle()
	gen  int       // counts the connections opened
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
			return cpidBody([]driver.Value{cNull(data), cNull(off), cNull(n)})
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

func (c *cConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	h, err := handleOf(ctx, conn.(*mattn.SQLiteConn))
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.mu.Lock()
	c.last, c.gen = h, c.gen+1
	c.mu.Unlock()
	return conn, nil
}

// cNull is v as the pure-Go driver gives it to a function: nil for NULL,
// which mattn/go-sqlite3 gives as a nil []byte.
func cNull(v any) any {
	if b, ok := v.([]byte); ok && b == nil {
		return nil
	}
	return v
}

// handleOf asks the connection for its sqlite3*: cpid_handle(), which
// cpid_init registered on every connection of SQLite in C.
func handleOf(ctx context.Context, conn *mattn.SQLiteConn) (C.int64_t, error) {
	rows, err := conn.QueryContext(ctx, `SELECT cpid_handle()`, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: the connection's handle: %w", err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		if err == io.EOF {
			err = errors.New("no row")
		}
		return 0, fmt.Errorf("sqlite: the connection's handle: %w", err)
	}
	h, ok := v[0].(int64)
	if !ok || h == 0 {
		return 0, fmt.Errorf("sqlite: the connection's handle: cpid_handle() returned %v", v[0])
	}
	return C.int64_t(h), nil
}

func (c *cConnector) Driver() driver.Driver { return c.d }

// handle is the sqlite3* of the connection last opened, as an integer
// for the C functions, and the count of connections then.
func (c *cConnector) handle() (C.int64_t, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.gen
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
	if db == 0 {
		return errors.New("sqlite: a batch with no connection open in C")
	}
	if gen != b.gen {
		// A new connection: the statements of the old one are
		// finalized (mattn/go-sqlite3 closes with sqlite3_close_v2,
		// which keeps the old one until they are).
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

func cError(db C.int64_t, rc C.int) error {
	return &cSQLiteError{code: int(rc), msg: C.GoString(C.cpid_errmsg(db))}
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
