package layout

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// RAID builds an md software RAID array on the layout's devices (or on
// Members loop files of the layout's loop size each).
type RAID struct {
	Level   string `json:"level"`             // 0, 1, 4, 5, 6, 10
	Members int    `json:"members,omitempty"` // loop files to make (devices: their count)
	Chunk   int64  `json:"chunk,omitempty"`   // bytes; 0 = mdadm's default
}

// LVM builds a logical volume spanning the layout's devices (or Members
// loop files), striped over Stripes of them when Stripes > 1.
type LVM struct {
	Members    int   `json:"members,omitempty"`
	Stripes    int   `json:"stripes,omitempty"`
	StripeSize int64 `json:"stripe_size,omitempty"` // bytes; 0 = lvcreate's default
}

type rawRAID struct {
	Level   string `yaml:"level"`
	Members int    `yaml:"members"`
	Chunk   string `yaml:"chunk"`
}

type rawLVM struct {
	Members    int    `yaml:"members"`
	Stripes    int    `yaml:"stripes"`
	StripeSize string `yaml:"stripe_size"`
}

// minMembers is the fewest devices an md level takes.
var minMembers = map[string]int{"0": 2, "1": 2, "4": 3, "5": 3, "6": 4, "10": 2}

func fromRawVolume(l *Layout, raid *rawRAID, lvm *rawLVM) []string {
	var ps []string
	if raid != nil {
		l.RAID = &RAID{Level: strings.TrimPrefix(strings.ToLower(strings.TrimSpace(raid.Level)), "raid"), Members: raid.Members}
		if raid.Chunk != "" {
			n, err := ParseSize(raid.Chunk)
			if err != nil {
				ps = append(ps, "raid.chunk: "+err.Error())
			}
			l.RAID.Chunk = n
		}
	}
	if lvm != nil {
		l.LVM = &LVM{Members: lvm.Members, Stripes: lvm.Stripes}
		if lvm.StripeSize != "" {
			n, err := ParseSize(lvm.StripeSize)
			if err != nil {
				ps = append(ps, "lvm.stripe_size: "+err.Error())
			}
			l.LVM.StripeSize = n
		}
	}
	return ps
}

// memberCount is how many devices the layout is made on.
func (l *Layout) memberCount() int {
	switch {
	case len(l.Devices) > 0:
		return len(l.Devices)
	case l.RAID != nil && l.RAID.Members > 0:
		return l.RAID.Members
	case l.LVM != nil && l.LVM.Members > 0:
		return l.LVM.Members
	}
	return 1
}

// checkVolume validates the raid and lvm parts of a layout.
func checkVolume(l *Layout) []string {
	var ps []string
	if l.RAID != nil && l.LVM != nil {
		return []string{"raid and lvm both given: give one (LVM on md RAID is not a layout kind yet)"}
	}
	n := l.memberCount()
	if r := l.RAID; r != nil {
		min, ok := minMembers[r.Level]
		if !ok {
			ps = append(ps, fmt.Sprintf("raid.level %q: use one of 0, 1, 4, 5, 6, 10", r.Level))
		} else if n < min {
			ps = append(ps, fmt.Sprintf("raid level %s needs at least %d devices, the layout has %d (give raid.members with loop:, or more devices)", r.Level, min, n))
		}
		if len(l.Devices) > 0 && r.Members > 0 && r.Members != len(l.Devices) {
			ps = append(ps, fmt.Sprintf("raid.members %d but %d devices: leave members out with devices", r.Members, len(l.Devices)))
		}
		if r.Chunk != 0 && (r.Chunk < 4<<10 || r.Chunk&(r.Chunk-1) != 0) {
			ps = append(ps, "raid.chunk: use a power of two of at least 4KiB, e.g. 64KiB")
		}
		if l.Filesystem == "btrfs" {
			ps = append(ps, "btrfs makes its own RAID (mkfs: -d raid0 -m raid1 over several devices): leave raid out")
		}
	}
	if v := l.LVM; v != nil {
		if len(l.Devices) > 0 && v.Members > 0 && v.Members != len(l.Devices) {
			ps = append(ps, fmt.Sprintf("lvm.members %d but %d devices: leave members out with devices", v.Members, len(l.Devices)))
		}
		if v.Stripes < 0 || v.Stripes > n {
			ps = append(ps, fmt.Sprintf("lvm.stripes %d: between 1 and the %d devices", v.Stripes, n))
		}
		if v.StripeSize != 0 && (v.StripeSize < 4<<10 || v.StripeSize&(v.StripeSize-1) != 0) {
			ps = append(ps, "lvm.stripe_size: use a power of two of at least 4KiB, e.g. 64KiB")
		}
	}
	return ps
}

// volumeSupport says why this machine cannot build the layout's RAID or
// LVM volume (nil when it can): the kernel's md or device-mapper, and the
// tools.
func volumeSupport(l *Layout) error {
	switch {
	case l.RAID != nil:
		if _, err := os.Stat("/proc/mdstat"); err != nil {
			return errs.New(errs.KindEnvironment, "run it on a kernel with md (CONFIG_BLK_DEV_MD; `modprobe md_mod`), or use a plain or btrfs layout",
				"layout %s is a RAID layout, but this kernel offers no md software RAID (no /proc/mdstat)", l.Name)
		}
		if _, err := lookPath("mdadm"); err != nil {
			return errs.New(errs.KindEnvironment, "install it: apt-get install mdadm", "layout %s needs mdadm, which is not installed", l.Name)
		}
	case l.LVM != nil:
		if _, err := os.Stat("/dev/mapper/control"); err != nil {
			return errs.New(errs.KindEnvironment, "run it on a kernel with device-mapper (CONFIG_BLK_DEV_DM; `modprobe dm_mod`), or use a plain layout",
				"layout %s is an LVM layout, but this kernel offers no device-mapper (no /dev/mapper/control)", l.Name)
		}
		if _, err := lookPath("lvcreate"); err != nil {
			return errs.New(errs.KindEnvironment, "install it: apt-get install lvm2", "layout %s needs lvm2, which is not installed", l.Name)
		}
	}
	return nil
}

// volumeName is the md array's or volume group's name.
func volumeName(l *Layout) string { return "tunebench-" + l.Name }

// raid builds the md array on members and sets m.Device.
func (m *Mounted) raid(ctx context.Context, members []string) error {
	l, o := m.Layout, m.o
	md := "/dev/md/" + volumeName(l)
	args := []string{"mdadm", "--create", md, "--run", "--quiet", "--metadata=1.2", "--level=" + l.RAID.Level,
		"--raid-devices=" + strconv.Itoa(len(members))}
	if l.RAID.Chunk > 0 {
		args = append(args, "--chunk="+strconv.FormatInt(l.RAID.Chunk>>10, 10))
	}
	if l.RAID.Level == "1" || l.RAID.Level == "10" || l.RAID.Level == "4" || l.RAID.Level == "5" || l.RAID.Level == "6" {
		args = append(args, "--assume-clean") // no initial resync competing with the runs
	}
	args = append(args, members...)
	if err := m.note(func(r *record) { r.MD = md }); err != nil {
		return err
	}
	if _, err := o.Run.Run(ctx, args...); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "creating the md array of layout %s", l.Name)
	}
	m.push("stop "+md, func(ctx context.Context) error {
		if _, err := o.Run.Run(ctx, "mdadm", "--stop", md); err != nil {
			return err
		}
		_, err := o.Run.Run(ctx, append([]string{"mdadm", "--zero-superblock"}, members...)...)
		return err
	})
	m.Device = md
	return nil
}

// lvm builds the volume group and logical volume and sets m.Device.
func (m *Mounted) lvm(ctx context.Context, members []string) error {
	l, o := m.Layout, m.o
	vg := volumeName(l)
	if _, err := o.Run.Run(ctx, append([]string{"pvcreate", "-y", "-q"}, members...)...); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "pvcreate for layout %s", l.Name)
	}
	m.push("pvremove", func(ctx context.Context) error {
		_, err := o.Run.Run(ctx, append([]string{"pvremove", "-y", "-q"}, members...)...)
		return err
	})
	if err := m.note(func(r *record) { r.VG = vg }); err != nil {
		return err
	}
	if _, err := o.Run.Run(ctx, append([]string{"vgcreate", "-q", vg}, members...)...); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "vgcreate for layout %s", l.Name)
	}
	m.push("vgremove "+vg, func(ctx context.Context) error {
		_, err := o.Run.Run(ctx, "vgremove", "-y", "-q", vg)
		return err
	})
	args := []string{"lvcreate", "-y", "-q", "-n", "data", "-l", "100%FREE"}
	if s := l.LVM.Stripes; s > 1 {
		args = append(args, "-i", strconv.Itoa(s))
		if l.LVM.StripeSize > 0 {
			args = append(args, "-I", strconv.FormatInt(l.LVM.StripeSize>>10, 10)+"k")
		}
	}
	args = append(args, vg)
	if _, err := o.Run.Run(ctx, args...); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "lvcreate for layout %s", l.Name)
	}
	lv := "/dev/" + vg + "/data"
	m.push("lvremove "+lv, func(ctx context.Context) error {
		_, err := o.Run.Run(ctx, "lvremove", "-y", "-q", lv)
		return err
	})
	m.Device = lv
	return nil
}
