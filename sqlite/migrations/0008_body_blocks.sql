-- Schema v8: bodies packed in compressed blocks (docs/SCHEMA.md, package
-- blocks). The bodies of consecutive events are appended to a block of
-- about 256 KiB, stored as one zstd frame; audit_body_refs says where an
-- event's bodies are in it. The view audit_bodies has the columns of the
-- table of schema v1-v7 and reads them through the SQL function cpid_body,
-- which cpid-tui registers (cpid-tui sql runs any query on it); the sqlite3
-- shell does not have it.
CREATE TABLE body_blocks (
  id      INTEGER PRIMARY KEY,
  cluster TEXT    NOT NULL,
  raw_len INTEGER NOT NULL, -- bytes of the bodies it holds, decompressed
  data    BLOB    NOT NULL  -- one zstd frame
);
CREATE INDEX body_blocks_cluster ON body_blocks(cluster, id);

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

CREATE VIEW audit_bodies AS
SELECT r.event_id,
  cpid_body(k.data, r.offset, r.request_len) AS request_object,
  cpid_body(k.data, r.offset + coalesce(r.request_len, 0), r.response_len) AS response_object,
  cpid_body(k.data, r.offset + coalesce(r.request_len, 0) + coalesce(r.response_len, 0), r.status_len) AS response_status
FROM audit_body_refs r JOIN body_blocks k ON k.id = r.block_id;
