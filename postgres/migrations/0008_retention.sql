-- Retention (docs/SCALE.md): the time before which cpid-tui expire deleted
-- a cluster's records. A writer skips a record older than it, counted as a
-- duplicate (the database had it), so that a tailer or an ingest reading
-- an expired file again stores nothing: exactly-once holds across expiry.
CREATE TABLE retention (
  cluster   TEXT   PRIMARY KEY,
  before_ns BIGINT NOT NULL
);
-- No index on (cluster, received_ns) for expiry: it reads audit_events
-- once (a sequential scan) per run, where an index would cost every write.
