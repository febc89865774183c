//go:build unix

package kernel

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

func lock(f *os.File) error   { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }
func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// canWrite is access(2) W_OK: a read-only filesystem says EROFS.
func canWrite(path string) error { return unix.Access(path, unix.W_OK) }

func isReadOnlyFS(err error) bool { return errors.Is(err, unix.EROFS) }
