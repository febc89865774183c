package layout

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
)

const goodFile = `name: fs-study
layouts:
  ext4-noatime:
    loop: 512MiB
    filesystem: ext4
    mkfs: -E stride=16 -O ^has_journal
    mount: [noatime, data=writeback]
    readahead: 128KiB
    scheduler: mq-deadline
  xfs-wal:
    loop: 320MiB
    filesystem: xfs
    mount: noatime,logbufs=8
    wal: {loop: 64MiB, filesystem: ext4}
  btrfs-nodatacow:
    loop: 256MiB
    filesystem: btrfs
    mount: [nodatacow]
`

func TestParseGood(t *testing.T) {
	f, err := Parse("s.yaml", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), " "); got != "btrfs-nodatacow ext4-noatime xfs-wal" {
		t.Fatalf("names %q", got)
	}
	e := f.Layouts["ext4-noatime"]
	if e.LoopSize != 512<<20 || e.Readahead != 128<<10 || strings.Join(e.Mount, ",") != "noatime,data=writeback" ||
		strings.Join(e.Mkfs, " ") != "-E stride=16 -O ^has_journal" || f.Lines["ext4-noatime"] != 3 {
		t.Errorf("ext4-noatime: %+v line %d", e, f.Lines["ext4-noatime"])
	}
	if w := f.Layouts["xfs-wal"].WAL; w == nil || w.Filesystem != "ext4" || w.LoopSize != 64<<20 || w.Name != "xfs-wal.wal" {
		t.Errorf("wal: %+v", w)
	}
}

// One clear message per problem, each with its line and the fix.
func TestParseProblems(t *testing.T) {
	cases := []struct{ layout, want string }{
		{`{loop: 1GiB, filesystem: zfs}`, `unknown filesystem "zfs": use one of ext2, ext3, ext4, xfs, btrfs`},
		{`{loop: 1GiB}`, `no filesystem: add filesystem: ext4`},
		{`{filesystem: ext4}`, `no device and no loop size: add loop: 2GiB`},
		{`{loop: 2 gigs, filesystem: ext4}`, `loop: "2 gigs" is not a size`},
		{`{loop: 100MiB, filesystem: xfs}`, `loop: 100.0 MiB is smaller than xfs can be made on (300.0 MiB)`},
		{`{loop: 1GiB, filesystem: ext4, mount: [noatme]}`, `mount option "noatme" is not one ext4 takes; did you mean noatime?`},
		{`{loop: 1GiB, filesystem: ext4, mount: [atime, noatime]}`, `mount options atime and noatime contradict each other`},
		{`{loop: 1GiB, filesystem: ext4, mount: [data=writebak]}`, `mount option data=writebak: use one of journal, ordered, writeback`},
		{`{loop: 1GiB, filesystem: ext2, mount: [data=journal]}`, `is not one ext2 takes`},
		{`{loop: 1GiB, filesystem: btrfs, mount: [nodatacow, compress]}`, `nodatacow and compress contradict each other`},
		{`{loop: 1GiB, filesystem: ext4, mkfs: -O metadata_csm}`, `unknown ext feature "metadata_csm"; did you mean metadata_csum?`},
		{`{loop: 1GiB, filesystem: ext4, mkfs: -E lazy_itable_int=0}`, `unknown extended option "lazy_itable_int=0"; did you mean lazy_itable_init?`},
		{`{loop: 1GiB, filesystem: ext4, mkfs: -F}`, `mkfs option -F: tunebench adds it itself`},
		{`{loop: 1GiB, filesystem: xfs, mkfs: -x 1}`, `mkfs option "-x" is not one mkfs.xfs takes`},
		{`{loop: 1GiB, filesystem: ext4, readahead: 1000}`, `use a multiple of 512 bytes`},
		{`{loop: 1GiB, filesystem: ext4, devices: [/dev/sdx]}`, `both devices and loop: give one`},
		{`{filesystem: ext4, devices: [sdx]}`, `device "sdx": give its absolute path`},
		{`{filesystem: xfs, devices: [/dev/sdx, /dev/sdy]}`, `only btrfs spans several devices itself`},
		{`{loop: 1GiB, filesystem: ext4, mountt: [noatime]}`, `field mountt not found`},
		{`{loop: 1GiB, filesystem: ext4, wal: {loop: 1GiB}}`, `wal: no filesystem`},
	}
	for _, c := range cases {
		_, err := Parse("s.yaml", []byte("layouts:\n  bad:\n    "+c.layout+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s.yaml:2: layout bad:") {
			t.Errorf("%s: got %v, want %q", c.layout, err, c.want)
		}
	}
	if _, err := Parse("s.yaml", []byte("name: x\n")); err == nil || !strings.Contains(err.Error(), "no layouts") {
		t.Errorf("no layouts: %v", err)
	}
}

// The dry-run plan is the commands provisioning and teardown run, in order.
func TestPlan(t *testing.T) {
	f, err := Parse("s.yaml", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Plan(context.Background(), f.Layouts["ext4-noatime"], Options{WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"losetup --find --show --direct-io=on /w/ext4-noatime.img",
		"wipefs -a /dev/loopN",
		"mkfs.ext4 -F -q -E stride=16,lazy_itable_init=0,lazy_journal_init=0 -O ^has_journal /dev/loopN",
		"mount -t ext4 -o noatime,data=writeback /dev/loopN /w/ext4-noatime.mnt",
		"blockdev --getra /dev/loopN",
		"blockdev --setra 256 /dev/loopN",
		"echo mq-deadline > /sys/block/loopN/queue/scheduler",
		"# teardown",
		"blockdev --setra PREVIOUS /dev/loopN",
		"umount /w/ext4-noatime.mnt",
		"losetup -d /dev/loopN",
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}
	cmds, _ = Plan(context.Background(), f.Layouts["xfs-wal"], Options{WorkDir: "/w"})
	if got := strings.Join(cmds, "\n"); !strings.Contains(got, "mkfs.xfs -f -q /dev/loopN") || !strings.Contains(got, "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/loopN") ||
		!strings.Contains(got, "/w/xfs-wal.wal.img") {
		t.Errorf("xfs with a WAL layout:\n%s", got)
	}
}

func TestSafeDevice(t *testing.T) {
	if err := SafeDevice("/dev/null"); err == nil || !strings.Contains(err.Error(), "not a block device") {
		t.Errorf("/dev/null: %v", err)
	}
	if err := SafeDevice("/nonexistent/dev"); err == nil || !strings.Contains(err.Error(), "check the device path") && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing device: %v", err)
	}
	if root, ok := rootDisk(); ok {
		if _, err := os.Stat("/dev/" + root); err == nil {
			if err := SafeDevice("/dev/" + root); err == nil {
				t.Errorf("the root disk /dev/%s passed", root)
			}
		}
	}
}

// needLoop skips unless loop devices can be made here.
func needLoop(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("provisioning needs root (losetup, mount)")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("losetup is not installed")
	}
}

// TestProvisionLoop makes an ext4 layout (readahead set) and an xfs one
// with its WAL on a second loop device, writes to them, tears them down,
// and checks nothing is left mounted or attached; a failure midway (a bad
// mount option the check cannot know) undoes what was made.
func TestProvisionLoop(t *testing.T) {
	needLoop(t)
	for _, fs := range []string{"mkfs.ext4", "mkfs.xfs"} {
		if _, err := lookPath(fs); err != nil {
			t.Skipf("%s is not installed", fs)
		}
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log []string
	o := Options{WorkDir: work, Log: func(f string, a ...any) { log = append(log, f) }}
	f, err := Parse("s.yaml", []byte(`layouts:
  e4: {loop: 64MiB, filesystem: ext4, mount: [noatime], readahead: 64KiB}
  x: {loop: 320MiB, filesystem: xfs, wal: {loop: 32MiB, filesystem: ext4}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"e4", "x"} {
		m, err := Provision(ctx, f.Layouts[name], o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { m.Teardown(context.Background()) }) // also when the test fails
		if err := os.WriteFile(filepath.Join(m.Dir, "probe"), []byte("x"), 0o600); err != nil {
			t.Errorf("%s: writing on the mounted layout: %v", name, err)
		}
		if !mounted(t, m.Dir) || !strings.HasPrefix(m.Device, "/dev/loop") {
			t.Errorf("%s: not mounted at %s (device %s)", name, m.Dir, m.Device)
		}
		if name == "e4" {
			out, _ := exec.Command("blockdev", "--getra", m.Device).Output()
			if strings.TrimSpace(string(out)) != "128" {
				t.Errorf("readahead %s sectors, want 128", out)
			}
			if !strings.Contains(m.MkfsCommand, "lazy_itable_init=0") {
				t.Errorf("mkfs %q: lazy initialisation left on", m.MkfsCommand)
			}
		}
		if name == "x" && (m.WAL == nil || !mounted(t, m.WAL.Dir)) {
			t.Errorf("the WAL layout is not mounted: %+v", m.WAL)
		}
		dev, backing := m.Device, m.Backing
		if !attached(t, dev, backing) {
			t.Errorf("%s: %s is not attached to %s before the teardown", name, dev, backing)
		}
		var walDir string
		if m.WAL != nil {
			walDir = m.WAL.Dir
		}
		if err := m.Teardown(ctx); err != nil {
			t.Fatalf("%s teardown: %v", name, err)
		}
		if mounted(t, m.Dir) || (walDir != "" && mounted(t, walDir)) {
			t.Errorf("%s: still mounted after teardown", name)
		}
		if attached(t, dev, backing) {
			t.Errorf("%s: %s still attached", name, dev)
		}
		if _, err := os.Stat(backing); err == nil {
			t.Errorf("%s: loop file %s left", name, backing)
		}
	}

	// Mounting fails (an option the kernel refuses): nothing is left.
	bad := &Layout{Name: "bad", LoopSize: 64 << 20, Filesystem: "ext4", Mount: []string{"commit=-5"}}
	if _, err := Provision(ctx, bad, o); err == nil {
		t.Fatal("mount with commit=-5 succeeded")
	}
	if _, err := os.Stat(filepath.Join(work, "bad.img")); err == nil || mounted(t, filepath.Join(work, "bad.mnt")) {
		t.Errorf("a failed provisioning left its loop file or mount")
	}
	if out, _ := exec.Command("losetup", "-j", filepath.Join(work, "bad.img")).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("a failed provisioning left a loop device: %s", out)
	}

	// A mounted device is refused.
	m, err := Provision(ctx, f.Layouts["e4"], o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Teardown(context.Background())
	if err := SafeDevice(m.Device); err == nil || !strings.Contains(err.Error(), "in use: mounted at") {
		t.Errorf("a mounted device: %v", err)
	}
	if _, err := Provision(ctx, &Layout{Name: "real", Devices: []string{m.Device}, Filesystem: "ext4"}, o); err == nil || !strings.Contains(errs.HintOf(err), "--allow-destroy") {
		t.Errorf("a device without --allow-destroy: %v", err)
	}
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// attached reports whether loop device dev is still attached to the
// layout's file backing: the device number alone may already be another
// test's (tests of other packages attach loop devices at the same time).
func attached(t *testing.T, dev, backing string) bool {
	t.Helper()
	var st syscall.Stat_t
	if syscall.Stat(dev, &st) != nil {
		return false
	}
	b, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/loop/backing_file")
	file := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
	return err == nil && file != "" && file == backing
}

// RAID and LVM layouts: their checks, their command plans, and a clear
// error where the kernel has no md or device-mapper.
func TestVolumes(t *testing.T) {
	cases := []struct{ layout, want string }{
		{`{loop: 1GiB, filesystem: ext4, raid: {level: 7, members: 2}}`, `raid.level "7": use one of 0, 1, 4, 5, 6, 10`},
		{`{loop: 1GiB, filesystem: ext4, raid: {level: 5, members: 2}}`, `raid level 5 needs at least 3 devices, the layout has 2`},
		{`{loop: 1GiB, filesystem: ext4, raid: {level: 0, members: 2, chunk: 3KiB}}`, `raid.chunk: use a power of two`},
		{`{loop: 1GiB, filesystem: ext4, raid: {level: 0, members: 2}, lvm: {members: 2}}`, `raid and lvm both given`},
		{`{loop: 1GiB, filesystem: btrfs, raid: {level: 0, members: 2}}`, `btrfs makes its own RAID`},
		{`{loop: 1GiB, filesystem: ext4, lvm: {members: 2, stripes: 3}}`, `lvm.stripes 3: between 1 and the 2 devices`},
		{`{filesystem: ext4, devices: [/dev/a, /dev/b], raid: {level: 0, members: 3}}`, `raid.members 3 but 2 devices`},
	}
	for _, c := range cases {
		_, err := Parse("s.yaml", []byte("layouts:\n  v:\n    "+c.layout+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.layout, err, c.want)
		}
	}
	f, err := Parse("s.yaml", []byte(`layouts:
  r0: {loop: 256MiB, filesystem: xfs, raid: {level: 0, members: 2, chunk: 64KiB}}
  lv: {loop: 256MiB, filesystem: ext4, lvm: {members: 3, stripes: 3, stripe_size: 128KiB}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := Plan(context.Background(), f.Layouts["r0"], Options{WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"losetup --find --show --direct-io=on /w/r0.0.img",
		"losetup --find --show --direct-io=on /w/r0.1.img",
		"mdadm --create /dev/md/tunebench-r0 --run --quiet --metadata=1.2 --level=0 --raid-devices=2 --chunk=64 /dev/loopN /dev/loopN",
		"wipefs -a /dev/md/tunebench-r0",
		"mkfs.xfs -f -q /dev/md/tunebench-r0",
		"mount -t xfs /dev/md/tunebench-r0 /w/r0.mnt",
		"# teardown",
		"umount /w/r0.mnt",
		"mdadm --stop /dev/md/tunebench-r0",
		"mdadm --zero-superblock /dev/loopN /dev/loopN",
		"losetup -d /dev/loopN",
		"losetup -d /dev/loopN",
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("raid plan:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}
	cmds, _ = Plan(context.Background(), f.Layouts["lv"], Options{WorkDir: "/w"})
	got := strings.Join(cmds, "\n")
	for _, w := range []string{"pvcreate -y -q /dev/loopN /dev/loopN /dev/loopN", "vgcreate -q tunebench-lv /dev/loopN /dev/loopN /dev/loopN",
		"lvcreate -y -q -n data -l 100%FREE -i 3 -I 128k tunebench-lv", "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/tunebench-lv/data",
		"lvremove -y -q /dev/tunebench-lv/data\nvgremove -y -q tunebench-lv\npvremove -y -q /dev/loopN /dev/loopN /dev/loopN"} {
		if !strings.Contains(got, w) {
			t.Errorf("lvm plan lacks %q:\n%s", w, got)
		}
	}
	// Where the kernel has no md (this machine kind), a clear error.
	if _, err := os.Stat("/proc/mdstat"); err != nil {
		err := Installed(f.Layouts["r0"])
		if err == nil || !strings.Contains(err.Error(), "this kernel offers no md software RAID") {
			t.Errorf("RAID without md: %v", err)
		}
	}
	if _, err := os.Stat("/dev/mapper/control"); err != nil {
		err := Installed(f.Layouts["lv"])
		if err == nil || !strings.Contains(err.Error(), "this kernel offers no device-mapper") {
			t.Errorf("LVM without device-mapper: %v", err)
		}
	}
}

// Sweep cleans up only what a dead process recorded; a file tunebench did
// not make is never touched, and a layout a live process uses is refused.
// A device the kernel holds is refused even where the mount table does not
// name it (btrfs).
func TestSweepAndClaims(t *testing.T) {
	needLoop(t)
	work := t.TempDir()
	ctx := context.Background()
	o := Options{WorkDir: work}
	// A user's files with a layout's names, and no record: untouched.
	for _, n := range []string{"x.img", "x.1.img"} {
		if err := os.WriteFile(filepath.Join(work, n), []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	x := &Layout{Name: "x", LoopSize: 64 << 20, Filesystem: "ext4"}
	if err := Sweep(ctx, x, o); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x.img", "x.1.img"} {
		if _, err := os.Stat(filepath.Join(work, n)); err != nil {
			t.Errorf("Sweep removed %s, which tunebench did not make", n)
		}
	}
	if _, err := Provision(ctx, x, o); err == nil || !strings.Contains(err.Error(), "making the loop file") {
		t.Errorf("provisioning over a user's file: %v", err)
	}

	// A layout made by a process that then died: swept.
	y := &Layout{Name: "y", LoopSize: 64 << 20, Filesystem: "ext4"}
	m, err := Provision(ctx, y, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Teardown(context.Background()) })
	dev := m.Device
	// A live other owner: refused.
	rewrite := func(pid int) {
		b, _ := os.ReadFile(statePath(work, "y"))
		var r record
		json.Unmarshal(b, &r)
		r.PID, r.Start = pid, 0
		b, _ = json.Marshal(r)
		os.WriteFile(statePath(work, "y"), b, 0o600)
	}
	rewrite(os.Getppid())
	if err := Sweep(ctx, y, o); err == nil || !strings.Contains(err.Error(), "in use by another tunebench process") {
		t.Errorf("a live owner's layout: %v", err)
	}
	cmd := exec.Command("true")
	cmd.Run()
	rewrite(cmd.Process.Pid)
	// What the dead owner started there outlives it (a server working in
	// its data directory, a shell holding a file open): Sweep ends them
	// before it unmounts.
	server := exec.Command("sleep", "60")
	server.Dir = m.Dir
	holder := exec.Command("sh", "-c", "exec 3>"+filepath.Join(m.Dir, "held")+"; exec sleep 60")
	for _, c := range []*exec.Cmd{server, holder} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		// Before the layout's teardown (cleanups run last first): ended
		// and reaped, so a failed sweep still leaves nothing mounted.
		t.Cleanup(func() { c.Process.Kill(); <-done })
	}
	// Both must be at work there before the sweep (a loaded machine starts
	// them slowly).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if u := proc.Under(m.Dir); slices.Contains(u, server.Process.Pid) && slices.Contains(u, holder.Process.Pid) {
			break
		}
	}
	var said []string
	o.Log = func(format string, a ...any) { said = append(said, fmt.Sprintf(format, a...)) }
	if err := Sweep(ctx, y, o); err != nil {
		t.Fatal(err)
	}
	o.Log = nil
	for _, c := range []*exec.Cmd{server, holder} {
		if proc.Alive(c.Process.Pid, 0) {
			t.Errorf("%v still runs after the sweep", c.Args)
		}
	}
	if !strings.Contains(strings.Join(said, "\n"), "process(es) an earlier run left working on "+m.Dir) {
		t.Errorf("the sweep did not say what it stopped:\n%s", strings.Join(said, "\n"))
	}
	if mounted(t, m.Dir) || attached(t, dev, m.Backing) {
		t.Errorf("a dead owner's layout is still mounted or attached")
	}
	if _, err := os.Stat(m.Backing); err == nil {
		t.Errorf("its loop file is left")
	}
	if _, err := os.Stat(statePath(work, "y")); err == nil {
		t.Errorf("its record is left")
	}

	// btrfs: mounted, yet its mount table entry names no device.
	if _, err := lookPath("mkfs.btrfs"); err == nil {
		b, err := Provision(ctx, &Layout{Name: "b", LoopSize: 256 << 20, Filesystem: "btrfs"}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Teardown(context.Background())
		if err := SafeDevice(b.Device); err == nil {
			t.Errorf("a device holding a mounted btrfs passed the safety check")
		}
	}
}

// An interrupt during provisioning lets the running command finish, then
// undoes everything: nothing is left mounted or attached.
func TestProvisionInterrupted(t *testing.T) {
	needLoop(t)
	work := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancelAfter{n: 3, cancel: cancel} // after losetup, wipefs and mkfs
	_, err := Provision(ctx, &Layout{Name: "i", LoopSize: 64 << 20, Filesystem: "ext4"}, Options{WorkDir: work, Run: r})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("interrupted provisioning: %v", err)
	}
	if out, _ := exec.Command("losetup", "-j", filepath.Join(work, "i.img")).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("a loop device is left: %s", out)
	}
	if mounted(t, filepath.Join(work, "i.mnt")) {
		t.Errorf("left mounted")
	}
	if entries, _ := os.ReadDir(work); len(entries) > 0 {
		t.Errorf("left in the work directory: %v", entries)
	}
}

// cancelAfter runs commands for real and cancels the context after n.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Run(ctx context.Context, args ...string) (string, error) {
	out, err := ExecRunner{}.Run(ctx, args...)
	if c.n--; c.n == 0 {
		c.cancel()
	}
	return out, err
}
