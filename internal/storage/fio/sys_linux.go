//go:build linux

package fio

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tunebench/tunebench/internal/machine"
)

func syncAll() { unix.Sync() }

// deviceMounted reports whether the device fi describes holds a mounted
// filesystem.
func deviceMounted(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	rdev := uint64(st.Rdev)
	return machine.DeviceMounted(unix.Major(rdev), unix.Minor(rdev))
}
