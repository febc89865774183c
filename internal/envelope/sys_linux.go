//go:build linux

package envelope

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable says whether this process may create directories in dir.
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// statDevice is the major:minor of a block device node, or of the
// filesystem holding any other path (unix.Major/Minor split the dev_t).
func statDevice(path string) (major, minor uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	n := st.Dev
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		n = st.Rdev
	}
	return uint64(unix.Major(n)), uint64(unix.Minor(n)), nil
}

// allowedCPUs lists the cores this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// startInCgroup makes a child start in the cgroup open as fd (clone3 with
// CLONE_INTO_CGROUP, cgroup v2 only).
func startInCgroup(attr *syscall.SysProcAttr, fd int) error {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return nil
}

// dropFileCache writes back and drops the cached pages of one file.
func dropFileCache(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil && !errors.Is(err, unix.EINVAL) {
		return 0, err
	}
	return st.Size(), unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// childIDs are the user and group a child runs as (SysProcAttr.Credential).
func childIDs(attr *syscall.SysProcAttr) (uid, gid int, ok bool) {
	if c := attr.Credential; c != nil {
		return int(c.Uid), int(c.Gid), true
	}
	return 0, 0, false
}
