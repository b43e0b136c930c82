package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cpid-dev/cpid"
)

// searchText is what the filter reads of a change's own row: its
// columns, lowercase, apart by a control character that no filter holds
// (so that a filter cannot match across two of them). The index
// changes_search (migration 0012) holds it word for word, with the
// columns the queries read, in time order: the filter reads that narrow
// index, not the table's rows (TestFilterIndexUsed).
const searchText = `lower(c.namespace || char(31) || c.name || char(31) || c.resource || char(31) || c.user || char(31) || c.id || char(31) || c.cluster)`

// filterCond is the condition of a filter: a change whose row contains
// it, or that has a write whose object name or writer does, or (when the
// filter may name one) whose verb[/subresource] does or whose code it is
// (a failing code a failed write's). Matched as text, not as a LIKE
// pattern: a filter with % or _ finds those characters.
//
// What the writes hold is read from change_search (migration 0016), one
// row of texts per change, which the runs of reconstruct keep
// (storeSearch): the filter reads at most one row per change, however
// many writes the changes have and however many of their names and
// writers hold the filter. The own row is tried first, from
// changes_search, and a change's change_search row (by its key) only when
// its own row does not hold the filter: a list of the matching rows built
// first read them all, for filters that most own rows hold too (56,818
// changes: 72 against 46 ms for "web", 18 against 13 ms for "n"). A
// change's change_search row is read only when a value of search_terms
// that its writes may hold holds the filter (an EXISTS that reads no
// change: SQLite runs it once).
func filterCond(filter string) (string, []any) {
	raw := strings.ToLower(filter)
	verb, code := cpid.FilterWrites(filter)
	if strings.ContainsRune(raw, searchSep) {
		return writesCond(raw, verb)
	}
	terms, targs, texts, args := filterTerms(raw, verb, code)
	return `(instr(` + searchText + `, ?) > 0
		OR EXISTS (SELECT 1 FROM search_terms WHERE ` + terms + `) AND EXISTS (SELECT 1 FROM change_search s WHERE s.change_id = c.id AND (` + texts + `)))`,
		slices.Concat([]any{raw}, targs, args)
}

// filterTerms are, for a filter (lower case), the condition on
// search_terms of the values of writes that may hold it, and the
// condition on a change_search row (s) that holds it, with their
// arguments.
func filterTerms(raw string, verb bool, code int) (terms string, targs []any, texts string, args []any) {
	ts, xs := []string{`kind = 'w' AND instr(term, ?) > 0`}, []string{`instr(names, ?) > 0`, `instr(writers, ?) > 0`}
	targs, args = []any{raw}, []any{raw, raw}
	if verb {
		ts, xs = append(ts, `kind = 'v' AND instr(term, ?) > 0`), append(xs, `instr(verbs, ?) > 0`)
		targs, args = append(targs, raw), append(args, raw)
	}
	if code != 0 {
		// codes holds each code once between separators: the code must
		// be one of them, not a part of one.
		c := strconv.Itoa(code)
		ts, xs = append(ts, `kind = 'k' AND term = ?`), append(xs, `instr(codes, ?) > 0`)
		targs, args = append(targs, c), append(args, string(searchSep)+c+string(searchSep))
	}
	return strings.Join(ts, " OR "), targs, strings.Join(xs, " OR "), args
}

// filterGate is what a query of the changes a filter keeps tests before
// it reads any change (the count in a CASE, the page in its LIMIT): that
// some value of search_terms holds the filter, the values that the
// changes' own rows and their writes ever held, a few thousand where the
// changes are tens of thousands. A filter that no value holds (typing on,
// past what any change has: "ns" on ten million events) reads no change,
// where a condition of the WHERE clause was tested at every change, each
// change's text read (12 ms for the count and as many for the page).
// "TRUE" for a filter that reads the writes (writesCond).
func filterGate(filter string) (string, []any) {
	raw := strings.ToLower(filter)
	verb, code := cpid.FilterWrites(filter)
	if strings.ContainsRune(raw, searchSep) {
		return `TRUE`, nil
	}
	terms, targs, _, _ := filterTerms(raw, verb, code)
	// An id that is not made of the characters of a UUID is a term of its
	// own ('i'): a filter of those characters alone may be part of any id.
	uuidLike := strings.Trim(raw, "0123456789abcdef-") == ""
	return `(? OR EXISTS (SELECT 1 FROM search_terms WHERE kind IN ('o', 'i') AND instr(term, ?) > 0)
		OR EXISTS (SELECT 1 FROM search_terms WHERE ` + terms + `))`, slices.Concat([]any{uuidLike, raw}, targs)
}

// searchSep is what apart the values in change_search's texts: char(31),
// as in searchText.
const searchSep = '\x1f'

// writesCond is filterCond for a filter that holds the separator of
// change_search's texts, which could match across two of its values
// there: the writes of each change are read instead (revisions_change).
// No name, writer or verb has one in practice, and a code (three digits)
// never: the answer is the same.
func writesCond(raw string, verb bool) (string, []any) {
	cond := `(instr(` + searchText + `, ?) > 0
		OR EXISTS (SELECT 1 FROM revisions r WHERE r.change_id = c.id AND (instr(lower(r.name), ?) > 0 OR instr(lower(r.writer), ?) > 0))`
	args := []any{raw, raw, raw}
	if verb {
		cond += `
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id
			AND instr(` + verbText + `, ?) > 0)`
		args = append(args, raw)
	}
	return cond + `)`, args
}

// verbText is a write's verb as the filter reads it: verb[/subresource].
const verbText = `e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END`

// searchSQL stores the change_search rows of the changes of the writes
// that its condition selects (%s: a condition on revisions r), and the
// values of their writes in search_terms. For each change, each distinct
// name (lower-cased), writer (lower-cased) and verb[/subresource] of its
// writes, apart by char(31), and the codes that a filter finds (any code
// under 300, a failed write's otherwise), each between two char(31). One
// read of the writes and their events for all of them, into a temporary
// table, where the values are made distinct per change before they are
// joined. Migration 0016 holds the same statements for the changes
// derived before it.
var searchSQL = []string{
	`CREATE TEMP TABLE IF NOT EXISTS search_w(id TEXT, n TEXT, wr TEXT, v TEXT, k INTEGER)`,
	`DELETE FROM temp.search_w`,
	`INSERT INTO temp.search_w SELECT DISTINCT r.change_id, lower(r.name), lower(r.writer), ` + verbText + `,
		CASE WHEN e.code < 300 OR r.attempt <> 0 THEN e.code END
		FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL AND %s`,
	`INSERT INTO change_search(change_id, cluster, names, writers, verbs, codes)
		WITH t AS (SELECT DISTINCT id, 0 AS f, n AS x FROM temp.search_w UNION ALL SELECT DISTINCT id, 1, wr FROM temp.search_w
			UNION ALL SELECT DISTINCT id, 2, v FROM temp.search_w UNION ALL SELECT DISTINCT id, 3, k FROM temp.search_w WHERE k IS NOT NULL)
		SELECT c.id, c.cluster, COALESCE(group_concat(CASE WHEN t.f = 0 THEN t.x END, char(31)), ''),
			COALESCE(group_concat(CASE WHEN t.f = 1 THEN t.x END, char(31)), ''),
			COALESCE(group_concat(CASE WHEN t.f = 2 THEN t.x END, char(31)), ''),
			COALESCE(char(31) || group_concat(CASE WHEN t.f = 3 THEN t.x END, char(31)) || char(31), '')
		FROM t JOIN changes c ON c.id = t.id GROUP BY c.id`,
	`INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'w', n FROM temp.search_w UNION SELECT 'w', wr FROM temp.search_w
		UNION SELECT 'v', v FROM temp.search_w UNION SELECT 'k', k FROM temp.search_w WHERE k IS NOT NULL`,
	`DELETE FROM temp.search_w`,
}

// storeSearch runs searchSQL with the condition cond and its argument.
func storeSearch(ctx context.Context, tx *sql.Tx, cond string, arg any) error {
	for _, q := range searchSQL {
		var args []any
		if strings.Contains(q, "%s") {
			q, args = fmt.Sprintf(q, cond), []any{arg}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// refreshSearch stores again the change_search rows of the changes ids
// (a JSON array), from their writes: a change that lost its writes loses
// its row.
func refreshSearch(ctx context.Context, tx *sql.Tx, ids string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM change_search WHERE change_id IN `+inJSON, ids); err != nil {
		return err
	}
	return storeSearch(ctx, tx, `r.change_id IN `+inJSON, ids)
}

// fillSearch stores the change_search rows of every change of cluster,
// which has none ("" for every cluster): after a full rebuild.
func fillSearch(ctx context.Context, tx *sql.Tx, cluster string) error {
	return storeSearch(ctx, tx, `(?1 = '' OR r.cluster = ?1)`, cluster)
}
