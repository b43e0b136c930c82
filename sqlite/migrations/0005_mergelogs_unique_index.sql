-- Schema v1, part 5: the uniqueness of (cpid, origin) in mergelogs becomes
-- a named index, which a full rebuild drops while it loads and creates
-- again after (sqlite/saver.go); an inline UNIQUE cannot be dropped.
-- Same columns, same rows, same ids. Migrations run with foreign keys off
-- and checked after (SQLite's procedure for changing a table).
CREATE TABLE mergelogs_v5 (
  id      INTEGER PRIMARY KEY,
  cpid    TEXT    NOT NULL,
  ts_ns   INTEGER NOT NULL,
  service TEXT    NOT NULL,
  origin  TEXT    NOT NULL,
  event_id INTEGER REFERENCES audit_events(id) -- the write that showed it (annotation, inferred)
);
INSERT INTO mergelogs_v5(id, cpid, ts_ns, service, origin, event_id)
  SELECT id, cpid, ts_ns, service, origin, event_id FROM mergelogs;
DROP TABLE mergelogs;
ALTER TABLE mergelogs_v5 RENAME TO mergelogs;
CREATE UNIQUE INDEX mergelogs_cpid_origin ON mergelogs(cpid, origin);
