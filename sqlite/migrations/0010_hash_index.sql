-- Schema v10: the content hashes that make ingest idempotent are unique by
-- a named index (audit_events_hash, log_records_hash) instead of a UNIQUE
-- column constraint. Duplicates are refused as before (INSERT OR IGNORE);
-- what changes is that the bulk load of a new database (sqlite.Bulk) can
-- drop the index and build it at the end by a sort, like the others,
-- instead of keeping it up in random order for every event it loads
-- (docs/ARCHITECTURE.md, "The bulk load"). The two tables are rebuilt with
-- the same columns and ids; the views that read them are made again.
DROP VIEW spans;

CREATE TABLE audit_events_v10 (
  id               INTEGER PRIMARY KEY,
  hash             BLOB    NOT NULL,
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
  line             INTEGER NOT NULL,
  cluster          TEXT    NOT NULL DEFAULT 'default',
  traceparent      TEXT             -- W3C traceparent of the object, canonical
);
INSERT INTO audit_events_v10(id, hash, audit_id, stage, level, verb, request_uri, api_group, api_version, resource,
  subresource, namespace, name, uid, resource_version, username, user_agent, source_ips, code, received_ns, stage_ns,
  cpid, cpid_ancestors, owner_refs, annotations, redacted, file_id, line, cluster, traceparent)
SELECT id, hash, audit_id, stage, level, verb, request_uri, api_group, api_version, resource,
  subresource, namespace, name, uid, resource_version, username, user_agent, source_ips, code, received_ns, stage_ns,
  cpid, cpid_ancestors, owner_refs, annotations, redacted, file_id, line, cluster, traceparent
FROM audit_events ORDER BY id;
DROP TABLE audit_events;
ALTER TABLE audit_events_v10 RENAME TO audit_events;
CREATE UNIQUE INDEX audit_events_hash ON audit_events(hash);
CREATE INDEX audit_events_object   ON audit_events(resource, namespace, name);
CREATE INDEX audit_events_audit_id ON audit_events(audit_id);
CREATE INDEX audit_events_cpid     ON audit_events(cpid) WHERE cpid IS NOT NULL;
CREATE INDEX audit_events_stage_ns ON audit_events(stage_ns);
CREATE INDEX audit_events_writes ON audit_events(received_ns)
  WHERE stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection');
CREATE INDEX audit_events_reads ON audit_events(received_ns) WHERE verb IN ('list', 'watch');

CREATE TABLE log_records_v10 (
  id        INTEGER PRIMARY KEY,
  hash      BLOB    NOT NULL,
  ts_ns     INTEGER NOT NULL,
  level     TEXT    NOT NULL,
  component TEXT    NOT NULL,
  msg       TEXT    NOT NULL,
  cpid      TEXT,
  fields    TEXT    NOT NULL, -- JSON object: every key of the line
  file_id   INTEGER NOT NULL REFERENCES files(id),
  line      INTEGER NOT NULL,
  cluster   TEXT    NOT NULL DEFAULT 'default'
);
INSERT INTO log_records_v10(id, hash, ts_ns, level, component, msg, cpid, fields, file_id, line, cluster)
SELECT id, hash, ts_ns, level, component, msg, cpid, fields, file_id, line, cluster FROM log_records ORDER BY id;
DROP TABLE log_records;
ALTER TABLE log_records_v10 RENAME TO log_records;
CREATE UNIQUE INDEX log_records_hash ON log_records(hash);
CREATE INDEX log_records_ts   ON log_records(ts_ns);
CREATE INDEX log_records_cpid ON log_records(cpid) WHERE cpid IS NOT NULL;

CREATE VIEW spans AS
  SELECT 'controller' AS kind, span_id, parent_id, cpid, service, name, start_ns, end_ns, NULL AS event_id
  FROM controller_spans
  UNION ALL
  SELECT 'apiserver', e.audit_id, '', r.cpid, 'kube-apiserver',
         e.verb || ' ' || e.resource || CASE WHEN e.subresource = '' THEN '' ELSE '/' || e.subresource END,
         e.received_ns, e.stage_ns, e.id
  FROM revisions r JOIN audit_events e ON e.id = r.event_id;
