//go:build unix

package layout

import "syscall"

// statNumbers are the device numbers of the filesystem holding path (dev)
// and, for a device node, of the device itself (rdev).
func statNumbers(path string) (dev, rdev uint64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Dev), uint64(st.Rdev), nil //nolint:unconvert // int32 on darwin
}
