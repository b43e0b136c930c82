-- Schema v1, part 2: what reconstruct derives. See docs/SCHEMA.md.

-- revisions: one row per write of an object (create, update, patch, delete,
-- and writes of its subresources: status, binding, scale...), with how
-- reconstruct explained it. A failed write (4xx/5xx, 409 conflicts) is kept
-- as an attempt (attempt = 1), not a revision.
CREATE TABLE revisions (
  event_id       INTEGER PRIMARY KEY REFERENCES audit_events(id),
  api_group      TEXT    NOT NULL,
  resource       TEXT    NOT NULL,
  namespace      TEXT    NOT NULL,
  name           TEXT    NOT NULL,
  seq            INTEGER NOT NULL, -- 1-based order of the object's revisions; attempts take the seq of the revision they followed
  order_by       TEXT    NOT NULL, -- 'resourceVersion' or 'time': what seq was ordered by
  attempt        INTEGER NOT NULL,
  stage_ns       INTEGER NOT NULL,
  writer         TEXT    NOT NULL, -- deployment-controller, kube-scheduler, kubectl (kubernetes-admin)...
  writer_is_user INTEGER NOT NULL, -- 1: a person or their tools; their writes start changes
  cpid           TEXT,
  cpid_origin    TEXT,             -- root, annotation, inferred, background
  cause_event_id INTEGER,          -- the write that triggered this one
  cause_rule     TEXT,             -- the inference rule that found it (self, owner, service, targets, node)
  change_id      TEXT,             -- the root change this write belongs to
  hop_ns         INTEGER           -- stage_ns - the cause's stage_ns
);
CREATE INDEX revisions_object ON revisions(resource, namespace, name, seq);
CREATE INDEX revisions_change ON revisions(change_id, stage_ns);
CREATE INDEX revisions_cpid   ON revisions(cpid);

-- mergelogs: paper Table 1, from three origins: 'log' (written by an
-- instrumented controller), 'annotation' (derived from an object's ancestor
-- list), 'inferred' (derived from the audit log for writers without CPIDs).
CREATE TABLE mergelogs (
  id      INTEGER PRIMARY KEY,
  cpid    TEXT    NOT NULL,
  ts_ns   INTEGER NOT NULL,
  service TEXT    NOT NULL,
  origin  TEXT    NOT NULL,
  event_id INTEGER REFERENCES audit_events(id), -- the write that showed it (annotation, inferred)
  UNIQUE (cpid, origin)
);
CREATE TABLE mergelog_sources (
  mergelog_id INTEGER NOT NULL REFERENCES mergelogs(id),
  pos         INTEGER NOT NULL,
  source_cpid TEXT    NOT NULL,
  PRIMARY KEY (mergelog_id, pos)
);
CREATE INDEX mergelog_sources_source ON mergelog_sources(source_cpid);

-- changes: root changes (a user's write) and their summary.
CREATE TABLE changes (
  id                   TEXT    PRIMARY KEY, -- root CPID (the object's, or the auditID)
  event_id             INTEGER NOT NULL REFERENCES audit_events(id),
  started_ns           INTEGER NOT NULL,
  settled_ns           INTEGER NOT NULL, -- the last write of the change
  user                 TEXT    NOT NULL,
  verb                 TEXT    NOT NULL,
  api_group            TEXT    NOT NULL,
  resource             TEXT    NOT NULL,
  subresource          TEXT    NOT NULL,
  namespace            TEXT    NOT NULL,
  name                 TEXT    NOT NULL,
  writes               INTEGER NOT NULL,
  objects              INTEGER NOT NULL,
  slowest_hop_ns       INTEGER,
  slowest_hop_event_id INTEGER
);
CREATE INDEX changes_started ON changes(started_ns);

-- anomalies: what the logs show that should not happen.
CREATE TABLE anomalies (
  id        INTEGER PRIMARY KEY,
  kind      TEXT    NOT NULL, -- rv-backwards, repeated-write, transition-backwards
  event_id  INTEGER NOT NULL REFERENCES audit_events(id),
  api_group TEXT    NOT NULL,
  resource  TEXT    NOT NULL,
  namespace TEXT    NOT NULL,
  name      TEXT    NOT NULL,
  detail    TEXT    NOT NULL,
  UNIQUE (kind, event_id)
);

-- reconstruct_state: where the last reconstruct stopped, and the engine's
-- state to go on from there. Writes received after 'cutoff_ns' are
-- provisional: the next run redoes them, with whatever arrived since.
CREATE TABLE reconstruct_state (
  key   TEXT PRIMARY KEY,
  value BLOB
);

-- controller_spans: spans instrumented controllers wrote (paper Table 3).
CREATE TABLE controller_spans (
  span_id   TEXT    PRIMARY KEY,
  parent_id TEXT    NOT NULL, -- '' for a controller's root span
  cpid      TEXT    NOT NULL,
  service   TEXT    NOT NULL,
  name      TEXT    NOT NULL,
  start_ns  INTEGER NOT NULL,
  end_ns    INTEGER NOT NULL,
  attrs     TEXT,             -- JSON object
  log_id    INTEGER NOT NULL REFERENCES log_records(id)
);
CREATE INDEX controller_spans_cpid ON controller_spans(cpid);

-- spans: every span, controller spans and one apiserver span per write
-- request (from its requestReceived to its last stage).
CREATE VIEW spans AS
  SELECT 'controller' AS kind, span_id, parent_id, cpid, service, name, start_ns, end_ns, NULL AS event_id
  FROM controller_spans
  UNION ALL
  SELECT 'apiserver', e.audit_id, '', r.cpid, 'kube-apiserver',
         e.verb || ' ' || e.resource || CASE WHEN e.subresource = '' THEN '' ELSE '/' || e.subresource END,
         e.received_ns, e.stage_ns, e.id
  FROM revisions r JOIN audit_events e ON e.id = r.event_id;
