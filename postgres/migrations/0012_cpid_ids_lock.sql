-- cpid_ids (0007) is one table for every cluster, and its triggers update
-- a CPID's neighbours in byte order, which may be another cluster's: two
-- reconstruct runs of two clusters (their run locks are per cluster)
-- updated each other's neighbours in opposite orders and deadlocked
-- (TestFleetTailers/postgres), and each computed what a CPID shares with
-- its neighbours without seeing the other's new rows. Its writers now take
-- one transaction advisory lock first (class "cpix"), so they queue, each
-- reading what the one before committed.
CREATE OR REPLACE FUNCTION cpid_ids_add(x TEXT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  added BOOLEAN;
BEGIN
  PERFORM pg_advisory_xact_lock(1668311416, 0);
  INSERT INTO cpid_ids AS c (cpid, refs, shared)
    VALUES (x, 1, cpid_shared(x, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > x COLLATE "C")))
    ON CONFLICT (cpid) DO UPDATE SET refs = c.refs + 1
    RETURNING (xmax = 0) INTO added;
  IF added THEN
    UPDATE cpid_ids SET shared = cpid_shared(cpid, x)
      WHERE cpid = (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C");
  END IF;
END $$;

CREATE OR REPLACE FUNCTION cpid_ids_remove(x TEXT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  left_refs BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(1668311416, 0);
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = x COLLATE "C" RETURNING refs INTO left_refs;
  IF left_refs IS NULL OR left_refs > 0 THEN
    RETURN;
  END IF;
  DELETE FROM cpid_ids WHERE cpid = x COLLATE "C";
  UPDATE cpid_ids SET shared = cpid_shared(cpid, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > x COLLATE "C"))
    WHERE cpid = (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C");
END $$;
