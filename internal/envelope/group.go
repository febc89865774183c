package envelope

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
)

// ParentName is the directory under each hierarchy's root that holds the
// groups tunebench makes: /sys/fs/cgroup/memory/tunebench/NAME on v1,
// /sys/fs/cgroup/tunebench/NAME on v2.
const ParentName = "tunebench"

// CPUPeriod is the CFS bandwidth period every CPU quota is written with.
const CPUPeriod = 100 * time.Millisecond

// Group is an envelope made real: one cgroup directory per hierarchy it
// joins (v1: memory, cpu, cpuacct, cpuset, blkio as its limits need; v2:
// one directory). Its methods are safe for concurrent use.
type Group struct {
	mu      sync.Mutex
	env     *Envelope
	version int
	name    string
	dirs    []*groupDir
	cpuset  []int
	devices []Device
	files   map[string]string // control file -> the value read back after writing
	dirFile *os.File          // v2: the group's directory, for CLONE_INTO_CGROUP
	swap    bool              // swap is on (v1 then limits memory+swap too)
	closed  bool
}

// groupDir is the group's directory in one hierarchy.
type groupDir struct {
	h           *hierarchy
	controllers []string // the limits and accounting this directory carries
	parent      string   // <mount>/tunebench
	path        string   // <mount>/tunebench/<name>
	made        bool
}

// write is one control file to set, in order.
type write struct {
	dir      *groupDir
	file     string
	value    string
	optional bool // skipped when the kernel does not offer the file (swap accounting)
}

var seq atomic.Int64

// Create makes a uniquely named cgroup for e under the tunebench parent of
// the chosen hierarchy and writes its limits. A failure part way removes
// what was made. The caller Closes the group (also after an error of its
// own); Sweep removes groups a killed process left.
func Create(e *Envelope) (*Group, error) {
	sys, err := currentSystem()
	if err != nil {
		return nil, err
	}
	return create(e, sys, os.Getpid(), "/sys", nil)
}

// create is Create with the system, owner pid and sysfs root given; extra
// adds writes to the plan (tests make one fail).
func create(e *Envelope, sys *system, owner int, sysfs string, extra func(*Group) []write) (*Group, error) {
	v, err := sys.choose(e)
	if err != nil {
		return nil, err
	}
	g := &Group{env: e, version: v, name: fmt.Sprintf("%s-%d-%d", e.Name, owner, seq.Add(1)), files: map[string]string{}, swap: swapOn()}
	if err := g.resolve(sysfs); err != nil {
		return nil, err
	}
	ctrls := sys.controllersFor(e, v)
	if v == 2 {
		g.dirs = []*groupDir{{h: sys.v2, controllers: ctrls}}
	} else {
		byMount := map[string]*groupDir{}
		for _, c := range ctrls {
			h := sys.v1[c]
			d := byMount[h.mount]
			if d == nil {
				d = &groupDir{h: h}
				byMount[h.mount] = d
				g.dirs = append(g.dirs, d)
			}
			d.controllers = append(d.controllers, c)
		}
	}
	for _, d := range g.dirs {
		d.parent = filepath.Join(d.h.mount, ParentName)
		d.path = filepath.Join(d.parent, g.name)
	}
	plan := g.plan()
	if extra != nil {
		plan = append(plan, extra(g)...)
	}
	if err := g.make(plan); err != nil {
		g.remove()
		return nil, err
	}
	if v == 2 {
		f, err := os.Open(g.dirs[0].path)
		if err != nil {
			g.remove()
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "open cgroup %s", g.dirs[0].path)
		}
		g.dirFile = f
	}
	return g, nil
}

// resolve checks the envelope against this machine: cores, the quota and
// the devices.
func (g *Group) resolve(sysfs string) error {
	e := g.env
	allowed, err := allowedCPUs()
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "the cores this process may run on")
	}
	avail := len(allowed)
	switch {
	case e.Cores > avail:
		return errs.New(errs.KindUsage, fmt.Sprintf("give cores: %d or fewer", avail),
			"envelope %q: cores %d, but tunebench may run on %d (%s)", e.Name, e.Cores, avail, FormatCPUList(allowed))
	case e.Cores > 0:
		g.cpuset, avail = allowed[:e.Cores], e.Cores
	case len(e.Cpuset) > 0:
		for _, c := range e.Cpuset {
			if !slices.Contains(allowed, c) {
				return errs.New(errs.KindUsage, "list cores among "+FormatCPUList(allowed),
					"envelope %q: cpuset %s names core %d, which tunebench may not run on", e.Name, FormatCPUList(e.Cpuset), c)
			}
		}
		g.cpuset, avail = e.Cpuset, len(e.Cpuset)
	}
	if e.CPUs > float64(avail) {
		return errs.New(errs.KindUsage, fmt.Sprintf("give cpus: %d or less, or leave cpus out", avail),
			"envelope %q: a quota of %g CPUs limits nothing on the %d cores it may use", e.Name, e.CPUs, avail)
	}
	disks := map[string]string{}
	for _, l := range e.IO {
		d, err := resolveDevice(sysfs, l.Device, statDevice)
		if err != nil {
			return err
		}
		if other, dup := disks[d.Dev]; dup {
			return errs.New(errs.KindUsage, "give one io entry per disk",
				"envelope %q: io devices %q and %q are both on disk %s, and limits apply per disk", e.Name, other, l.Device, d.Disk)
		}
		disks[d.Dev] = l.Device
		d.ReadIOPS, d.WriteIOPS, d.ReadBPS, d.WriteBPS = l.ReadIOPS, l.WriteIOPS, l.ReadBPS, l.WriteBPS
		g.devices = append(g.devices, d)
	}
	return nil
}

// plan lists the control files to write, in order: on v1 the memory limit
// before the memory+swap one (which may not be below it) and cpuset.cpus
// and cpuset.mems before any task joins.
func (g *Group) plan() []write {
	e := g.env
	var w []write
	dir := func(c string) *groupDir {
		for _, d := range g.dirs {
			if slices.Contains(d.controllers, c) {
				return d
			}
		}
		return nil
	}
	quota := strconv.FormatInt(int64(math.Round(e.CPUs*float64(CPUPeriod.Microseconds()))), 10)
	period := strconv.FormatInt(CPUPeriod.Microseconds(), 10)
	if g.version == 1 {
		if e.Memory > 0 {
			d := dir("memory")
			w = append(w, write{dir: d, file: "memory.limit_in_bytes", value: strconv.FormatInt(e.Memory, 10)})
			// Memory+swap at the same limit keeps swap from widening the
			// envelope. Without swap there is nothing to keep out, and the
			// kernel counts limit hits in memory.failcnt only when the
			// memsw counter is not the one that trips first.
			if g.swap {
				w = append(w, write{dir: d, file: "memory.memsw.limit_in_bytes", value: strconv.FormatInt(e.Memory, 10), optional: true})
			}
		}
		if e.CPUs > 0 {
			d := dir("cpu")
			w = append(w, write{dir: d, file: "cpu.cfs_period_us", value: period}, write{dir: d, file: "cpu.cfs_quota_us", value: quota})
		}
		if len(g.cpuset) > 0 {
			d := dir("cpuset")
			w = append(w, write{dir: d, file: "cpuset.cpus", value: FormatCPUList(g.cpuset)},
				write{dir: d, file: "cpuset.mems", value: "<parent>"})
		}
		for _, dev := range g.devices {
			d := dir("blkio")
			for _, l := range []struct {
				file string
				v    uint64
			}{{"read_iops_device", dev.ReadIOPS}, {"write_iops_device", dev.WriteIOPS}, {"read_bps_device", dev.ReadBPS}, {"write_bps_device", dev.WriteBPS}} {
				if l.v > 0 {
					w = append(w, write{dir: d, file: "blkio.throttle." + l.file, value: fmt.Sprintf("%s %d", dev.Dev, l.v)})
				}
			}
		}
		return w
	}
	d := g.dirs[0]
	if e.Memory > 0 {
		w = append(w, write{dir: d, file: "memory.max", value: strconv.FormatInt(e.Memory, 10)},
			write{dir: d, file: "memory.swap.max", value: "0", optional: true})
	}
	if e.CPUs > 0 {
		w = append(w, write{dir: d, file: "cpu.max", value: quota + " " + period})
	}
	if len(g.cpuset) > 0 {
		w = append(w, write{dir: d, file: "cpuset.cpus", value: FormatCPUList(g.cpuset)})
	}
	for _, dev := range g.devices {
		v := dev.Dev
		for _, l := range []struct {
			key string
			v   uint64
		}{{"riops", dev.ReadIOPS}, {"wiops", dev.WriteIOPS}, {"rbps", dev.ReadBPS}, {"wbps", dev.WriteBPS}} {
			if l.v > 0 {
				v += fmt.Sprintf(" %s=%d", l.key, l.v)
			}
		}
		w = append(w, write{dir: d, file: "io.max", value: v})
	}
	return w
}

// make creates the directories and writes the plan.
func (g *Group) make(plan []write) error {
	for _, d := range g.dirs {
		if err := g.mkdir(d); err != nil {
			return err
		}
	}
	for _, w := range plan {
		path := filepath.Join(w.dir.path, w.file)
		if w.optional {
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		value := w.value
		if value == "<parent>" {
			b, err := os.ReadFile(filepath.Join(w.dir.parent, w.file))
			if err != nil {
				return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: read %s of the parent", g.env.Name, w.file)
			}
			value = strings.TrimSpace(string(b))
		}
		if err := writeFile(path, value); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, writeHint(w.file, err), "envelope %q: write %q to %s", g.env.Name, value, path)
		}
		if b, err := os.ReadFile(path); err == nil {
			g.files[w.file] = strings.TrimSpace(string(b))
		}
	}
	return nil
}

// swapOn says whether any swap area is active (/proc/swaps lists one).
func swapOn() bool {
	b, err := os.ReadFile("/proc/swaps")
	return err == nil && strings.Count(strings.TrimSpace(string(b)), "\n") > 0
}

// mkdir makes the group's directory in one hierarchy, with the tunebench
// parent it needs: on v2 the controllers enabled for the parent's children
// (and the root's), on v1 a cpuset parent given the root's cores and
// memory nodes (a new v1 cpuset starts empty and takes no tasks).
func (g *Group) mkdir(d *groupDir) error {
	for try := 0; ; try++ {
		if err := g.ensureParent(d); err != nil {
			return err
		}
		err := os.Mkdir(d.path, 0o755)
		if err == nil {
			d.made = true
			return nil
		}
		// A concurrent Close may remove an empty parent between the two steps.
		if !errors.Is(err, fs.ErrNotExist) || try >= 3 {
			return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: create cgroup %s", g.env.Name, d.path)
		}
	}
}

func (g *Group) ensureParent(d *groupDir) error {
	mount := d.h.mount
	if d.h.version == 2 {
		if err := enable(mount, d.controllers); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "a cgroup v2 root with processes in it cannot pass controllers down; run tunebench on the host (not in a container's cgroup namespace)",
				"envelope %q: enable %s for the cgroups under %s", g.env.Name, strings.Join(d.controllers, ", "), mount)
		}
	}
	if err := os.Mkdir(d.parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return errs.Wrap(errs.KindEnvironment, err, "creating cgroups needs root", "envelope %q: create %s", g.env.Name, d.parent)
	}
	if d.h.version == 2 {
		if err := enable(d.parent, d.controllers); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: enable %s under %s", g.env.Name, strings.Join(d.controllers, ", "), d.parent)
		}
		return nil
	}
	if slices.Contains(d.controllers, "cpuset") {
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(d.parent, f))
			if err == nil && strings.TrimSpace(string(b)) != "" {
				continue
			}
			root, err := os.ReadFile(filepath.Join(mount, f))
			if err == nil {
				err = writeFile(filepath.Join(d.parent, f), strings.TrimSpace(string(root)))
			}
			if err != nil {
				return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: give %s the root's %s", g.env.Name, d.parent, f)
			}
		}
	}
	return nil
}

// enable turns on the controllers for dir's children (cgroup v2).
func enable(dir string, ctrls []string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	on := strings.Fields(string(b))
	var add []string
	for _, c := range ctrls {
		if !slices.Contains(on, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(add, " "))
}

// writeFile writes one value to a control file in one write(2), as the
// kernel wants it.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeHint(file string, err error) string {
	switch {
	case strings.HasPrefix(file, "cpuset.") && errors.Is(err, syscall.EINVAL):
		return "name online cores only (see /sys/devices/system/cpu/online)"
	case (strings.HasPrefix(file, "blkio.") || file == "io.max") && errors.Is(err, syscall.ENODEV):
		return "the kernel limits whole disks only; name the disk"
	case strings.HasPrefix(file, "memory.") && errors.Is(err, syscall.EBUSY):
		return "the group already uses more memory than the new limit"
	}
	return ""
}

// Name is the group's directory name: the envelope's name, the owner's
// pid and a sequence number ("hdd-2g-4242-1").
func (g *Group) Name() string { return g.name }

// Version is the cgroup version in use: 1 or 2.
func (g *Group) Version() int { return g.version }

// Paths are the group's directories, one per hierarchy it joined.
func (g *Group) Paths() []string {
	out := make([]string, len(g.dirs))
	for i, d := range g.dirs {
		out[i] = d.path
	}
	return out
}

// Add moves a running process, with all its threads, into the group. Its
// children started later are born inside. Memory it charged before the
// move stays charged where it was: start a process with Command to
// account all of it.
func (g *Group) Add(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errs.New(errs.KindInternal, "", "envelope %q: Add after Close", g.env.Name)
	}
	for _, d := range g.dirs {
		if err := writeFile(filepath.Join(d.path, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: move process %d into %s", g.env.Name, pid, d.path)
		}
	}
	return nil
}

// Leave moves a process that Add moved in back to the cgroups this
// process was in when the group was made (their roots when that fails),
// with all its threads. Its memory charged inside stays charged there
// until the group is closed.
func (g *Group) Leave(pid int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range g.dirs {
		var err error
		for _, home := range []string{filepath.Join(d.h.mount, d.h.self), d.h.mount} {
			if err = writeFile(filepath.Join(home, "cgroup.procs"), strconv.Itoa(pid)); err == nil {
				break
			}
		}
		if err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: move process %d out of %s", g.env.Name, pid, d.path)
		}
	}
	return nil
}

// Shell is the shell Command wraps a v1 child in.
const Shell = "/bin/sh"

// Command prepares cmd (before its Start, Run or Output) so that the
// child is in the group before it runs its program, and so is everything
// it starts. On cgroup v2 the child is created inside the group (clone3
// with CLONE_INTO_CGROUP); nothing else changes. On cgroup v1 the child is
// /bin/sh, which writes its own pid into the group's cgroup.procs files and
// then execs the program with the same pid, arguments, environment,
// directory and credentials (argv[0] becomes cmd.Path); when cmd runs as
// another user (SysProcAttr.Credential) those files are given to that user
// so the child may write them. Call it once per cmd; the group stays open
// until the child has started.
func (g *Group) Command(cmd *exec.Cmd) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return errs.New(errs.KindInternal, "", "envelope %q: Command after Close", g.env.Name)
	case cmd.Process != nil:
		return errs.New(errs.KindInternal, "", "envelope %q: %s already started", g.env.Name, cmd.Path)
	case cmd.Err != nil:
		return cmd.Err
	}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		c := *cmd.SysProcAttr
		attr = &c
	}
	if g.version == 2 {
		if err := startInCgroup(attr, int(g.dirFile.Fd())); err != nil {
			return err
		}
		cmd.SysProcAttr = attr
		return nil
	}
	var script strings.Builder
	for _, d := range g.dirs {
		procs := filepath.Join(d.path, "cgroup.procs")
		if uid, gid, ok := childIDs(attr); ok && uid != 0 {
			if err := os.Chown(procs, uid, gid); err != nil {
				return errs.Wrap(errs.KindEnvironment, err, "", "envelope %q: give %s to uid %d", g.env.Name, procs, uid)
			}
		}
		fmt.Fprintf(&script, "echo $$ > %s || exit 126\n", shellQuote(procs))
	}
	script.WriteString(`exec "$0" "$@"`)
	cmd.Args = append([]string{"sh", "-c", script.String(), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = Shell
	cmd.SysProcAttr = attr
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Pids lists the processes in the group.
func (g *Group) Pids() ([]int, error) {
	return readPids(filepath.Join(g.dirs[0].path, "cgroup.procs"))
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Close moves the processes still in the group to the cgroups this
// process is in (in each hierarchy; its root when that fails) and removes
// the group's directories, and the tunebench parents when empty. It is
// safe to call twice and after a failed run; it does not stop processes.
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.dirFile != nil {
		g.dirFile.Close()
	}
	return g.remove()
}

// remove empties and removes the directories made, last first.
func (g *Group) remove() error {
	var problems []error
	for _, d := range slices.Backward(g.dirs) {
		if d.made {
			if err := evacuate(d.path, d.h); err != nil {
				problems = append(problems, err)
			}
			if err := rmdir(d.path); err != nil {
				problems = append(problems, err)
			} else {
				d.made = false
			}
		}
		os.Remove(d.parent) // fails while other groups are in it: fine
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindEnvironment, errors.Join(problems...), "run `tunebench` again later (Sweep removes empty leftovers) or rmdir the directory once its processes have ended",
			"envelope %q: remove cgroup %s", g.env.Name, g.name)
	}
	return nil
}

// evacuate moves every process in dir to this process's cgroup in h (or
// h's root), repeating while processes fork.
func evacuate(dir string, h *hierarchy) error {
	homes := []string{filepath.Join(h.mount, h.self), h.mount}
	for range 20 {
		pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			var err error
			for _, home := range homes {
				if err = writeFile(filepath.Join(home, "cgroup.procs"), strconv.Itoa(pid)); err == nil || errors.Is(err, syscall.ESRCH) {
					break
				}
			}
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("move process %d out of %s: %w", pid, dir, err)
			}
		}
	}
	return fmt.Errorf("processes keep appearing in %s", dir)
}

// rmdir removes a cgroup directory, waiting up to 2 s for exiting tasks.
func rmdir(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return &os.PathError{Op: "rmdir", Path: dir, Err: err}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var ownerRe = regexp.MustCompile(`-(\d+)-\d+$`)

// ownerOf returns the pid in a group's name (0 when it has none).
func ownerOf(name string) int {
	m := ownerRe.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// StopWait is how long Sweep waits for the processes it asked to end in a
// leftover group (a PostgreSQL server's shutdown checkpoint).
var StopWait = 60 * time.Second

// Sweep removes the groups under every hierarchy's tunebench parent whose
// owner process is gone (what an interrupted experiment left), after
// asking the processes still in them to end (SIGTERM), then the parents
// when empty. It returns the directories removed; groups whose processes
// do not end are named in the error, with their pids.
func Sweep() ([]string, error) {
	sys, err := currentSystem()
	if err != nil {
		return nil, err
	}
	return sweep(sys, proc.Exists)
}

func sweep(sys *system, alive func(int) bool) ([]string, error) {
	var mounts []*hierarchy
	if sys.v2 != nil {
		mounts = append(mounts, sys.v2)
	}
	for _, c := range v1Controllers {
		if h := sys.v1[c]; h != nil && !slices.Contains(mounts, h) {
			mounts = append(mounts, h)
		}
	}
	var removed, busy []string
	var problems []error
	for _, h := range mounts {
		parent := filepath.Join(h.mount, ParentName)
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if owner := ownerOf(e.Name()); owner > 0 && alive(owner) {
				continue
			}
			dir := filepath.Join(parent, e.Name())
			what := dir
			// A server (or fio) the killed run started in its envelope
			// outlives it: it is asked to end (a clean shutdown).
			if pids, _ := readPids(filepath.Join(dir, "cgroup.procs")); len(pids) > 0 {
				if left := proc.Terminate(context.Background(), pids, StopWait); len(left) > 0 {
					busy = append(busy, fmt.Sprintf("%s (pids %v)", dir, left))
					continue
				}
				what += fmt.Sprintf(" (stopped pids %v)", pids)
			}
			if err := rmdir(dir); err != nil {
				problems = append(problems, err)
				continue
			}
			removed = append(removed, what)
		}
		os.Remove(parent)
	}
	if len(busy) > 0 {
		problems = append(problems, errs.New(errs.KindEnvironment, "stop those processes (kill -9 PID) and run again",
			"%d leftover envelope groups still hold processes that did not end on SIGTERM: %s", len(busy), strings.Join(busy, ", ")))
	}
	return removed, errors.Join(problems...)
}
