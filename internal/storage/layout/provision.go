package layout

import (
	"github.com/tunebench/tunebench/internal/machine"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// Runner runs one command and returns its standard output.
type Runner interface {
	Run(ctx context.Context, args ...string) (string, error)
}

// ExecRunner runs commands for real.
type ExecRunner struct{}

func (ExecRunner) Run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// A fixed environment: the tools are in the system paths, messages in C.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), fmt.Errorf("%s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// DryRunner records the commands instead of running them, answering with
// placeholders (the loop device is /dev/loopN).
type DryRunner struct{ Commands []string }

func (d *DryRunner) Run(_ context.Context, args ...string) (string, error) {
	d.Commands = append(d.Commands, strings.Join(args, " "))
	switch {
	case args[0] == "losetup" && contains(args, "--show"):
		return "/dev/loopN\n", nil
	case args[0] == "blockdev" && args[1] == "--getra":
		return "PREVIOUS\n", nil
	}
	return "", nil
}

// Options say where and how to provision.
type Options struct {
	// WorkDir holds loop files and mount points.
	WorkDir string
	// AllowDestroy lets a layout make a filesystem on a real device.
	AllowDestroy bool
	// Run runs the commands (ExecRunner; a DryRunner prints the plan).
	Run Runner
	// Log receives a line per step (may be nil).
	Log func(format string, a ...any)
}

// Mounted is a provisioned layout: its filesystem mounted at Dir.
type Mounted struct {
	Layout *Layout
	Dir    string // the mount point
	Device string // the device the filesystem is on (/dev/loop3)
	// Backing is the (first) loop file ("" for a real device).
	Backing string
	// Members are the devices under a RAID or LVM layout (or the one
	// device of a plain one).
	Members []string
	// MkfsCommand is the mkfs command line as run.
	MkfsCommand string
	WAL         *Mounted
	// Previous readahead (sectors) and scheduler, restored at teardown.
	prevRA    string
	prevSched string
	undo      []undoStep
	o         Options
	rec       *record // what has been made, as written for Sweep
}

type undoStep struct {
	what string
	fn   func(ctx context.Context) error
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		o.Log(format, a...)
	}
}

func (o *Options) dry() bool {
	_, ok := o.Run.(*DryRunner)
	return ok
}

// Provision makes the layout: a loop file and device or the named device
// (checked: a block device, not the root's, not mounted, no mounted
// partition, not in use, and only with AllowDestroy), wipes its
// signatures, makes the filesystem (ext lazy initialisation off, so no
// background zeroing disturbs a run), mounts it, sets readahead and the
// scheduler, and the same for its WAL layout. On failure it undoes what it
// did.
func Provision(ctx context.Context, l *Layout, o Options) (m *Mounted, err error) {
	// A command that changes the machine (losetup, mkfs, mount, mdadm) is
	// never cut short: killed after the kernel acted but before its undo
	// is known, it would leave what it made behind. An interrupt is seen
	// between the steps instead, and undoes what was made.
	interrupt := ctx
	ctx = context.WithoutCancel(ctx)
	if o.Run == nil {
		o.Run = ExecRunner{}
	}
	if ps := Check(l); len(ps) > 0 {
		return nil, errs.Usage("fix the layout", "layout %s: %s", l.Name, strings.Join(ps, "; "))
	}
	if !o.dry() {
		if err := Installed(l); err != nil {
			return nil, err
		}
	}
	m = &Mounted{Layout: l, o: o}
	if !o.dry() {
		if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "making %s", o.WorkDir)
		}
		if _, err := os.Stat(statePath(o.WorkDir, l.Name)); err == nil {
			return nil, errs.Usage("let tunebench clean it up first (experiments do: layout.Sweep), or remove it by hand",
				"layout %s: %s exists: an earlier run left the layout made", l.Name, statePath(o.WorkDir, l.Name))
		}
	}
	if err := m.note(func(*record) {}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if terr := m.Teardown(context.WithoutCancel(ctx)); terr != nil {
				err = errors.Join(err, terr)
			}
			m = nil
		}
	}()
	if err := m.device(ctx); err != nil {
		return m, err
	}
	if err := interrupt.Err(); err != nil {
		return m, err
	}
	if _, err := o.Run.Run(ctx, "wipefs", "-a", m.Device); err != nil {
		return m, errs.Wrap(errs.KindEnvironment, err, "", "wiping the signatures on %s", m.Device)
	}
	mkfs := mkfsArgs(l, m.Device)
	m.MkfsCommand = strings.Join(mkfs, " ")
	o.logf("layout %s: %s", l.Name, m.MkfsCommand)
	t0 := time.Now()
	if _, err := o.Run.Run(ctx, mkfs...); err != nil {
		return m, errs.Wrap(errs.KindUsage, err, "check the layout's mkfs options", "making the filesystem of layout %s", l.Name)
	}
	if err := interrupt.Err(); err != nil {
		return m, err
	}
	m.Dir = filepath.Join(o.WorkDir, l.Name+".mnt")
	if !o.dry() {
		if err := os.MkdirAll(m.Dir, 0o755); err != nil {
			return m, errs.Wrap(errs.KindEnvironment, err, "", "making the mount point")
		}
	}
	m.push("remove the mount point "+m.Dir, func(context.Context) error {
		if o.dry() {
			return nil
		}
		return ignoreMissing(os.Remove(m.Dir))
	})
	args := []string{"mount", "-t", l.Filesystem}
	if len(l.Mount) > 0 {
		args = append(args, "-o", strings.Join(l.Mount, ","))
	}
	args = append(args, m.Device, m.Dir)
	if _, err := o.Run.Run(ctx, args...); err != nil {
		return m, errs.Wrap(errs.KindUsage, err, "check the layout's mount options", "mounting layout %s", l.Name)
	}
	m.push("unmount "+m.Dir, func(ctx context.Context) error { return unmount(ctx, o.Run, m.Dir) })
	if !o.dry() {
		// The managed server runs as an unprivileged user: it must enter.
		if err := os.Chmod(m.Dir, 0o755); err != nil {
			return m, errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", m.Dir)
		}
	}
	o.logf("layout %s: %s on %s mounted at %s in %.1fs", l.Name, l.Filesystem, m.Device, m.Dir, time.Since(t0).Seconds())
	if err := m.tune(ctx); err != nil {
		return m, err
	}
	if err := interrupt.Err(); err != nil {
		return m, err
	}
	if l.WAL != nil {
		w, err := Provision(interrupt, l.WAL, o)
		if err != nil {
			return m, err
		}
		m.WAL = w
		m.push("tear down the WAL layout", func(ctx context.Context) error { return w.Teardown(ctx) })
	}
	return m, nil
}

func (m *Mounted) push(what string, fn func(ctx context.Context) error) {
	m.undo = append(m.undo, undoStep{what, fn})
}

// Teardown undoes the provisioning in reverse: the WAL layout, readahead
// and scheduler, unmount, detach the loop device, remove the loop file
// (unless keep) and the mount point. It goes on after a failed step and
// returns every failure.
func (m *Mounted) Teardown(ctx context.Context) error {
	var problems []error
	for i := len(m.undo) - 1; i >= 0; i-- {
		if err := m.undo[i].fn(ctx); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", m.undo[i].what, err))
		}
	}
	m.undo = nil
	if len(problems) == 0 && m.rec != nil {
		// All undone: the record goes. Otherwise it stays for Sweep.
		if err := ignoreMissing(os.Remove(statePath(m.o.WorkDir, m.Layout.Name))); err != nil {
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindEnvironment, errors.Join(problems...),
			"see `findmnt` and `losetup -a` for what is left, and undo it by hand", "tearing down layout %s", m.Layout.Name)
	}
	return nil
}

// device sets m.Device: the layout's device after the safety checks, or
// new loop devices on sparse files; with raid or lvm, the md array or
// logical volume built on those members.
func (m *Mounted) device(ctx context.Context) error {
	l, o := m.Layout, m.o
	var members []string
	if len(l.Devices) > 0 {
		if !o.AllowDestroy && !o.dry() {
			return errs.Usage("give --allow-destroy to let tunebench erase it, or use loop: SIZE to try the layout on a loop file",
				"layout %s would make a filesystem on %s, erasing what it holds", l.Name, strings.Join(l.Devices, ", "))
		}
		for _, d := range l.Devices {
			if err := SafeDevice(d); err != nil {
				return err
			}
		}
		members = l.Devices
	} else {
		n := l.memberCount()
		for i := 0; i < n; i++ {
			name := l.Name + ".img"
			if n > 1 {
				name = fmt.Sprintf("%s.%d.img", l.Name, i)
			}
			dev, err := m.loop(ctx, filepath.Join(o.WorkDir, name))
			if err != nil {
				return err
			}
			members = append(members, dev)
		}
	}
	m.Members = members
	switch {
	case l.RAID != nil:
		return m.raid(ctx, members)
	case l.LVM != nil:
		return m.lvm(ctx, members)
	}
	m.Device = members[0]
	return nil
}

// loop makes a sparse loop file and attaches a loop device to it.
func (m *Mounted) loop(ctx context.Context, path string) (string, error) {
	l, o := m.Layout, m.o
	if m.Backing == "" {
		m.Backing = path
	}
	if err := m.note(func(r *record) { r.Files = append(r.Files, path) }); err != nil {
		return "", err
	}
	if !o.dry() {
		// A kept loop file is made again in place; any other must be new
		// (never erase a file that happens to have the name).
		flags := os.O_CREATE | os.O_WRONLY
		if !l.Keep {
			flags |= os.O_EXCL
		}
		f, err := os.OpenFile(path, flags, 0o600)
		if err != nil {
			return "", errs.Wrap(errs.KindEnvironment, err, "remove it, or give the layout another name", "making the loop file of layout %s", l.Name)
		}
		err = f.Truncate(l.LoopSize)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return "", errs.Wrap(errs.KindEnvironment, err, "", "sizing the loop file %s", path)
		}
	}
	m.push("remove the loop file "+path, func(context.Context) error {
		if o.dry() || l.Keep {
			return nil
		}
		return ignoreMissing(os.Remove(path))
	})
	// Direct I/O on the backing file: the loop device's data is not cached
	// twice (once above, once in the backing filesystem's page cache).
	out, err := o.Run.Run(ctx, "losetup", "--find", "--show", "--direct-io=on", path)
	if err != nil {
		o.logf("layout %s: losetup with direct I/O failed (%v); without it", l.Name, err)
		if out, err = o.Run.Run(ctx, "losetup", "--find", "--show", path); err != nil {
			return "", errs.Wrap(errs.KindEnvironment, err, "check that the loop module is loaded and /dev/loop-control exists", "attaching a loop device for layout %s", l.Name)
		}
	}
	dev := strings.TrimSpace(out)
	m.push("detach "+dev, func(ctx context.Context) error {
		_, err := o.Run.Run(ctx, "losetup", "-d", dev)
		return err
	})
	return dev, nil
}

// mkfsArgs is the mkfs command: forced and quiet, and for ext the lazy
// initialisation off (merged into the layout's own -E).
func mkfsArgs(l *Layout, dev string) []string {
	args := []string{Filesystems[l.Filesystem]}
	var extra []string
	for _, a := range l.Mkfs { // -Estride=16 is -E stride=16
		if len(a) > 2 && (strings.HasPrefix(a, "-E") || strings.HasPrefix(a, "-O")) && (l.Filesystem == "ext2" || l.Filesystem == "ext3" || l.Filesystem == "ext4") {
			extra = append(extra, a[:2], a[2:])
			continue
		}
		extra = append(extra, a)
	}
	switch l.Filesystem {
	case "ext2", "ext3", "ext4":
		args = append(args, "-F", "-q")
		lazy := "lazy_itable_init=0"
		if l.Filesystem != "ext2" {
			lazy += ",lazy_journal_init=0"
		}
		merged := false
		for i := 0; i+1 < len(extra); i++ {
			if extra[i] == "-E" {
				if !strings.Contains(extra[i+1], "lazy_") {
					extra[i+1] += "," + lazy
				}
				merged = true
			}
		}
		if !merged {
			args = append(args, "-E", lazy)
		}
	case "xfs", "btrfs":
		args = append(args, "-f", "-q")
	}
	args = append(args, extra...)
	if l.Filesystem == "btrfs" && len(l.Devices) > 1 {
		return append(args, l.Devices...)
	}
	return append(args, dev)
}

// tune sets readahead and the scheduler, remembering the device's own.
func (m *Mounted) tune(ctx context.Context) error {
	l, o := m.Layout, m.o
	if l.Readahead > 0 {
		out, err := o.Run.Run(ctx, "blockdev", "--getra", m.Device)
		if err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "reading the readahead of %s", m.Device)
		}
		m.prevRA = strings.TrimSpace(out)
		if _, err := o.Run.Run(ctx, "blockdev", "--setra", strconv.FormatInt(l.Readahead/512, 10), m.Device); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "setting the readahead of %s", m.Device)
		}
		dev, prev := m.Device, m.prevRA
		m.push("restore the readahead of "+dev, func(ctx context.Context) error {
			_, err := o.Run.Run(ctx, "blockdev", "--setra", prev, dev)
			return err
		})
	}
	if l.Scheduler != "" {
		// An md array or a logical volume has no scheduler of its own:
		// it goes on the devices under it.
		devs := []string{m.Device}
		if l.RAID != nil || l.LVM != nil {
			devs = m.Members
		}
		for _, d := range devs {
			if err := m.setScheduler(ctx, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// setScheduler selects the layout's scheduler on dev, remembering its own.
func (m *Mounted) setScheduler(ctx context.Context, dev string) error {
	l, o := m.Layout, m.o
	path, err := schedulerPath(dev)
	if o.dry() {
		path, err = "/sys/block/"+filepath.Base(dev)+"/queue/scheduler", nil
	}
	if err != nil {
		return err
	}
	if o.dry() {
		o.Run.Run(ctx, "echo", l.Scheduler, ">", path)
		return nil
	}
	cur, avail, err := readScheduler(path)
	if err != nil {
		return err
	}
	if !contains(avail, l.Scheduler) {
		return errs.Usage("use one of "+strings.Join(avail, ", ")+" (or load the scheduler's module)",
			"layout %s: scheduler %s is not available for %s", l.Name, l.Scheduler, dev)
	}
	m.prevSched = cur
	if err := os.WriteFile(path, []byte(l.Scheduler), 0); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "setting the scheduler of %s", dev)
	}
	m.push("restore the scheduler of "+dev, func(context.Context) error {
		return os.WriteFile(path, []byte(cur), 0)
	})
	return nil
}

// schedulerPath is the scheduler file of a device's disk (a partition's
// parent).
func schedulerPath(dev string) (string, error) {
	sys, err := sysDir(dev)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		sys = filepath.Dir(sys)
	}
	p := filepath.Join(sys, "queue", "scheduler")
	if _, err := os.Stat(p); err != nil {
		return "", errs.Wrap(errs.KindEnvironment, err, "", "%s has no I/O scheduler to set", dev)
	}
	return p, nil
}

// readScheduler reads "none [mq-deadline] kyber": the current one and all.
func readScheduler(path string) (string, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, errs.Wrap(errs.KindEnvironment, err, "", "reading %s", path)
	}
	var cur string
	var all []string
	for _, w := range strings.Fields(string(b)) {
		if strings.HasPrefix(w, "[") {
			w = strings.Trim(w, "[]")
			cur = w
		}
		all = append(all, w)
	}
	return cur, all, nil
}

// sysDir is a block device's directory in /sys.
func sysDir(dev string) (string, error) {
	_, rdev, err := statNumbers(dev)
	if err != nil {
		return "", errs.Wrap(errs.KindUsage, err, "check the path", "device %s", dev)
	}
	link := fmt.Sprintf("/sys/dev/block/%d:%d", major(rdev), minor(rdev))
	p, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", errs.Wrap(errs.KindEnvironment, err, "", "finding %s in /sys", dev)
	}
	return p, nil
}

func major(d uint64) uint64 { return (d >> 8) & 0xfff }
func minor(d uint64) uint64 { return (d & 0xff) | ((d >> 12) & 0xfff00) }

// unmount unmounts dir, waiting for a busy filesystem to be let go.
func unmount(ctx context.Context, r Runner, dir string) error {
	var err error
	for i := 0; i < 20; i++ {
		if _, err = r.Run(ctx, "umount", dir); err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "busy") {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Plan is the list of commands provisioning and tearing down l would run,
// for --dry-run: nothing is touched.
func Plan(ctx context.Context, l *Layout, o Options) ([]string, error) {
	d := &DryRunner{}
	o.Run = d
	m, err := Provision(ctx, l, o)
	if err != nil {
		return d.Commands, err
	}
	d.Commands = append(d.Commands, "# teardown")
	err = m.Teardown(ctx)
	return d.Commands, err
}

// isMountPoint reports whether dir is a mount point (in this process's
// mount table; a directory whose name holds a space too).
func isMountPoint(dir string) bool {
	ok, _ := machine.IsMountPoint(filepath.Clean(dir))
	return ok
}
