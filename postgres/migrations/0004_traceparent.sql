-- Schema v9 of docs/SCHEMA.md (SQLite's 0009_traceparent.sql): W3C trace
-- context, KEP-5915's tracing.k8s.io/traceparent.
ALTER TABLE audit_events ADD COLUMN traceparent TEXT;
ALTER TABLE changes ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
DELETE FROM reconstruct_state;
