package driver

import "golang.org/x/sys/unix"

// FreeBytes is the space left to unprivileged writers on dir's filesystem
// (false when it cannot be read). SpaceAt adds the mount point; the results
// store asks it alone.
func FreeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
