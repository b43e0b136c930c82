-- Expiry deletes audit events and log lines (cpid-tui expire): for each
-- row deleted, PostgreSQL checks the foreign keys that refer to it with a
-- query on the referring table, which without an index on the referring
-- column reads the whole table (and the rows expiry deleted before it in
-- the same transaction): 2.5M events of a 5M database did not delete in
-- 12 minutes. The primary keys of revisions and audit_body_refs already
-- index theirs.
CREATE INDEX changes_event ON changes(event_id);
CREATE INDEX mergelogs_event ON mergelogs(event_id);
CREATE INDEX anomalies_event ON anomalies(event_id);
CREATE INDEX controller_spans_log ON controller_spans(log_id);
