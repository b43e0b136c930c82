package cpid

import (
	"errors"
	"fmt"
	"strings"
)

// ErrStatement is what ReadStatement's refusals wrap: the text given to
// cpid-tui sql is not one statement that only reads (a usage error).
var ErrStatement = errors.New("not a reading statement")

// readingStarts are the first words a statement that only reads may have,
// in either engine. EXPLAIN is there for query plans: in PostgreSQL
// EXPLAIN ANALYZE runs its statement, which the read-only transaction
// refuses if it writes. PRAGMA is SQLite's; the engine's authorizer lets
// only the pragmas that read through.
var readingStarts = map[string]bool{
	"select": true, "with": true, "values": true, "table": true,
	"explain": true, "show": true, "pragma": true,
}

// serverFunctions are PostgreSQL functions that act outside the
// transaction (server files, large objects, other sessions, settings,
// connections to other databases). A read-only transaction does not stop
// all of them for a superuser, so cpid-tui sql refuses a statement that
// calls one, whoever runs it. Names are lower case.
var serverFunctions = map[string]bool{
	"set_config": true, "pg_read_file": true, "pg_read_binary_file": true, "pg_stat_file": true,
	"pg_ls_dir": true, "pg_ls_logdir": true, "pg_ls_waldir": true, "pg_ls_tmpdir": true,
	"pg_ls_archive_statusdir": true, "pg_ls_logicalsnapdir": true, "pg_ls_logicalmapdir": true,
	"pg_ls_replslotdir": true, "pg_file_write": true, "pg_file_rename": true, "pg_file_unlink": true,
	"pg_file_sync": true, "pg_logdir_ls": true, "lo_import": true, "lo_export": true, "lo_create": true,
	"lo_creat": true, "lo_unlink": true, "lo_from_bytea": true, "lo_put": true, "lo_open": true,
	"lowrite": true, "lo_truncate": true, "lo_truncate64": true, "dblink": true, "dblink_exec": true,
	"dblink_connect": true, "dblink_connect_u": true, "dblink_send_query": true,
	"pg_terminate_backend": true, "pg_cancel_backend": true, "pg_reload_conf": true,
	"pg_rotate_logfile": true, "pg_promote": true, "pg_switch_wal": true, "pg_create_restore_point": true,
	"pg_backup_start": true, "pg_backup_stop": true, "pg_start_backup": true, "pg_stop_backup": true,
	"pg_logical_emit_message": true, "pg_create_logical_replication_slot": true,
	"pg_create_physical_replication_slot": true, "pg_drop_replication_slot": true,
	"pg_replication_origin_create": true, "pg_replication_origin_drop": true,
	"pg_log_backend_memory_contexts": true,
}

// ReadStatement checks the text a person gave cpid-tui sql and returns the
// one statement it holds, without a trailing semicolon. It refuses, with
// an error wrapping ErrStatement that says where: more than one statement
// (the engines would run them all, or only the last), a statement that
// does not start as a read (BEGIN, COMMIT, SET, COPY, ATTACH, VACUUM,
// INSERT...), and a call of a PostgreSQL function that acts on the server
// (serverFunctions). The engines still run the statement on a connection
// that cannot write: this check is the first of two fences, and the one
// that gives a clear message.
//
// The scan knows both dialects' quoting: '...' strings (with E'..\'..'),
// "..." and `...` and [...] identifiers, $tag$...$tag$ bodies, -- and
// /* */ comments (nested in PostgreSQL).
func ReadStatement(text string) (string, error) {
	toks, err := sqlTokens(text)
	if err != nil {
		return "", err
	}
	var stmt []sqlToken
	end := -1
	for _, t := range toks {
		if t.kind == tokSemicolon {
			if end < 0 {
				end = t.pos
			}
			continue
		}
		if end >= 0 {
			line, col := lineCol(text, t.pos)
			return "", fmt.Errorf("%w: give one statement at a time: a second one starts at line %d, column %d (%q)",
				ErrStatement, line, col, t.text)
		}
		stmt = append(stmt, t)
	}
	if len(stmt) == 0 {
		return "", fmt.Errorf("%w: the text holds no statement", ErrStatement)
	}
	if end < 0 {
		end = len(text)
	}
	first := stmt[0]
	if first.kind == tokParen { // (SELECT ...) UNION ...
		for _, t := range stmt {
			if t.kind == tokWord {
				first = t
				break
			}
		}
	}
	if first.kind != tokWord || !readingStarts[first.lower()] {
		return "", fmt.Errorf("%w: only a statement that reads runs here (SELECT, WITH, VALUES, TABLE, EXPLAIN, SHOW, PRAGMA), not %q",
			ErrStatement, first.text)
	}
	for i, t := range stmt {
		if t.kind != tokWord && t.kind != tokQuotedIdent {
			continue
		}
		name := t.text
		if t.kind == tokWord {
			name = t.lower()
		}
		if !serverFunctions[name] {
			continue
		}
		// A call: the name, then "(" (a schema prefix is a word before).
		if i+1 < len(stmt) && stmt[i+1].kind == tokParen && stmt[i+1].text == "(" {
			line, col := lineCol(text, t.pos)
			return "", fmt.Errorf("%w: %s acts on the server, outside the database (line %d, column %d)",
				ErrStatement, name, line, col)
		}
	}
	return strings.TrimSpace(text[:end]), nil
}

type tokKind int

const (
	tokWord tokKind = iota
	tokQuotedIdent
	tokString
	tokNumber
	tokParen
	tokSemicolon
	tokOther
)

type sqlToken struct {
	kind tokKind
	text string // a quoted identifier without its quotes
	pos  int    // byte offset in the text
}

func (t sqlToken) lower() string { return strings.ToLower(t.text) }

// sqlTokens splits text into the tokens ReadStatement needs; comments and
// white space are dropped. An unterminated string, identifier or comment
// is an error: a scan that guessed could hide a second statement.
func sqlTokens(text string) ([]sqlToken, error) {
	var toks []sqlToken
	unterminated := func(what string, at int) error {
		line, col := lineCol(text, at)
		return fmt.Errorf("%w: %s that starts at line %d, column %d never ends", ErrStatement, what, line, col)
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				i = len(text)
			} else {
				i += j + 1
			}
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			// PostgreSQL nests block comments; SQLite does not, but a
			// nested opener in SQLite is only text inside the comment,
			// so counting depth can only make the scan stricter.
			depth, j := 1, i+2
			for j < len(text) && depth > 0 {
				switch {
				case strings.HasPrefix(text[j:], "/*"):
					depth++
					j += 2
				case strings.HasPrefix(text[j:], "*/"):
					depth--
					j += 2
				default:
					j++
				}
			}
			if depth > 0 {
				return nil, unterminated("a /* comment", i)
			}
			i = j
		case c == '\'' || (c == 'e' || c == 'E') && i+1 < len(text) && text[i+1] == '\'':
			start := i
			backslash := c != '\''
			if backslash {
				i++
			}
			j := i + 1
			for {
				if j >= len(text) {
					return nil, unterminated("a string", start)
				}
				if backslash && text[j] == '\\' {
					j += 2
					continue
				}
				if text[j] == '\'' {
					if j+1 < len(text) && text[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			toks = append(toks, sqlToken{kind: tokString, text: text[start : j+1], pos: start})
			i = j + 1
		case c == '"' || c == '`':
			j := i + 1
			var b strings.Builder
			for {
				if j >= len(text) {
					return nil, unterminated("a quoted name", i)
				}
				if text[j] == c {
					if j+1 < len(text) && text[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(text[j])
				j++
			}
			toks = append(toks, sqlToken{kind: tokQuotedIdent, text: b.String(), pos: i})
			i = j + 1
		case c == '[' && sqliteBracket(toks):
			j := strings.IndexByte(text[i:], ']')
			if j < 0 {
				return nil, unterminated("a [name]", i)
			}
			toks = append(toks, sqlToken{kind: tokQuotedIdent, text: text[i+1 : i+j], pos: i})
			i += j + 1
		case c == '$' && dollarTag(text[i:]) != "":
			tag := dollarTag(text[i:])
			j := strings.Index(text[i+len(tag):], tag)
			if j < 0 {
				return nil, unterminated("a "+tag+" body", i)
			}
			end := i + len(tag) + j + len(tag)
			toks = append(toks, sqlToken{kind: tokString, text: text[i:end], pos: i})
			i = end
		case c == '(' || c == ')':
			toks = append(toks, sqlToken{kind: tokParen, text: text[i : i+1], pos: i})
			i++
		case c == ';':
			toks = append(toks, sqlToken{kind: tokSemicolon, text: ";", pos: i})
			i++
		case isWordByte(c) && !(c >= '0' && c <= '9'):
			j := i + 1
			for j < len(text) && (isWordByte(text[j]) || text[j] == '$') {
				j++
			}
			toks = append(toks, sqlToken{kind: tokWord, text: text[i:j], pos: i})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(text) && (isWordByte(text[j]) || text[j] == '.') {
				j++
			}
			toks = append(toks, sqlToken{kind: tokNumber, text: text[i:j], pos: i})
			i = j
		default:
			toks = append(toks, sqlToken{kind: tokOther, text: text[i : i+1], pos: i})
			i++
		}
	}
	return toks, nil
}

// sqliteBracket reports whether a '[' here quotes a name (SQLite) rather
// than subscripting an array (PostgreSQL's a[1], after a name or ")").
func sqliteBracket(toks []sqlToken) bool {
	if len(toks) == 0 {
		return true
	}
	switch last := toks[len(toks)-1]; last.kind {
	case tokWord:
		// After a keyword such as FROM or SELECT it quotes a name; after
		// a column name it subscripts. Keywords that may precede a name:
		switch last.lower() {
		case "select", "from", "join", "on", "where", "and", "or", "by", "as", "distinct", "set", "into", "table":
			return true
		}
		return false
	case tokQuotedIdent, tokNumber, tokString:
		return false
	case tokParen:
		return last.text == "("
	}
	return true
}

// dollarTag is the $tag$ that starts s (PostgreSQL's dollar quoting), or "".
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1]
		case isWordByte(c) && !(j == 1 && c >= '0' && c <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// lineCol is the 1-based line and column (in bytes) of offset at in text.
func lineCol(text string, at int) (line, col int) {
	line = 1 + strings.Count(text[:at], "\n")
	return line, at - strings.LastIndexByte(text[:at], '\n')
}
