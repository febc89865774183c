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

// statDevice stats path: whether it is a block device, its rdev, and the
// device of the filesystem it is on.
func statDevice(path string) (isBlock bool, rdev, dev uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, 0, 0, err
	}
	return st.Mode&unix.S_IFMT == unix.S_IFBLK, st.Rdev, st.Dev, nil
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
