package system

import (
	"github.com/tunebench/tunebench/internal/machine"

	"fmt"
	"strings"

	"github.com/tunebench/tunebench/internal/envinfo"
)

// DeviceForPath finds the block device holding path: the filesystem's
// device from the mount table, or, when that is an anonymous device number
// (btrfs and others report 0:N), the device named as the mount's source
// (/dev/...).
func DeviceForPath(path string) (machine.Device, *envinfo.FS, error) {
	fsys, err := envinfo.FSInfo(path)
	if err != nil {
		return machine.Device{}, nil, fmt.Errorf("%w: %v", machine.ErrNoDevice, err)
	}
	d, err := machine.FindDevice("/sys", fsys.Device)
	if err == nil {
		return d, fsys, nil
	}
	if strings.HasPrefix(fsys.Source, "/dev/") {
		if mm, ok := envinfo.DevNumber(fsys.Source); ok {
			if d2, err2 := machine.FindDevice("/sys", mm); err2 == nil {
				return d2, fsys, nil
			}
		}
	}
	return machine.Device{}, fsys, fmt.Errorf("%s is on %s (%s): %w", path, fsys.MountPoint, fsys.FSType, err)
}
