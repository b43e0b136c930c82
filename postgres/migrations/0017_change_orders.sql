-- The orders a page of changes is listed in (postgres/read.go,
-- changeOrders), each as an index in that order, the id (byte order) last:
-- a page of the terminal UI (200 changes) sorted by duration or size read
-- and sorted every change (40-50 ms for 56,818 changes, ten million
-- synthetic events), and the last page by time (its key G) sorted them
-- all too, on disk past work_mem (59 ms); each reads its page from the
-- index now, and the last page skips through the index alone.
CREATE INDEX changes_time ON changes (started_ns DESC, id COLLATE "C");
CREATE INDEX changes_duration ON changes ((settled_ns - started_ns) DESC, id COLLATE "C");
CREATE INDEX changes_size ON changes (writes DESC, id COLLATE "C");
