//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// exists: signal 0 checks the pid without signalling it (EPERM: it exists
// and belongs to another user).
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// terminate asks the process to end (SIGTERM).
func terminate(pid int) { syscall.Kill(pid, syscall.SIGTERM) }
