//go:build unix

package server

import (
	"errors"
	"os"
	"syscall"
)

// fileOwner is the uid that owns the file.
func fileOwner(fi os.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }

// fileIDs are the file's owner and group.
func fileIDs(fi os.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// tryLock takes an exclusive flock on f without waiting; busy says
// another holder has it.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// credentials run a child as the user.
func credentials(u runUser) *syscall.SysProcAttr {
	groups := make([]uint32, 0, len(u.Groups))
	for _, g := range u.Groups {
		groups = append(groups, uint32(g))
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: groups}}
}

// Supported says whether this platform runs a managed server (Linux and
// macOS do).
func Supported() error { return nil }
