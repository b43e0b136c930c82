-- Schema v14: the index of an object's writes (migration 0002) holds what
-- history reads of each write to find the object and the last writes in
-- order: the group and cluster that tell objects of the same name apart,
-- and attempt and stage_ns after seq (the order of history). Finding
-- nodes/kwok-node-0 among 10 million events read each of its 48,702 rows
-- for its count, first and last write; the index alone answers now, and
-- the last 200 come in order from it. Same name, same leading columns:
-- every query that used it still does.
DROP INDEX revisions_object;
CREATE INDEX revisions_object ON revisions(resource, namespace, name, seq, attempt, stage_ns, api_group, cluster);
