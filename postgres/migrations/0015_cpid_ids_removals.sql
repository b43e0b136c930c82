-- cpid_ids_remove_all (0014) set what the CPID before each removed one
-- shares with its next by a probe of the index per removed CPID, after
-- deleting them all. When a statement removes most of the table (a full
-- rebuild's or an expiry's DELETE of a cluster's merge graph), the index
-- is then mostly entries deleted by the same transaction, which no probe
-- can skip without visiting their rows: each probe read through the run of
-- deleted CPIDs before it, and expiring half of 1M synthetic events had
-- not deleted its 23,768 mergelogs after 9 minutes. A statement that
-- removes more than 1,000 CPIDs now sets shared for every CPID left in one
-- ordered pass (about 5 us a CPID); fewer are probed as before.
CREATE OR REPLACE FUNCTION cpid_ids_remove_all(xs TEXT[]) RETURNS void LANGUAGE plpgsql AS $$
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
  IF cardinality(removed) > 1000 THEN
    UPDATE cpid_ids t SET shared = v.s
      FROM (SELECT cpid, cpid_shared(cpid, lead(cpid) OVER (ORDER BY cpid)) AS s FROM cpid_ids) v
      WHERE t.cpid = v.cpid AND t.shared <> v.s;
    RETURN;
  END IF;
  -- The CPID before each one removed has another next CPID.
  SELECT array_agg(a.c), array_agg(cpid_shared(a.c, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > a.c)))
    INTO cs, ss
    FROM (SELECT DISTINCT (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C") AS c FROM unnest(removed) x) a
    WHERE a.c IS NOT NULL;
  UPDATE cpid_ids t SET shared = v.s FROM unnest(cs, ss) AS v(c, s) WHERE t.cpid = v.c COLLATE "C" AND t.shared <> v.s;
END $$;
