//go:build !cgo || !linux

package sqlite

// trimCHeap does nothing here: the pure-Go SQLite's memory is Go's, and
// other C libraries than glibc's give freed memory back on their own.
func trimCHeap() {}
