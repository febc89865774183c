package layout

import (
	"github.com/tunebench/tunebench/internal/machine"

	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// SafeDevice refuses a device tunebench must not erase: anything that is
// not a block device, the device holding the root filesystem (or its
// disk), a mounted device or one with a mounted partition, a swap device,
// and a device another device is built on (md, dm, LVM: holders).
func SafeDevice(dev string) error {
	fi, err := os.Stat(dev)
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "check the device path (lsblk lists the block devices)", "device %s", dev)
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return errs.Usage("name a block device such as /dev/sdb, or use loop: SIZE for a loop file", "%s is not a block device", dev)
	}
	sys, err := sysDir(dev)
	if err != nil {
		return err
	}
	disk := sys
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		disk = filepath.Dir(sys)
	}
	if root, ok := rootDisk(); ok && (root == filepath.Base(disk) || root == filepath.Base(sys)) {
		return errs.Usage("name a spare device", "%s holds the root filesystem (or is its disk)", dev)
	}
	// The devices in use: mounted filesystems and swap.
	used, err := usedDevices()
	if err != nil {
		return err
	}
	if why, ok := used[filepath.Base(sys)]; ok {
		return errs.Usage("unmount it first, or name another device", "%s is in use: %s", dev, why)
	}
	if entries, err := os.ReadDir(disk); err == nil {
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(disk, e.Name(), "partition")); err != nil {
				continue
			}
			if why, ok := used[e.Name()]; ok && (disk == sys || e.Name() == filepath.Base(sys)) {
				return errs.Usage("unmount its partitions first, or name another device", "%s has a partition in use: /dev/%s %s", dev, e.Name(), why)
			}
		}
	}
	// The device and, for a whole disk, each partition: something built
	// on it (md, dm, LVM, LUKS), or held by the kernel (mounted, swap, an
	// array member) even where the mount table does not say so (btrfs).
	parts := []string{sys}
	if disk == sys {
		if entries, err := os.ReadDir(disk); err == nil {
			for _, e := range entries {
				if _, err := os.Stat(filepath.Join(disk, e.Name(), "partition")); err == nil {
					parts = append(parts, filepath.Join(disk, e.Name()))
				}
			}
		}
	}
	for _, p := range parts {
		name := filepath.Base(p)
		if h, _ := os.ReadDir(filepath.Join(p, "holders")); len(h) > 0 {
			return errs.Usage("stop what is built on it first (mdadm --stop, vgchange -an, cryptsetup close), or name another device",
				"%s: /dev/%s is part of /dev/%s (md RAID, device-mapper, LVM or an encrypted volume)", dev, name, h[0].Name())
		}
		if claimed("/dev/" + name) {
			return errs.Usage("unmount it or stop what uses it, or name another device",
				"%s: /dev/%s is in use (the kernel holds it: mounted, swap, or a member of an array)", dev, name)
		}
	}
	return nil
}

// usedDevices maps kernel device names (sda1, loop3, dm-0) to why they
// are in use: mounted where, or swap.
func usedDevices() (map[string]string, error) {
	used := map[string]string{}
	mounts, err := machine.Mounts()
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "reading the mount table")
	}
	for _, m := range mounts {
		if name := devName(m.Device()); name != "" {
			used[name] = "mounted at " + m.MountPoint
		}
	}
	if b, err := os.ReadFile("/proc/swaps"); err == nil {
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 {
				if p, err := filepath.EvalSymlinks(f[0]); err == nil {
					used[filepath.Base(p)] = "used as swap"
				}
			}
		}
	}
	return used, nil
}

// devName is the kernel name of a "major:minor" block device ("" when
// it is not one, e.g. a tmpfs's 0:52).
func devName(mm string) string {
	p, err := filepath.EvalSymlinks("/sys/dev/block/" + mm)
	if err != nil {
		return ""
	}
	return filepath.Base(p)
}

// rootDisk is the kernel name of the disk holding "/" (a partition's
// parent disk).
func rootDisk() (string, bool) {
	dev, _, err := statNumbers("/")
	if err != nil {
		return "", false
	}
	p, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", major(dev), minor(dev)))
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(p, "partition")); err == nil {
		p = filepath.Dir(p)
	}
	return filepath.Base(p), true
}
