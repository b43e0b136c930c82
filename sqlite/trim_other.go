//go:build !cgo || !linux

package sqlite

// trimCHeap does nothing here. The pure-Go SQLite allocates through
// modernc.org/memory (pages it maps and unmaps itself, outside the Go
// heap: its sorts are neither in GOMEMLIMIT nor trimmed), and C libraries
// other than glibc's are not asked.
func trimCHeap() {}
