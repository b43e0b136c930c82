// What cbatch_cgo.go and cread_cgo.go share of SQLite in C: the few
// functions of sqlite3.h both call (resolved as cbatch_cgo.go says), the
// values that cross between Go and C, and the connection's handle.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
extern int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**);
extern int sqlite3_bind_null(sqlite3_stmt*, int);
extern int sqlite3_bind_int64(sqlite3_stmt*, int, long long);
extern int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void(*)(void*));
extern int sqlite3_step(sqlite3_stmt*);
extern int sqlite3_finalize(sqlite3_stmt*);
extern const char *sqlite3_errmsg(sqlite3*);

enum { CPID_SQLITE_ROW = 100, CPID_SQLITE_DONE = 101 };

// cpid_val is cval (rows.go): an integer, or a text or blob at an offset
// of the arena. Its layout is checked against cval's when Go compiles
// (cbatch_cgo.go).
typedef struct { int64_t i; int32_t n; int32_t kind; } cpid_val;
enum { CPID_NULL, CPID_INT, CPID_TEXT, CPID_BLOB };

// cpid_db is the connection whose handle cpid_handle() returned.
static inline sqlite3 *cpid_db(int64_t h) { return (sqlite3*)(intptr_t)h; }

static inline int cpid_prepare(int64_t h, const char *q, sqlite3_stmt **st) {
	return sqlite3_prepare_v2(cpid_db(h), q, -1, st, 0);
}

static inline const char *cpid_errmsg(int64_t h) { return sqlite3_errmsg(cpid_db(h)); }
