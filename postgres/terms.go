package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
)

// termsSQL stores the postings (change_terms, migration 0019) of the
// changes of the writes that its condition selects (%s: a condition on
// revisions r), and the values of their writes in search_terms: for
// each change, each distinct name and writer (lower-cased, kind write),
// verb[/subresource] (verb) and code that a filter finds it by (code:
// any code under 300, a failed write's otherwise). One read of the
// writes and their events, made distinct by write first (a change's
// writes mostly repeat their object, writer and verb), into a temporary
// table of distinct rows. The values not there yet are added under the
// lock that search_terms' trigger takes (0018), in order. Migration 0019
// holds the same statements for the changes derived before it.
var termsSQL = [...]string{
	`CREATE TEMP TABLE IF NOT EXISTS change_terms_w (change_id TEXT, kind TEXT, term TEXT) ON COMMIT DELETE ROWS`,
	`TRUNCATE change_terms_w`,
	`INSERT INTO change_terms_w SELECT DISTINCT w.change_id, x.kind, x.term FROM (
		SELECT DISTINCT r.change_id, lower(r.name) AS n, lower(r.writer) AS wr, ` + cpid.FilterVerbSQL + ` AS v,
			(` + cpid.FilterCodeSQL + `)::text AS k
		FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL AND %s) w,
		LATERAL (VALUES ('write', w.n), ('write', w.wr), ('verb', w.v), ('code', w.k)) x(kind, term)
		WHERE x.term IS NOT NULL`,
}

// Statements of storeTerms after termsSQL: the values to add (none: no
// lock), and the postings, of the changes there.
const (
	missingTermsSQL = `SELECT array_agg(kind ORDER BY kind, term), array_agg(term ORDER BY kind, term)
		FROM (SELECT DISTINCT kind, term FROM change_terms_w) x
		WHERE NOT EXISTS (SELECT 1 FROM search_terms s WHERE s.kind = x.kind AND s.term = x.term)`
	addTermsSQL = `INSERT INTO search_terms(kind, term) SELECT k, t FROM unnest($1::text[], $2::text[]) u(k, t) ORDER BY k, t
		ON CONFLICT DO NOTHING`
	postingsSQL = `INSERT INTO change_terms(term, change)
		SELECT t.id, c.number FROM change_terms_w w JOIN search_terms t ON t.kind = w.kind AND t.term = w.term
		JOIN changes c ON c.id = w.change_id
		ON CONFLICT DO NOTHING`
)

// storeTerms runs termsSQL with the condition cond and its arguments,
// then adds the values and the postings.
func storeTerms(ctx context.Context, tx pgx.Tx, cond string, args ...any) error {
	for i, q := range termsSQL {
		var err error
		if i == len(termsSQL)-1 {
			_, err = tx.Exec(ctx, fmt.Sprintf(q, cond), args...)
		} else {
			_, err = tx.Exec(ctx, q)
		}
		if err != nil {
			return fmt.Errorf("store the postings of the changes: %w", err)
		}
	}
	var kinds, terms []string
	if err := tx.QueryRow(ctx, missingTermsSQL).Scan(&kinds, &terms); err != nil {
		return fmt.Errorf("store the postings of the changes: %w", err)
	}
	if len(kinds) > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1668311416, 0)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, addTermsSQL, kinds, terms); err != nil {
			return fmt.Errorf("store the values of the writes: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, postingsSQL); err != nil {
		return fmt.Errorf("store the postings of the changes: %w", err)
	}
	return nil
}

// deleteTermsSQL deletes the postings of the changes that its condition
// selects (%s, on changes): a change deleted takes its postings with it.
const deleteTermsSQL = `DELETE FROM change_terms WHERE change IN (SELECT number FROM changes WHERE %s)`

// refreshTerms stores again the postings of the changes ids from their
// writes: a change that lost its writes loses them.
func refreshTerms(ctx context.Context, tx pgx.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(deleteTermsSQL, `id = ANY($1)`), ids); err != nil {
		return fmt.Errorf("delete the postings of changes: %w", err)
	}
	return storeTerms(ctx, tx, `r.change_id = ANY($1)`, ids)
}

// fillTerms stores the postings of every change of cluster, which has
// none: after a full rebuild.
func fillTerms(ctx context.Context, tx pgx.Tx, cluster string) error {
	return storeTerms(ctx, tx, `r.cluster = $1`, cluster)
}
