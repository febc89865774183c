//go:build !linux

package fio

import (
	"errors"
	"os"
	"os/exec"
)

// syncAll flushes dirty pages with sync(1) where the syscall is not wired up.
func syncAll() { _ = exec.Command("sync").Run() }

func freeBytes(string) (int64, error) { return 0, errors.New("free space not known on this platform") }

func deviceMounted(os.FileInfo) bool { return false }
