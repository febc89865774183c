package machine

import (
	"fmt"
	"strings"
)

// MountinfoFile is a process's mount table under /proc: a server host's,
// read through another source (SQL), is parsed by ParseMounts.
const MountinfoFile = "/proc/self/mountinfo"

// Mount is one line of a mount table (/proc/PID/mountinfo, proc(5)), its
// paths unescaped (a space is a space, not \040).
type Mount struct {
	Major, Minor int
	// Root is the directory of the filesystem mounted at MountPoint ("/"
	// unless a bind mount).
	Root       string
	MountPoint string
	Options    string // per-mount options, e.g. rw,noatime
	FSType     string // e.g. ext4, xfs, tmpfs, cgroup2
	Source     string // e.g. /dev/nvme0n1p2, or "none"
	// SuperOptions are the filesystem-wide options, e.g. rw,discard.
	SuperOptions string
}

// Device is the mount's device number, "major:minor".
func (m Mount) Device() string { return fmt.Sprintf("%d:%d", m.Major, m.Minor) }

// Contains reports whether path (absolute, clean, symlinks resolved) is
// mountPoint or below it, comparing whole path components: "/data" does
// not contain "/database".
func Contains(mountPoint, path string) bool {
	if mountPoint == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == mountPoint || strings.HasPrefix(path, mountPoint+"/")
}

// MountFor is the mount that holds path (absolute, clean, symlinks
// resolved): the one with the longest mount point containing it; of
// several on one mount point the last listed is on top and wins. Nil when
// none holds it.
func MountFor(ms []Mount, path string) *Mount {
	best := -1
	for i, m := range ms {
		if !Contains(m.MountPoint, path) {
			continue
		}
		if best < 0 || len(m.MountPoint) >= len(ms[best].MountPoint) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	m := ms[best]
	return &m
}

// IsMountPoint reports whether something is mounted on dir (absolute,
// clean) in this process's mount table.
func IsMountPoint(dir string) (bool, error) {
	ms, err := Mounts()
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.MountPoint == dir {
			return true, nil
		}
	}
	return false, nil
}

// MountsUnder lists the mounts on dir and below it in this process's mount
// table, deepest first (the order to unmount them in).
func MountsUnder(dir string) ([]Mount, error) {
	ms, err := Mounts()
	if err != nil {
		return nil, err
	}
	var out []Mount
	for i := len(ms) - 1; i >= 0; i-- {
		if Contains(dir, ms[i].MountPoint) {
			out = append(out, ms[i])
		}
	}
	return out, nil
}

// DeviceMounted reports whether a filesystem on the block device
// major:minor is mounted in this process's mount table.
func DeviceMounted(major, minor uint32) bool {
	ms, err := Mounts()
	if err != nil {
		return false
	}
	for _, m := range ms {
		if m.Major == int(major) && m.Minor == int(minor) {
			return true
		}
	}
	return false
}
