-- Schema v19: change_terms, the filter's postings (issue 31). A filter
-- that a change's own row does not hold read that change's change_search
-- row (0016), by its key: among ten million synthetic events, typing
-- "update", "409" or "sched" read 24,000-56,000 rows a key, 40-105 ms
-- for the count alone. change_terms holds, for each value of
-- search_terms that the writes of a change hold (a name or writer, a
-- verb, a code: what change_search's texts held), the pair (value,
-- change) by their rowids; the filter finds the values that hold it in
-- search_terms and reads their changes in one range each, a list of
-- integers the changes are tested against (sqlite/search.go). It
-- replaces change_search. search_terms gets a rowid (a value's number);
-- its values and their triggers are the same. A change keeps its rowid
-- when reconstruct stores it again (an upsert, no longer a replace), and
-- its postings go with it when it is deleted.
DROP TRIGGER changes_search_terms;
DROP TRIGGER changes_search_terms_update;
ALTER TABLE search_terms RENAME TO search_terms_0016;
CREATE TABLE search_terms (
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  UNIQUE (kind, term)
);
INSERT INTO search_terms(kind, term) SELECT kind, term FROM search_terms_0016 ORDER BY kind, term;
DROP TABLE search_terms_0016;
-- The triggers add a value with an upsert's DO NOTHING, no longer OR
-- IGNORE: the upsert that stores a change again would impose its own
-- conflict policy on an OR IGNORE (a value there already failed it), and
-- a replace on the change would replace the value, under a new rowid.
CREATE TRIGGER changes_search_terms AFTER INSERT ON changes BEGIN
  INSERT INTO search_terms(kind, term) VALUES ('o', lower(new.namespace)), ('o', lower(new.name)),
    ('o', lower(new.resource)), ('o', lower(new.user)), ('o', lower(new.cluster)) ON CONFLICT DO NOTHING;
  INSERT INTO search_terms(kind, term) SELECT 'i', lower(new.id) WHERE lower(new.id) GLOB '*[^0-9a-f-]*' ON CONFLICT DO NOTHING;
END;
CREATE TRIGGER changes_search_terms_update AFTER UPDATE OF id, namespace, name, resource, user, cluster ON changes BEGIN
  INSERT INTO search_terms(kind, term) VALUES ('o', lower(new.namespace)), ('o', lower(new.name)),
    ('o', lower(new.resource)), ('o', lower(new.user)), ('o', lower(new.cluster)) ON CONFLICT DO NOTHING;
  INSERT INTO search_terms(kind, term) SELECT 'i', lower(new.id) WHERE lower(new.id) GLOB '*[^0-9a-f-]*' ON CONFLICT DO NOTHING;
END;
CREATE TABLE change_terms (
  term   INTEGER NOT NULL, -- search_terms.rowid: a value of kind 'w', 'v' or 'k'
  change INTEGER NOT NULL, -- changes.rowid: a change with a write that holds it
  PRIMARY KEY (term, change)
) WITHOUT ROWID;
CREATE INDEX change_terms_change ON change_terms(change);

-- The postings of the changes derived before it: the statements of
-- searchSQL (sqlite/search.go) for every write, as they stand now
-- (TestSearchRows checks that both store the same rows).
CREATE TEMP TABLE IF NOT EXISTS search_w(id TEXT, n TEXT, wr TEXT, v TEXT, k INTEGER);
DELETE FROM temp.search_w;
INSERT INTO temp.search_w SELECT DISTINCT r.change_id, lower(r.name), lower(r.writer),
    e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END,
    CASE WHEN e.code < 300 OR r.attempt <> 0 THEN e.code END
  FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL;
INSERT OR IGNORE INTO search_terms(kind, term) SELECT 'w', n FROM temp.search_w UNION SELECT 'w', wr FROM temp.search_w
  UNION SELECT 'v', v FROM temp.search_w UNION SELECT 'k', CAST(k AS TEXT) FROM temp.search_w WHERE k IS NOT NULL;
INSERT OR IGNORE INTO change_terms(term, change)
  SELECT t.rowid, c.rowid FROM (SELECT id, 'w' AS kind, n AS x FROM temp.search_w UNION ALL SELECT id, 'w', wr FROM temp.search_w
    UNION ALL SELECT id, 'v', v FROM temp.search_w UNION ALL SELECT id, 'k', CAST(k AS TEXT) FROM temp.search_w WHERE k IS NOT NULL) w
  JOIN changes c ON c.id = w.id JOIN search_terms t ON t.kind = w.kind AND t.term = w.x;
DROP TABLE temp.search_w;
DROP TABLE change_search;
