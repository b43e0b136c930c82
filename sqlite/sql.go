package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"

	"modernc.org/sqlite"

	"github.com/cpid-dev/cpid"
)

// QuerySQL runs query (cpid.SQLReader), which must be one statement that
// reads (cpid.ReadStatement), on a query-only connection with an
// authorizer that lets SQLite compile nothing but reads: no write, no
// ATTACH or DETACH (a file created before query_only refuses it), no
// transaction control, no pragma that sets a value. The bodies view and
// cpid_body work.
func (s *Store) QuerySQL(ctx context.Context, query string, fn func(columns []string, values []any) error) error {
	stmt, err := cpid.ReadStatement(query)
	if err != nil {
		return err
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var denied string
	authorize := func(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
		if ok, what := readingAction(action, arg1, arg2); !ok {
			if denied == "" {
				denied = what
			}
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	}
	if err := setAuthorizer(conn.Raw, authorize); err != nil {
		return err
	}
	// The connection goes back to the pool without the authorizer (other
	// reads of this store prepare statements on it), or not at all.
	defer setAuthorizer(conn.Raw, nil)
	rows, err := conn.QueryContext(ctx, stmt)
	if err != nil {
		if denied != "" {
			return fmt.Errorf("%w: %s is not allowed here (%v)", cpid.ErrStatement, denied, err)
		}
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for rows.Next() {
		for i := range vals {
			vals[i] = nil
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// setAuthorizer installs fn (nil: removes it) on the connection raw gives;
// a connection it cannot be set on is dropped from the pool.
func setAuthorizer(raw func(func(any) error) error, fn sqlite.AuthorizerFn) error {
	return raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("the SQLite driver has no authorizer: %T", dc)
		}
		if err := r.RegisterAuthorizer(fn); err != nil {
			return fmt.Errorf("%w: %v", driver.ErrBadConn, err)
		}
		return nil
	})
}

// namePragmas are the pragmas that only report, with or without an
// argument (which names a table, an index or a count, never a value to
// set); valuePragmas report only when given no value. Pragmas that act
// (optimize, wal_checkpoint, incremental_vacuum, shrink_memory...) are in
// neither.
var (
	namePragmas = map[string]bool{
		"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true,
		"index_xinfo": true, "foreign_key_list": true, "foreign_key_check": true, "database_list": true,
		"collation_list": true, "function_list": true, "module_list": true, "pragma_list": true,
		"compile_options": true, "integrity_check": true, "quick_check": true,
	}
	valuePragmas = map[string]bool{
		"page_count": true, "page_size": true, "freelist_count": true, "user_version": true,
		"schema_version": true, "application_id": true, "encoding": true, "journal_mode": true,
		"data_version": true, "max_page_count": true, "auto_vacuum": true, "query_only": true,
		"foreign_keys": true,
	}
)

// readingAction reports whether SQLite may compile action (arguments as
// its authorizer gives them) in a statement of cpid-tui sql, and names it
// when not.
func readingAction(action sqlite.AuthorizerActionCode, arg1, arg2 string) (bool, string) {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthFunction, sqlite.AuthRecursive:
		return true, ""
	case sqlite.AuthPragma:
		name := strings.ToLower(arg1)
		if namePragmas[name] || arg2 == "" && valuePragmas[name] {
			return true, ""
		}
		if arg2 != "" {
			return false, fmt.Sprintf("PRAGMA %s = %s", arg1, arg2)
		}
		return false, "PRAGMA " + arg1
	case sqlite.AuthAttach:
		return false, "ATTACH"
	case sqlite.AuthDetach:
		return false, "DETACH"
	case sqlite.AuthTransaction, sqlite.AuthSavepoint:
		return false, "transaction control"
	}
	return false, "a statement that writes"
}
