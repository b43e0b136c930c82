-- What the terminal UI and the commands read at every start, key and
-- listing, at any size (issue 31): PostgreSQL's counterparts of SQLite's
-- 0012_filter_indexes.sql and 0013_cpid_ids.sql.

-- The object names and the writers of the writes of changes: the UI's
-- filter skips through their distinct values (a seek each) and reads the
-- writes of the values that match (postgres/read.go, filter).
CREATE INDEX revisions_names ON revisions(name, change_id) WHERE change_id IS NOT NULL;
CREATE INDEX revisions_writers ON revisions(writer, change_id) WHERE change_id IS NOT NULL;

-- The objects a reference names (history, diff: Objects), counted with
-- their first and last write from the index alone, in any namespace.
CREATE INDEX revisions_objects ON revisions(resource, name, namespace, api_group, cluster, stage_ns);

-- mergelogs_cpid: a CPID's mergelogs, for the walks of the merge DAG,
-- which join on cpid alone (the unique index leads with cluster).
CREATE INDEX mergelogs_cpid ON mergelogs(cpid);

-- cpid_ids: every CPID of the merge graph (a mergelog's or a source's),
-- once, in byte order, with how many rows name it and how many characters
-- it shares with the next one. The shortest prefix that tells the ids of
-- the database apart (cpid.IDLength, the ids every listing prints) is one
-- more than the largest of these, read from an index, instead of a sort
-- of every CPID at every command. The triggers below keep it: a CPID
-- added or gone changes its own row and its predecessor's. 40 means at
-- least that many (readers then count from the CPIDs themselves).
CREATE TABLE cpid_ids (
  cpid   TEXT COLLATE "C" PRIMARY KEY,
  refs   BIGINT  NOT NULL,
  shared INTEGER NOT NULL
);
CREATE INDEX cpid_ids_shared ON cpid_ids(shared);

-- cpid_shared is how many characters a and b start with in common, at
-- most 40; 0 when b is NULL (no next CPID).
CREATE FUNCTION cpid_shared(a TEXT, b TEXT) RETURNS INTEGER LANGUAGE sql IMMUTABLE AS $$
  SELECT COALESCE((SELECT i - 1 FROM generate_series(1, 40) i
    WHERE substr(a, i, 1) COLLATE "C" IS DISTINCT FROM substr(b, i, 1) COLLATE "C" ORDER BY i LIMIT 1), 40)
$$;

CREATE FUNCTION cpid_ids_add(x TEXT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  added BOOLEAN;
BEGIN
  INSERT INTO cpid_ids AS c (cpid, refs, shared)
    VALUES (x, 1, cpid_shared(x, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > x COLLATE "C")))
    ON CONFLICT (cpid) DO UPDATE SET refs = c.refs + 1
    RETURNING (xmax = 0) INTO added;
  IF added THEN
    UPDATE cpid_ids SET shared = cpid_shared(cpid, x)
      WHERE cpid = (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C");
  END IF;
END $$;

CREATE FUNCTION cpid_ids_remove(x TEXT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  left_refs BIGINT;
BEGIN
  UPDATE cpid_ids SET refs = refs - 1 WHERE cpid = x COLLATE "C" RETURNING refs INTO left_refs;
  IF left_refs IS NULL OR left_refs > 0 THEN
    RETURN;
  END IF;
  DELETE FROM cpid_ids WHERE cpid = x COLLATE "C";
  UPDATE cpid_ids SET shared = cpid_shared(cpid, (SELECT min(n.cpid) FROM cpid_ids n WHERE n.cpid > x COLLATE "C"))
    WHERE cpid = (SELECT max(p.cpid) FROM cpid_ids p WHERE p.cpid < x COLLATE "C");
END $$;

CREATE FUNCTION mergelogs_cpid_ids() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM cpid_ids_add(NEW.cpid);
  ELSE
    PERFORM cpid_ids_remove(OLD.cpid);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER mergelogs_cpid_ids AFTER INSERT OR DELETE ON mergelogs
  FOR EACH ROW EXECUTE FUNCTION mergelogs_cpid_ids();

CREATE FUNCTION mergelog_sources_cpid_ids() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM cpid_ids_add(NEW.source_cpid);
  ELSE
    PERFORM cpid_ids_remove(OLD.source_cpid);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER mergelog_sources_cpid_ids AFTER INSERT OR DELETE ON mergelog_sources
  FOR EACH ROW EXECUTE FUNCTION mergelog_sources_cpid_ids();

INSERT INTO cpid_ids(cpid, refs, shared)
  SELECT cpid, count(*), 0 FROM (SELECT cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources) a
  GROUP BY cpid;
UPDATE cpid_ids c SET shared = cpid_shared(c.cpid, n.next)
  FROM (SELECT cpid, lead(cpid) OVER (ORDER BY cpid) AS next FROM cpid_ids) n
  WHERE n.cpid = c.cpid AND n.next IS NOT NULL;
