-- search_terms (0016) is one table for every cluster, as cpid_ids (0007)
-- is: a reconstruct run that inserts a term another cluster's run has
-- inserted and not committed waits for that run, and a run writes its
-- changes in many statements, each adding its terms (in order within the
-- statement, not across them). Two runs that each added a term the other
-- adds later waited for each other: a deadlock, one of them aborted. The
-- trigger now takes cpid_ids' transaction advisory lock (0012, class
-- "cpix") before it adds a term, so that a run holds no uncommitted term
-- while it waits for another: runs that add terms queue, as those that
-- write the merge graph already do. The values a statement's changes
-- hold are listed once, those not there (committed) kept: a statement
-- whose values are all there adds none and takes no lock, so that once a
-- cluster's values are known its runs do not wait for each other here.
CREATE OR REPLACE FUNCTION changes_search_terms() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kinds TEXT[];
  terms TEXT[];
BEGIN
  SELECT array_agg(kind ORDER BY kind, term), array_agg(term ORDER BY kind, term) INTO kinds, terms FROM (
      SELECT v.k AS kind, v.t AS term FROM new_changes n,
        LATERAL (VALUES ('namespace', lower(n.namespace)), ('name', lower(n.name)), ('resource', lower(n.resource)),
          ('user', lower(n."user")), ('cluster', lower(n.cluster))) v(k, t)
      UNION SELECT 'id', lower(n.id) FROM new_changes n WHERE lower(n.id) ~ '[^0-9a-f-]') x
    WHERE NOT EXISTS (SELECT 1 FROM search_terms s WHERE s.kind = x.kind AND s.term = x.term);
  IF kinds IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock(1668311416, 0);
  INSERT INTO search_terms(kind, term)
    SELECT k, t FROM unnest(kinds, terms) u(k, t) ORDER BY k, t
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
