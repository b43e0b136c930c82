package ingest

// PollOnly makes t check its logs every Poll only, without fsnotify: a
// tailer run in a testing/synctest bubble must not wait on the inotify
// descriptor, see Tailer.pollOnly.
func PollOnly(t *Tailer) { t.pollOnly = true }
