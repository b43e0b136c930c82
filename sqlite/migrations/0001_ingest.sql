-- Schema v1: what ingest stores. See docs/SCHEMA.md, a public contract.

-- files: every input a record came from. A bundle member is named
-- "bundle.tgz!path/inside"; standard input is "-".
CREATE TABLE files (
  id   INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE
);

-- audit_events: one row per distinct audit.k8s.io/v1 Event. Exact duplicate
-- events collapse on hash; events that share an audit_id (stages, aggregated
-- apiservers) are distinct rows.
CREATE TABLE audit_events (
  id               INTEGER PRIMARY KEY,
  hash             BLOB    NOT NULL UNIQUE,
  audit_id         TEXT    NOT NULL,
  stage            TEXT    NOT NULL,
  level            TEXT    NOT NULL,
  verb             TEXT    NOT NULL,
  request_uri      TEXT    NOT NULL,
  api_group        TEXT    NOT NULL,
  api_version      TEXT    NOT NULL,
  resource         TEXT    NOT NULL,
  subresource      TEXT    NOT NULL,
  namespace        TEXT    NOT NULL,
  name             TEXT    NOT NULL,
  uid              TEXT    NOT NULL,
  resource_version TEXT    NOT NULL,
  username         TEXT    NOT NULL,
  user_agent       TEXT    NOT NULL,
  source_ips       TEXT,            -- JSON array
  code             INTEGER,         -- NULL when the event has no responseStatus
  received_ns      INTEGER NOT NULL,
  stage_ns         INTEGER NOT NULL,
  cpid             TEXT,            -- NULL when the object carries no CPID
  cpid_ancestors   TEXT,            -- JSON array, closest first
  owner_refs       TEXT,            -- JSON array of metav1.OwnerReference
  annotations      TEXT,            -- JSON object: the audit event's own annotations
  redacted         INTEGER NOT NULL, -- 1 when Secret data/stringData was removed
  file_id          INTEGER NOT NULL REFERENCES files(id),
  line             INTEGER NOT NULL
);
CREATE INDEX audit_events_object   ON audit_events(resource, namespace, name);
CREATE INDEX audit_events_audit_id ON audit_events(audit_id);
CREATE INDEX audit_events_cpid     ON audit_events(cpid) WHERE cpid IS NOT NULL;
CREATE INDEX audit_events_stage_ns ON audit_events(stage_ns);

-- audit_bodies: the request and response bodies of events that have any,
-- as JSON text (json_extract works on them).
CREATE TABLE audit_bodies (
  event_id        INTEGER PRIMARY KEY REFERENCES audit_events(id),
  request_object  TEXT,
  response_object TEXT,
  response_status TEXT
);

-- log_records: one row per distinct controller log line.
CREATE TABLE log_records (
  id        INTEGER PRIMARY KEY,
  hash      BLOB    NOT NULL UNIQUE,
  ts_ns     INTEGER NOT NULL,
  level     TEXT    NOT NULL,
  component TEXT    NOT NULL,
  msg       TEXT    NOT NULL,
  cpid      TEXT,
  fields    TEXT    NOT NULL, -- JSON object: every key of the line
  file_id   INTEGER NOT NULL REFERENCES files(id),
  line      INTEGER NOT NULL
);
CREATE INDEX log_records_ts   ON log_records(ts_ns);
CREATE INDEX log_records_cpid ON log_records(cpid) WHERE cpid IS NOT NULL;
