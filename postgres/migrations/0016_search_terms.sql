-- search_terms: every value a change's own row held since the table was
-- made, by column (kind: namespace, name, resource, user, cluster,
-- lower-cased; id, lower-cased, when it holds other characters than those
-- of a UUID), as SQLite's (its 0016, whose 'o' kind holds the first five
-- together and which also holds the writes' values). The
-- terminal UI's filter reads the changes' texts only when one of these, or
-- a name or a writer of the writes (revisions_names, revisions_writers),
-- holds it (postgres/read.go, filterGate): typing on past what any change
-- has ("ns" on ten million synthetic events) read the text of every
-- change at each key, twice (the count, and the page looking for 200 that
-- match). And a filter that every value of one column holds (every
-- change's user, say) is held by every change's own row: its count is the
-- count of the changes, read from the smallest index, not a test of each
-- change's text (postgres/read.go, ChangeCount). Values are never removed:
-- one that no change holds any more only makes the filter read the texts.
CREATE TABLE search_terms (
  kind TEXT NOT NULL,
  term TEXT NOT NULL,
  PRIMARY KEY (kind, term)
);

-- Kept by statement triggers (a reconstruct run inserts and updates a
-- batch's changes in one statement each): the distinct values of the rows
-- a statement wrote, each looked up once.
CREATE FUNCTION changes_search_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_terms(kind, term)
    SELECT kind, term FROM (
      SELECT v.k AS kind, v.t AS term FROM new_changes n,
        LATERAL (VALUES ('namespace', lower(n.namespace)), ('name', lower(n.name)), ('resource', lower(n.resource)),
          ('user', lower(n."user")), ('cluster', lower(n.cluster))) v(k, t)
      UNION SELECT 'id', lower(n.id) FROM new_changes n WHERE lower(n.id) ~ '[^0-9a-f-]') x
    ORDER BY kind, term -- runs of two clusters at once take the keys in the same order
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER changes_search_terms AFTER INSERT ON changes
  REFERENCING NEW TABLE AS new_changes FOR EACH STATEMENT EXECUTE FUNCTION changes_search_terms();
CREATE TRIGGER changes_search_terms_update AFTER UPDATE ON changes
  REFERENCING NEW TABLE AS new_changes FOR EACH STATEMENT EXECUTE FUNCTION changes_search_terms();

INSERT INTO search_terms(kind, term)
  SELECT v.k, v.t FROM changes n,
    LATERAL (VALUES ('namespace', lower(n.namespace)), ('name', lower(n.name)), ('resource', lower(n.resource)),
      ('user', lower(n."user")), ('cluster', lower(n.cluster))) v(k, t)
  UNION SELECT 'id', lower(n.id) FROM changes n WHERE lower(n.id) ~ '[^0-9a-f-]'
  ON CONFLICT DO NOTHING;
