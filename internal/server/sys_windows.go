//go:build windows

package server

import (
	"errors"
	"os"
	"syscall"

	"github.com/tunebench/tunebench/internal/errs"
	"golang.org/x/sys/windows"
)

// fileOwner: Windows files have no uid (the managed server, the only user
// of it, does not run there).
func fileOwner(os.FileInfo) int { return -1 }

func fileIDs(os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

// tryLock takes an exclusive lock on f's first byte without waiting
// (LockFileEx); busy says another holder has it.
func tryLock(f *os.File) (busy bool, err error) {
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

func unlockFile(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}

// credentials: no user switch on Windows.
func credentials(runUser) *syscall.SysProcAttr { return nil }

// Supported: the managed server (initdb, pg_ctl, a Unix user to run it as,
// a socket directory) is for Linux and macOS; on Windows tunebench is a
// client of a server the user runs.
func Supported() error {
	return errs.New(errs.KindUsage,
		"run PostgreSQL as a Windows service (the EDB installer) or on another machine, and give --dsn postgres://USER@HOST:PORT/DB (the password in PGPASSWORD or %APPDATA%\\postgresql\\pgpass.conf)",
		"the managed server (--server-dir, server start) runs on Linux and macOS, not on Windows")
}
