-- The write path of a fleet (docs/SCALE.md): the foreign keys of the tables
-- that every batch appends to are dropped. Each was checked row by row by
-- a trigger that ran a query of its own: three per audit event, a third of
-- the server's time of a write (BenchmarkFleetWrite). The writer stores the
-- rows they referred to (files, events, body blocks) in the same
-- transaction or found them stored, and nothing deletes them, as SQLite's
-- bulk path writes with foreign_keys off. The keys of the derived tables
-- stay.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_file_id_fkey;
ALTER TABLE log_records DROP CONSTRAINT log_records_file_id_fkey;
ALTER TABLE audit_body_refs DROP CONSTRAINT audit_body_refs_event_id_fkey;
ALTER TABLE audit_body_refs DROP CONSTRAINT audit_body_refs_block_id_fkey;
