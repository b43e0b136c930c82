-- Schema v6: a cluster column, so that one database holds the history of a
-- fleet. Every record and every derived row names the cluster it belongs to
-- (cpid-tui --cluster NAME; 'default' when none was given); a reconstruct
-- run derives one cluster at a time, and readers filter by it.

-- files: the same path (/var/log/kubernetes/audit/audit.log) on every
-- cluster is a different input.
CREATE TABLE files_v6 (
  id      INTEGER PRIMARY KEY,
  path    TEXT NOT NULL,
  cluster TEXT NOT NULL DEFAULT 'default',
  UNIQUE (cluster, path)
);
INSERT INTO files_v6(id, path, cluster) SELECT id, path, 'default' FROM files;
DROP TABLE files;
ALTER TABLE files_v6 RENAME TO files;

ALTER TABLE audit_events     ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE log_records      ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE revisions        ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE changes          ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE mergelogs        ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE anomalies        ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';
ALTER TABLE controller_spans ADD COLUMN cluster TEXT NOT NULL DEFAULT 'default';

DROP INDEX mergelogs_cpid_origin;
CREATE UNIQUE INDEX mergelogs_cpid_origin ON mergelogs(cluster, cpid, origin);
CREATE INDEX changes_cluster ON changes(cluster, started_ns);

-- reconstruct_state: one watermark per cluster.
CREATE TABLE reconstruct_state_v6 (
  cluster TEXT NOT NULL,
  key     TEXT NOT NULL,
  value   BLOB,
  PRIMARY KEY (cluster, key)
);
INSERT INTO reconstruct_state_v6(cluster, key, value) SELECT 'default', key, value FROM reconstruct_state;
DROP TABLE reconstruct_state;
ALTER TABLE reconstruct_state_v6 RENAME TO reconstruct_state;

-- tail_checkpoints: one position per cluster and followed path.
CREATE TABLE tail_checkpoints_v6 (
  cluster         TEXT    NOT NULL,
  source          TEXT    NOT NULL,
  file            TEXT    NOT NULL,
  fingerprint     BLOB    NOT NULL,
  fingerprint_len INTEGER NOT NULL,
  offset          INTEGER NOT NULL,
  line            INTEGER NOT NULL,
  device          INTEGER NOT NULL,
  inode           INTEGER NOT NULL,
  lines           INTEGER NOT NULL,
  records         INTEGER NOT NULL,
  dups            INTEGER NOT NULL,
  bad             INTEGER NOT NULL,
  possible_loss   INTEGER NOT NULL,
  newest_ns       INTEGER NOT NULL,
  committed_ns    INTEGER NOT NULL,
  PRIMARY KEY (cluster, source)
);
INSERT INTO tail_checkpoints_v6 SELECT 'default', source, file, fingerprint, fingerprint_len, offset, line, device, inode,
  lines, records, dups, bad, possible_loss, newest_ns, committed_ns FROM tail_checkpoints;
DROP TABLE tail_checkpoints;
ALTER TABLE tail_checkpoints_v6 RENAME TO tail_checkpoints;
