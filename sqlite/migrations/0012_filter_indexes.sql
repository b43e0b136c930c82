-- Schema v12: indexes for the terminal UI's filter (issue 31), which it
-- runs at each key typed, for a page of changes and for the count of all
-- those that match (sqlite/browse.go, filterCond).
-- changes_search holds, in time order, the text of a change's own row
-- that the filter reads (searchText, word for word: SQLite takes the
-- value from the index only for the same expression) and its id: the
-- filter scans this narrow index instead of the table's rows.
CREATE INDEX changes_search ON changes(started_ns, lower(namespace || char(31) || name || char(31) || resource || char(31) || user || char(31) || id || char(31) || cluster), id);
-- The object names and the writers of the writes of changes: the filter
-- skips through their distinct values (a seek each) and reads the writes
-- of the values that match, instead of every write.
CREATE INDEX revisions_names ON revisions(name, change_id) WHERE change_id IS NOT NULL;
CREATE INDEX revisions_writers ON revisions(writer, change_id) WHERE change_id IS NOT NULL;
