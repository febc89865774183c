//go:build linux || darwin

package machine

import "golang.org/x/sys/unix"

// FreeBytes is the space left to unprivileged writers on dir's filesystem
// (false when it cannot be read).
func FreeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true //nolint:unconvert // uint32 on darwin
}
