package envelope

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// Device is one device's limits as applied: the device the spec named and
// the disk the kernel limits.
type Device struct {
	Given string `json:"given"`  // as the spec named it: /dev/sdb1, 8:17, /srv/pgdata
	Dev   string `json:"device"` // major:minor of the disk the limits are on
	Disk  string `json:"disk"`   // its kernel name: sdb, loop3, nvme0n1, dm-0
	// Partition is the partition the spec named (or the data lies on) when
	// the limits went on its whole disk: every partition of the disk
	// shares them.
	Partition string `json:"partition,omitempty"`
	ReadIOPS  uint64 `json:"read_iops,omitempty"`
	WriteIOPS uint64 `json:"write_iops,omitempty"`
	ReadBPS   uint64 `json:"read_bps,omitempty"`
	WriteBPS  uint64 `json:"write_bps,omitempty"`
}

var majMinRe = regexp.MustCompile(`^(\d+):(\d+)$`)

// resolveDevice finds the disk for a device spec under sysfs (/sys): a
// major:minor, a block device node, or any path (its filesystem's device).
// A partition resolves to its disk: the kernel accepts throttling limits
// for whole disks only (a partition's major:minor is refused with ENODEV).
//
// stat gives the major:minor of a path's device: the device node's own for
// a block device, else that of the filesystem holding the path.
func resolveDevice(sysfs, given string, stat func(string) (major, minor uint64, err error)) (Device, error) {
	d := Device{Given: given}
	fix := "name a block device (/dev/sdb), its major:minor (8:16) or a path on the filesystem to limit"
	var major, minor uint64
	if m := majMinRe.FindStringSubmatch(given); m != nil {
		major, _ = strconv.ParseUint(m[1], 10, 32)
		minor, _ = strconv.ParseUint(m[2], 10, 32)
	} else {
		var err error
		if major, minor, err = stat(given); err != nil {
			return d, errs.Wrap(errs.KindUsage, err, fix, "envelope io device %q", given)
		}
		if major == 0 {
			return d, errs.New(errs.KindUsage, "give the block device itself, e.g. /dev/sdb",
				"envelope io device %q: its filesystem has no block device of its own (tmpfs, overlay, btrfs and NFS have none)", given)
		}
	}
	dir := filepath.Join(sysfs, "dev", "block", fmt.Sprintf("%d:%d", major, minor))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return d, errs.New(errs.KindUsage, fix, "envelope io device %q: no block device %d:%d on this machine", given, major, minor)
	}
	d.Dev, d.Disk = fmt.Sprintf("%d:%d", major, minor), filepath.Base(real)
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		parent := filepath.Dir(real)
		b, err := os.ReadFile(filepath.Join(parent, "dev"))
		if err != nil {
			return d, errs.Wrap(errs.KindEnvironment, err, "", "envelope io device %q: the disk of partition %s", given, d.Disk)
		}
		d.Partition, d.Disk, d.Dev = d.Disk, filepath.Base(parent), strings.TrimSpace(string(b))
	}
	return d, nil
}
