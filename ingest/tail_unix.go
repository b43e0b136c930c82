//go:build unix

package ingest

import (
	"os"
	"syscall"
)

// fileKey returns the device and inode of a file, hints of its identity.
func fileKey(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
