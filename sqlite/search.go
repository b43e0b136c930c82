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
// What the writes hold is read from change_terms (migration 0019), the
// postings of the values of search_terms (a name or writer, a verb, a
// code) that the writes of each change hold, which the runs of
// reconstruct keep (storeSearch). The values that hold the filter are
// found among search_terms' (a few thousand where the changes are tens of
// thousands), and then, whichever costs less (readByChange):
//   - their postings, one range of change_terms each, into a list of
//     integers (changes' rowids) that SQLite builds once and tests each
//     change against: its cost follows the postings;
//   - for each change read whose own row does not hold it, its postings
//     by change_terms_change, one range of a few rows tested against the
//     values (the unary + keeps SQLite from a seek per value and change:
//     11 values hold "web", 36 against 18 ms): its cost follows the
//     changes read that their own rows leave, all of them for a count,
//     those before the last of a page.
//
// The own row is read from the index changes_search. docs/SCALE.md has
// the figures on ten million synthetic events.
func filterCond(filter string, page bool) (string, []any) {
	raw := strings.ToLower(filter)
	verb, code := cpid.FilterWrites(filter)
	terms, targs := filterTerms(raw, verb, code)
	by, bargs := readByChange(raw, terms, targs, page)
	return filterCondBy(raw, terms, targs, by, bargs)
}

// filterCondBy is filterCond with the condition that chooses how the
// postings are read (readByChange's, or a constant in tests) and its
// arguments; raw is the filter in lower case, terms and targs what
// filterTerms gives for it.
func filterCondBy(raw, terms string, targs []any, by string, bargs []any) (string, []any) {
	values := `SELECT rowid FROM search_terms WHERE ` + terms
	return `(instr(` + searchText + `, ?) > 0
		OR CASE WHEN ` + by + `
			THEN EXISTS (SELECT 1 FROM change_terms p WHERE p.change = c.rowid AND +p.term IN (` + values + `))
			ELSE c.rowid IN (SELECT p.change FROM change_terms p WHERE p.term IN (` + values + `)) END)`,
		slices.Concat([]any{raw}, bargs, targs, targs)
}

// readByChange is the condition, the same for every change, under which
// the filter reads the postings of each change rather than a list of
// them: when the postings of the values that hold it are many, counted
// no further than that (at most 2.7 ms on the pure-Go SQLite among
// 56,818 changes), and so are likely the changes that hold it.
//   - A page stops at its last change: postings at least a quarter as
//     many as the changes.
//   - A count (page false) reads every change: postings at least as many
//     as the changes, and the changes' own rows may hold the filter, so
//     that few changes may be left to read: a value of their own rows
//     holds it ('o' or 'i'), or it is made of the characters of a UUID
//     (an id that is one is no value of search_terms) and short enough
//     that many ids hold it (one character nearly every id, three one in
//     a hundred).
//
// Among ten million events: "web" has 11 values with more postings than
// there are changes, and the changes' names hold it (by change); "409"
// the names of 122 changes, and 32,468 postings of its code (a list);
// "update" no own row, and 32,468 postings (a list for the count, by
// change for a page).
func readByChange(raw, terms string, targs []any, page bool) (string, []any) {
	changes := `(SELECT max(rowid) FROM changes)` // their number, about (NULL with none, when no change is read)
	if page {
		changes = `(SELECT max(rowid) / 4 FROM changes)`
	}
	many := `(SELECT count(*) FROM (SELECT 1 FROM change_terms WHERE term IN (SELECT rowid FROM search_terms WHERE ` + terms + `)
				LIMIT ` + changes + `)) >= ` + changes
	if page {
		return `(` + many + `)`, targs
	}
	shortID := len(raw) <= 2 && cpid.InAnyID(raw)
	return `((? OR EXISTS (SELECT 1 FROM search_terms WHERE kind IN ('o', 'i') AND instr(term, ?) > 0))
			AND ` + many + `)`, slices.Concat([]any{shortID, raw}, targs)
}

// filterTerms is, for a filter (lower case), the condition on
// search_terms of the values of writes that hold it, with its arguments.
func filterTerms(raw string, verb bool, code int) (terms string, args []any) {
	ts := []string{`kind = 'w' AND instr(term, ?) > 0`}
	args = []any{raw}
	if verb {
		ts, args = append(ts, `kind = 'v' AND instr(term, ?) > 0`), append(args, raw)
	}
	if code != 0 {
		// A code is a value of its own: the filter must be the code, not a
		// part of one.
		ts, args = append(ts, `kind = 'k' AND term = ?`), append(args, strconv.Itoa(code))
	}
	return strings.Join(ts, " OR "), args
}

// filterGate is what a query of the changes a filter keeps tests before
// it reads any change (the count in a CASE, the page in its LIMIT): that
// some value of search_terms holds the filter, the values that the
// changes' own rows and their writes ever held, a few thousand where the
// changes are tens of thousands. A filter that no value holds (typing on,
// past what any change has: "ns" on ten million events) reads no change,
// where a condition of the WHERE clause was tested at every change, each
// change's text read (12 ms for the count and as many for the page).
func filterGate(filter string) (string, []any) {
	raw := strings.ToLower(filter)
	if strings.Contains(raw, "\x1f") {
		// The separator of a change's own text (searchText): the filter
		// may hold two of its columns, which no value does.
		return `TRUE`, nil
	}
	verb, code := cpid.FilterWrites(filter)
	terms, targs := filterTerms(raw, verb, code)
	// An id that is not made of the characters of a UUID is a term of its
	// own ('i'): a filter of those characters alone may be part of any id.
	uuidLike := cpid.InAnyID(raw)
	return `(? OR EXISTS (SELECT 1 FROM search_terms WHERE kind IN ('o', 'i') AND instr(term, ?) > 0)
		OR EXISTS (SELECT 1 FROM search_terms WHERE ` + terms + `))`, slices.Concat([]any{uuidLike, raw}, targs)
}

// searchSQL stores the postings (change_terms) of the changes of the
// writes that its condition selects (%s: a condition on revisions r), and
// the values of their writes in search_terms: for each change, each
// distinct name (lower-cased), writer (lower-cased) and
// verb[/subresource] of its writes, and the codes that a filter finds
// (any code under 300, a failed write's otherwise). One read of the writes
// and their events for all of them, into a temporary table of distinct
// rows; a value that several rows of a change hold is one posting (the
// key of change_terms, OR IGNORE: no sort to make them distinct first,
// 0.16 against 0.17 s at a million events). Migration 0019 holds the
// same statements for the changes derived before it.
var searchSQL = []string{
	`CREATE TEMP TABLE IF NOT EXISTS search_w(id TEXT, n TEXT, wr TEXT, v TEXT, k INTEGER)`,
	`DELETE FROM temp.search_w`,
	`INSERT INTO temp.search_w SELECT DISTINCT r.change_id, lower(r.name), lower(r.writer), ` + cpid.FilterVerbSQL + `,
		` + cpid.FilterCodeSQL + `
		FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL AND %s`,
	`INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'w', n FROM temp.search_w UNION SELECT 'w', wr FROM temp.search_w
		UNION SELECT 'v', v FROM temp.search_w UNION SELECT 'k', CAST(k AS TEXT) FROM temp.search_w WHERE k IS NOT NULL`,
	`INSERT OR IGNORE INTO change_terms(term, change)
		SELECT t.rowid, c.rowid FROM (SELECT id, 'w' AS kind, n AS x FROM temp.search_w UNION ALL SELECT id, 'w', wr FROM temp.search_w
			UNION ALL SELECT id, 'v', v FROM temp.search_w UNION ALL SELECT id, 'k', CAST(k AS TEXT) FROM temp.search_w WHERE k IS NOT NULL) w
		JOIN changes c ON c.id = w.id JOIN search_terms t ON t.kind = w.kind AND t.term = w.x`,
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

// refreshSearch stores again the postings of the changes ids (a JSON
// array), from their writes: a change that lost its writes loses them.
func refreshSearch(ctx context.Context, tx *sql.Tx, ids string) error {
	if _, err := tx.ExecContext(ctx, deleteTermsSQL+`(SELECT rowid FROM changes WHERE id IN `+inJSON+`)`, ids); err != nil {
		return err
	}
	return storeSearch(ctx, tx, `r.change_id IN `+inJSON, ids)
}

// deleteTermsSQL deletes the postings of some changes, by their rowids
// (change_terms_change): a change deleted takes its postings with it,
// which would otherwise be those of the next change given its rowid.
const deleteTermsSQL = `DELETE FROM change_terms WHERE change IN `

// fillSearch stores the postings of every change of cluster,
// which has none ("" for every cluster): after a full rebuild.
func fillSearch(ctx context.Context, tx *sql.Tx, cluster string) error {
	return storeSearch(ctx, tx, `(?1 = '' OR r.cluster = ?1)`, cluster)
}
