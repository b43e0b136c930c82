package sqlite

import (
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

// distinctIn is the subquery of the changes with a write whose column col
// (name or writer) contains the filter (its argument): the column's distinct values
// first, read by a skip through the partial index revisions_<col>s (one
// seek per value, migration 0012), then the writes of the values that
// match, through the same index. A database has far fewer names and
// writers than writes, and every write was read for each key before.
func distinctIn(col string) string {
	return `c.id IN (WITH RECURSIVE v(x) AS (
			SELECT (SELECT min(` + col + `) FROM revisions WHERE change_id IS NOT NULL)
			UNION ALL SELECT (SELECT min(` + col + `) FROM revisions WHERE change_id IS NOT NULL AND ` + col + ` > x) FROM v WHERE x IS NOT NULL)
		SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND ` + col + ` IN (SELECT x FROM v WHERE instr(lower(x), ?) > 0))`
}

// filterCond is the condition of a filter: a change whose row contains
// it, or that has a write whose object name or writer does, or (when the
// filter may name one) whose verb[/subresource] does or whose code it is.
// The conditions are tried in this order for each change and the first
// that holds ends the test: the writes are read only for the changes whose
// row does not match. Matched as text, not as a LIKE pattern: a filter
// with % or _ finds those characters.
func filterCond(filter string) (string, []any) {
	raw := strings.ToLower(filter)
	cond := `(instr(` + searchText + `, ?) > 0
		OR ` + distinctIn("name") + `
		OR ` + distinctIn("writer")
	args := []any{raw, raw, raw}
	// The writes' verbs and codes are in audit_events: read only when
	// the filter may name one, and for each change until one matches.
	verb, code := cpid.FilterWrites(filter)
	if verb {
		cond += `
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id
			AND instr(e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END, ?) > 0)`
		args = append(args, raw)
	}
	if code != 0 {
		// A failing code is a failed write's: only those are read.
		failed := ""
		if cpid.IsFailedCode(code) {
			failed = " AND r.attempt <> 0"
		}
		cond += `
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id` + failed + ` AND e.code = ?)`
		args = append(args, code)
	}
	return cond + `)`, args
}
