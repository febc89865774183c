package server

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited marks every descriptor from 3 up close-on-exec, so the
// programs the server code starts (initdb, pg_ctl, and through it the
// server itself) get only their standard streams. Go opens its own files
// close-on-exec; what lacks the flag was inherited from the process that
// started tunebench (a lock held by `flock L tunebench server start`, a
// pipe), and a server running for hours must not keep that held.
func closeInherited() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC) //nolint:errcheck // a descriptor closed meanwhile
	}
}
