//go:build !cgo

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// haveC says this build has SQLite in C (cgo). Without it the bulk load
// uses the pure-Go SQLite, row by row through database/sql.
const haveC = false

func newNativeConnector(string) (driver.Connector, error) {
	return nil, errors.New("sqlite: this cpid-tui was built without cgo")
}

func openC(string) (*sql.DB, *batchExec, error) {
	return nil, nil, errors.New("sqlite: this cpid-tui was built without cgo")
}

// batchExec is never made without cgo.
type batchExec struct{}

func (*batchExec) exec(string, *rows, []int64) error { panic("sqlite: no C SQLite in this build") }

func (*batchExec) close() {}

func cCode(error) (int, bool) { return 0, false }

// scanC is never called without cgo: a Store is native only with it.
func scanC(context.Context, *sql.DB, string, []any, func(*rows) error) error {
	return errors.New("sqlite: no C SQLite in this build")
}
