package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Device is the block device whose /proc/diskstats line tunebench reads for
// a directory.
type Device struct {
	// Name is the kernel name, as in /proc/diskstats (vda, nvme0n1, dm-0, md0).
	Name string
	// Kind is "disk", "dm" (device mapper: LVM, LUKS...) or "md" (software RAID).
	Kind string
	// DMName is the device-mapper name (e.g. vg0-data) for Kind "dm".
	DMName string
	// Partition is the partition the filesystem is on when Name is its
	// whole disk (e.g. nvme0n1p2), else "".
	Partition string
	// MajMin is the major:minor of the filesystem's device.
	MajMin string
}

// Label describes the device for people, e.g. "nvme0n1 (partition
// nvme0n1p2)" or "dm-0 (vg0-data)".
func (d Device) Label() string {
	switch {
	case d.DMName != "":
		return d.Name + " (" + d.DMName + ")"
	case d.Partition != "":
		return d.Name + " (partition " + d.Partition + ")"
	}
	return d.Name
}

// ErrNoDevice is returned when a path's filesystem has no block device
// (tmpfs, overlay, network filesystems) or the device is not found.
var ErrNoDevice = errors.New("no block device")

// FindDevice maps a device number (major:minor, as in mountinfo) to the
// /proc/diskstats name to read, using sysRoot (normally /sys): a whole disk,
// dm or md device is used as it is; a partition is replaced by its whole
// disk. Devices are found through sysRoot/block/NAME/dev and, for
// partitions, sysRoot/block/NAME/PART/dev next to a "partition" file.
func FindDevice(sysRoot, majMin string) (Device, error) {
	if majMin == "" || strings.HasPrefix(majMin, "0:") {
		return Device{}, fmt.Errorf("%w (device number %q is not a disk's: a virtual, network or multi-device filesystem)", ErrNoDevice, majMin)
	}
	blockDir := filepath.Join(sysRoot, "block")
	ents, err := os.ReadDir(blockDir)
	if err != nil {
		return Device{}, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	readDev := func(p string) string {
		b, err := os.ReadFile(filepath.Join(p, "dev"))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	whole := func(name string) Device {
		d := Device{Name: name, Kind: "disk", MajMin: majMin}
		dir := filepath.Join(blockDir, name)
		if b, err := os.ReadFile(filepath.Join(dir, "dm", "name")); err == nil {
			d.Kind, d.DMName = "dm", strings.TrimSpace(string(b))
		} else if _, err := os.Stat(filepath.Join(dir, "md")); err == nil {
			d.Kind = "md"
		}
		return d
	}
	for _, e := range ents {
		if readDev(filepath.Join(blockDir, e.Name())) == majMin {
			return whole(e.Name()), nil
		}
	}
	for _, e := range ents {
		dir := filepath.Join(blockDir, e.Name())
		subs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, s := range subs {
			p := filepath.Join(dir, s.Name())
			if _, err := os.Stat(filepath.Join(p, "partition")); err != nil {
				continue
			}
			if readDev(p) == majMin {
				d := whole(e.Name())
				d.Partition = s.Name()
				return d, nil
			}
		}
	}
	return Device{}, fmt.Errorf("%w: no device %s under %s", ErrNoDevice, majMin, blockDir)
}
