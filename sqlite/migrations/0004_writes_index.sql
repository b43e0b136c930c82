-- Schema v1, part 4: the writes in the order reconstruct reads them (the
-- apiserver's receive time, then id), so that it neither reads the other
-- events nor sorts. Its WHERE must stay word for word the one of the
-- queries that use it (ScanWrites, Late, LatestWrite in sqlite/reconstruct.go):
-- SQLite uses a partial index only for a query that repeats its terms.
CREATE INDEX audit_events_writes ON audit_events(received_ns)
  WHERE stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection');
