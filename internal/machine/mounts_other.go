//go:build !linux

package machine

import (
	"errors"
	"runtime"
)

var errNoMountinfo = errors.New("the mount table (/proc/self/mountinfo) is Linux's; there is none on " + runtime.GOOS)

// Mounts is this process's mount table: Linux only.
func Mounts() ([]Mount, error) { return nil, errNoMountinfo }

// ParseMounts reads the text of a mountinfo file: Linux only.
func ParseMounts([]byte) ([]Mount, error) { return nil, errNoMountinfo }
