//go:build linux

package envinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DevNumber is the major:minor of the block device node at path (false
// for anything else, and off Linux).
func DevNumber(path string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return "", false
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), true
}

// statDevice is the major:minor of the filesystem holding path.
func statDevice(path string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", false
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)), true
}
