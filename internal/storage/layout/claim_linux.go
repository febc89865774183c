//go:build linux

package layout

import (
	"errors"
	"os"
	"syscall"
)

// claimed reports whether the kernel holds dev exclusively: a mounted
// filesystem (btrfs included, whose mount table entry names no device), an
// md array or device-mapper member, active swap. Opening it O_EXCL fails
// with EBUSY then; nothing is written.
func claimed(dev string) bool {
	f, err := os.OpenFile(dev, os.O_RDONLY|syscall.O_EXCL, 0)
	if err != nil {
		return errors.Is(err, syscall.EBUSY)
	}
	f.Close()
	return false
}
