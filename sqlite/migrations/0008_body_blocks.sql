-- Schema v8: bodies packed in compressed blocks (docs/SCHEMA.md, package
-- blocks). The bodies of consecutive events are appended to a block of
-- about 256 KiB (writes' bodies and others' apart), stored as one zstd frame; audit_body_refs says where an
-- event's bodies are in it. The view audit_bodies has the columns of the
-- table of schema v1-v7 and reads them through the SQL function cpid_body,
-- which cpid-tui registers (cpid-tui sql runs any query on it); the sqlite3
-- shell does not have it.
CREATE TABLE body_blocks (
  id      INTEGER PRIMARY KEY,
  cluster TEXT    NOT NULL,
  kind    TEXT    NOT NULL, -- 'write': bodies of writes; 'other': of gets, lists, watches...
  raw_len INTEGER NOT NULL, -- bytes of the bodies it holds, decompressed
  data    BLOB    NOT NULL  -- one zstd frame
);
CREATE INDEX body_blocks_open ON body_blocks(cluster, kind, id);

CREATE TABLE audit_body_refs (
  event_id     INTEGER PRIMARY KEY REFERENCES audit_events(id),
  block_id     INTEGER NOT NULL REFERENCES body_blocks(id),
  offset       INTEGER NOT NULL, -- where the request body starts in the block, decompressed
  request_len  INTEGER,          -- NULL: no request body; the response follows the request
  response_len INTEGER,          -- and the status follows the response
  status_len   INTEGER
);

-- The bodies stored before v8 move into blocks (cpid-tui's migration step
-- packs audit_bodies_v7, then drops it).
ALTER TABLE audit_bodies RENAME TO audit_bodies_v7;

-- The block is read by a subquery, not a join, so that the view stays one
-- table: SQLite then folds it into a query that LEFT JOINs it (a view with
-- a join on the right of a LEFT JOIN would be computed whole first).
CREATE VIEW audit_bodies AS
SELECT r.event_id,
  cpid_body((SELECT data FROM body_blocks WHERE id = r.block_id), r.offset, r.request_len) AS request_object,
  cpid_body((SELECT data FROM body_blocks WHERE id = r.block_id), r.offset + coalesce(r.request_len, 0), r.response_len) AS response_object,
  cpid_body((SELECT data FROM body_blocks WHERE id = r.block_id), r.offset + coalesce(r.request_len, 0) + coalesce(r.response_len, 0), r.status_len)
    AS response_status
FROM audit_body_refs r;
