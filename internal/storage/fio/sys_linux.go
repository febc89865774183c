//go:build linux

package fio

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func syncAll() { unix.Sync() }

func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// deviceMounted reports whether the device fi describes holds a mounted
// filesystem (its major:minor appears in /proc/self/mountinfo).
func deviceMounted(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	rdev := uint64(st.Rdev)
	want := fmt.Sprintf("%d:%d", unix.Major(rdev), unix.Minor(rdev))
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[2] == want {
			return true
		}
	}
	return false
}
