//go:build linux

package system

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// deviceNumber returns the major:minor of a block device node.
func deviceNumber(path string) (string, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return "", false
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), true
}
