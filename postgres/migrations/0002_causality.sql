-- Schema v7 of docs/SCHEMA.md (SQLite's 0007_causality.sql): causality
-- beyond user changes.
ALTER TABLE changes ADD COLUMN trigger TEXT NOT NULL DEFAULT 'user';
ALTER TABLE changes ADD COLUMN trigger_detail TEXT NOT NULL DEFAULT '';
ALTER TABLE revisions ADD COLUMN explain TEXT;
ALTER TABLE revisions ADD COLUMN explain_detail TEXT;
ALTER TABLE revisions ADD COLUMN confidence TEXT;
CREATE INDEX changes_trigger ON changes(cluster, trigger, started_ns);
CREATE INDEX audit_events_reads ON audit_events(received_ns) WHERE verb IN ('list', 'watch');
DELETE FROM reconstruct_state;
