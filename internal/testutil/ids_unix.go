//go:build unix

package testutil

import (
	"os"
	"syscall"
)

// fileIDs are a file's owner and group.
func fileIDs(fi os.FileInfo) (uid, gid int) {
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
