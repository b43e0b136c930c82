-- cpid_ids (0007, 0012) is kept by statement triggers instead of row
-- triggers. A reconstruct run inserts a batch's mergelogs and their
-- sources in one statement each (and a full rebuild or an expiry deletes a
-- cluster's in one); each row's trigger ran a function of three statements
-- (an upsert, and the probes and update of its neighbours) and wrote a new
-- version of its CPID's row, one for each merge that names it. On 1M
-- synthetic events the two INSERTs with their triggers were half of what
-- the server did to save a full rebuild (its active statements sampled),
-- and the server's CPU for the whole rebuild went from 48.5 to 32.5 s
-- with this. Now each statement counts its CPIDs once (the transition
-- table of its rows), updates each CPID's row once, and sets what the
-- CPIDs it added or removed and their neighbours share, in a handful of
-- set-based statements. The rows of cpid_ids are the same.

-- cpid_shared (0007) as a loop that stops at the first character that
-- differs (CPIDs next to each other share a few), where the SQL function
-- compared all 40 and sorted them: 85 us a call against 5 on 1M
-- synthetic events' CPIDs. The same results, NULL included.
CREATE OR REPLACE FUNCTION cpid_shared(a TEXT, b TEXT) RETURNS INTEGER LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  FOR i IN 1..40 LOOP
    IF substr(a, i, 1) COLLATE "C" IS DISTINCT FROM substr(b, i, 1) COLLATE "C" THEN
      RETURN i - 1;
    END IF;
  END LOOP;
  RETURN 40;
END $$;

-- cpid_ids_add_all adds one reference to cpid_ids for each element of xs
-- (a CPID may come several times).
CREATE FUNCTION cpid_ids_add_all(xs TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  added TEXT[];
  cs TEXT[];
  ss INTEGER[];
BEGIN
  IF cardinality(xs) = 0 THEN
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(1668311416, 0);
  WITH c AS (SELECT x COLLATE "C" AS cpid, count(*) AS n FROM unnest(xs) x GROUP BY 1),
  up AS (INSERT INTO cpid_ids AS t (cpid, refs, shared) SELECT cpid, n, 0 FROM c
    ON CONFLICT (cpid) DO UPDATE SET refs = t.refs + excluded.refs
    RETURNING t.cpid, (t.xmax = 0) AS fresh)
  SELECT array_agg(up.cpid) INTO added FROM up WHERE fresh;
  IF added IS NULL THEN
    RETURN;
  END IF;
  -- The new CPIDs, and the one before each: their next CPID is another.
  -- What they share is computed first, then set through the primary key
  -- (a join would read the whole table).
  SELECT array_agg(a.c), array_agg(cpid_shared(a.c, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > a.c)))
    INTO cs, ss
    FROM (SELECT x COLLATE "C" AS c FROM unnest(added) x
      UNION SELECT (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C") FROM unnest(added) x) a
    WHERE a.c IS NOT NULL;
  UPDATE cpid_ids t SET shared = v.s FROM unnest(cs, ss) AS v(c, s) WHERE t.cpid = v.c COLLATE "C" AND t.shared <> v.s;
END $$;

-- cpid_ids_remove_all removes one reference for each element of xs; a
-- CPID left with none goes.
CREATE FUNCTION cpid_ids_remove_all(xs TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  removed TEXT[];
  cs TEXT[];
  ss INTEGER[];
BEGIN
  IF cardinality(xs) = 0 THEN
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(1668311416, 0);
  WITH c AS (SELECT x COLLATE "C" AS cpid, count(*) AS n FROM unnest(xs) x GROUP BY 1),
  down AS (UPDATE cpid_ids t SET refs = t.refs - c.n FROM c WHERE t.cpid = c.cpid RETURNING t.cpid, t.refs)
  SELECT array_agg(down.cpid) INTO removed FROM down WHERE refs <= 0;
  IF removed IS NULL THEN
    RETURN;
  END IF;
  DELETE FROM cpid_ids WHERE cpid = ANY(removed);
  -- The CPID before each one removed has another next CPID.
  SELECT array_agg(a.c), array_agg(cpid_shared(a.c, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > a.c)))
    INTO cs, ss
    FROM (SELECT DISTINCT (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C") AS c FROM unnest(removed) x) a
    WHERE a.c IS NOT NULL;
  UPDATE cpid_ids t SET shared = v.s FROM unnest(cs, ss) AS v(c, s) WHERE t.cpid = v.c COLLATE "C" AND t.shared <> v.s;
END $$;

CREATE FUNCTION mergelogs_cpid_ids_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cpid_ids_add_all(ARRAY(SELECT cpid FROM added));
  RETURN NULL;
END $$;
CREATE FUNCTION mergelogs_cpid_ids_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cpid_ids_remove_all(ARRAY(SELECT cpid FROM gone));
  RETURN NULL;
END $$;
CREATE FUNCTION mergelog_sources_cpid_ids_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cpid_ids_add_all(ARRAY(SELECT source_cpid FROM added));
  RETURN NULL;
END $$;
CREATE FUNCTION mergelog_sources_cpid_ids_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM cpid_ids_remove_all(ARRAY(SELECT source_cpid FROM gone));
  RETURN NULL;
END $$;

DROP TRIGGER mergelogs_cpid_ids ON mergelogs;
DROP TRIGGER mergelog_sources_cpid_ids ON mergelog_sources;
DROP FUNCTION mergelogs_cpid_ids();
DROP FUNCTION mergelog_sources_cpid_ids();
DROP FUNCTION cpid_ids_add(TEXT);
DROP FUNCTION cpid_ids_remove(TEXT);

CREATE TRIGGER mergelogs_cpid_ids_added AFTER INSERT ON mergelogs
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION mergelogs_cpid_ids_added();
CREATE TRIGGER mergelogs_cpid_ids_gone AFTER DELETE ON mergelogs
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION mergelogs_cpid_ids_gone();
CREATE TRIGGER mergelog_sources_cpid_ids_added AFTER INSERT ON mergelog_sources
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION mergelog_sources_cpid_ids_added();
CREATE TRIGGER mergelog_sources_cpid_ids_gone AFTER DELETE ON mergelog_sources
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION mergelog_sources_cpid_ids_gone();
