package experiment

import (
	"context"
	"fmt"
	"strings"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/target"
)

// The Lab's kernel settings: the machine-wide ones (sysctl, transparent
// huge pages) live in one session for the whole experiment and are
// restored by Finish; the queue settings of a target's devices are
// restored when the target closes (its layout may be torn down next).

// kernelSession is the Lab's session, made on first use.
func (l *Lab) kernelSession() *kernel.Session {
	if l.kernel == nil {
		l.kernel = &kernel.Session{Journal: kernel.Journal{Path: l.KernelJournal}, Holder: kernel.Self("tunebench experiment run " + l.Spec.Name)}
		if l.kernel.Journal.Path == "" {
			l.kernel.Journal.Path = kernel.DefaultJournal
		}
	}
	return l.kernel
}

// usesKernel reports whether the plan sets any kernel setting.
func (l *Lab) usesKernel(p *Plan) bool {
	if len(p.BaseKernel) > 0 {
		return true
	}
	for _, c := range p.Configs {
		if len(c.Kernel) > 0 {
			return true
		}
	}
	return false
}

// preflightKernel checks every kernel value of the plan that does not
// depend on a device before anything starts: root, Linux, the key exists
// and is writable, the value parses. Queue values are checked on the
// devices when their server is opened, before the first run on it.
func (l *Lab) preflightKernel(p *Plan) []error {
	if !l.usesKernel(p) {
		return nil
	}
	m := l.machine()
	if err := m.Supported(); err != nil {
		return []error{err}
	}
	var problems []error
	seen := map[string]bool{}
	check := func(s Setting, where string) {
		if seen[s.Name+"="+s.Value] {
			return
		}
		seen[s.Name+"="+s.Value] = true
		k, err := kernel.ParseKey(s.Name)
		if err == nil && k.Class != kernel.Queue {
			_, err = kernel.Check(k, m.Path(k), s.Value)
		}
		if err != nil {
			problems = append(problems, errs.Wrap(errs.KindOf(err), err, errs.HintOf(err), "%s", where))
		}
	}
	for _, s := range p.BaseKernel {
		check(s, "target.kernel."+s.Name)
	}
	for _, c := range p.Configs {
		for _, s := range c.Kernel {
			check(s, "matrix.kernel."+s.Name)
		}
	}
	return problems
}

func (l *Lab) machine() kernel.Machine {
	if l.KernelMachine.Root != "" {
		return l.KernelMachine
	}
	return kernel.Local()
}

// Finish restores the kernel settings the experiment changed.
func (l *Lab) Finish(context.Context) error {
	if l.kernel == nil {
		return nil
	}
	if err := l.kernel.Restore(nil); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "the next tunebench command tries again (the journal keeps them)", "restoring the kernel settings")
	}
	l.logf("kernel settings restored")
	return nil
}

func (l *Lab) logf(format string, a ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format+"\n", a...)
	}
}

// applyBaseMachine sets target.kernel's machine-wide values (before the
// server starts: vm.nr_hugepages must be reserved before a server with
// huge_pages=on starts).
func (lt *labTarget) applyBaseMachine() error {
	var machineWide []Setting
	for _, s := range lt.lab.Plan.BaseKernel {
		if k, err := kernel.ParseKey(s.Name); err == nil && k.Class != kernel.Queue {
			machineWide = append(machineWide, s)
		}
	}
	return lt.applyKernel(context.Background(), machineWide, "target.kernel")
}

// applyBaseQueue sets target.kernel's queue values on the devices of the
// target's data directory, and checks every queue value the plan gives
// this data directory before the first run.
func (lt *labTarget) applyBaseQueue(ctx context.Context, dataDir string) error {
	var queue []Setting
	for _, s := range lt.lab.Plan.BaseKernel {
		if k, err := kernel.ParseKey(s.Name); err == nil && k.Class == kernel.Queue {
			queue = append(queue, s)
		}
	}
	var later []Setting
	for _, c := range lt.lab.Plan.Configs {
		if c.DataDir != dataDir {
			continue
		}
		for _, s := range c.Kernel {
			if k, err := kernel.ParseKey(s.Name); err == nil && k.Class == kernel.Queue {
				later = append(later, s)
			}
		}
	}
	if len(queue)+len(later) == 0 {
		return nil
	}
	dir, ok := lt.t.ScratchDir("")
	if !ok || lt.t.Remote() {
		return errs.Usage("block queue settings need a server whose data directory is on this machine", "queue settings: the server's data directory is not known here")
	}
	devs, err := envinfo.BlockDevices(ctx, dir)
	if err != nil {
		return err
	}
	lt.devs = devs
	if _, err := lt.lab.machine().Resolve(kernelSettings(later), devs); err != nil {
		return errs.Wrap(errs.KindOf(err), err, errs.HintOf(err), "matrix.kernel on the devices under %s (%s)", dir, strings.Join(devs, ", "))
	}
	return lt.applyKernel(ctx, queue, "target.kernel")
}

func kernelSettings(ss []Setting) []kernel.Setting {
	out := make([]kernel.Setting, len(ss))
	for i, s := range ss {
		out[i] = kernel.Setting{Key: s.Name, Value: s.Value}
	}
	return out
}

// Kernel sets a block's kernel settings (matrix.kernel; not
// vm.nr_hugepages, which the parser keeps in target.kernel).
func (lt *labTarget) Kernel(ctx context.Context, settings []Setting) error {
	return lt.applyKernel(ctx, settings, "matrix.kernel")
}

func (lt *labTarget) applyKernel(_ context.Context, settings []Setting, where string) error {
	if len(settings) == 0 {
		return nil
	}
	targets, err := lt.lab.machine().Resolve(kernelSettings(settings), lt.devs)
	if err != nil {
		return errs.Wrap(errs.KindOf(err), err, errs.HintOf(err), "%s", where)
	}
	if err := lt.lab.kernelSession().Apply(targets); err != nil {
		return err
	}
	return nil
}

// checkHugePages verifies that the server got the huge pages the
// experiment reserved for it (huge_pages on or try, and vm.nr_hugepages
// set): some of them must be in use or reserved by a process.
func (lt *labTarget) checkHugePages() error {
	if lt.lab.kernel == nil {
		return nil
	}
	reserved := false
	for _, c := range lt.lab.kernel.Changes() {
		if c.Key == "vm.nr_hugepages" && c.Value != "0" {
			reserved = true
		}
	}
	if !reserved || hugePagesOff(lt.hugePagesSetting) {
		return nil
	}
	h, err := lt.lab.machine().ReadHugePages()
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "reading /proc/meminfo")
	}
	if h.InUse() == 0 {
		return errs.Usage("set huge_pages: on in the settings to make the server refuse to start without them, and make vm.nr_hugepages at least its shared memory (postgres -C shared_memory_size_in_huge_pages)",
			"the server did not take any of the %d huge pages reserved for it (huge_pages=%s)", h.Total, orDefault(lt.hugePagesSetting, "try"))
	}
	lt.lab.logf("huge pages: %d of %d in use or reserved by the server", h.InUse(), h.Total)
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// kernelRecord is what the environment records of the kernel settings in
// force for a run.
func (l *Lab) kernelRecord() []envinfo.KernelSetting {
	if l.kernel == nil {
		return nil
	}
	var out []envinfo.KernelSetting
	for _, c := range l.kernel.Changes() {
		out = append(out, envinfo.KernelSetting{Key: c.Key, Dev: c.Dev, Value: c.Value, Previous: c.Previous})
	}
	return out
}

// restoreQueue restores the queue settings made on the target's devices.
func (lt *labTarget) restoreQueue() error {
	if lt.lab.kernel == nil {
		return nil
	}
	return lt.lab.kernel.Restore(func(c kernel.Change) bool { return c.Dev != "" })
}

// HookVars tell a hook how to reach the benchmark database and where the
// server's files and layout are.
func (lt *labTarget) HookVars() map[string]string {
	out := map[string]string{}
	if ce, ok := lt.runTarget().(target.ClientEnver); ok {
		out = ce.ClientEnv()
	}
	if lt.layout != nil {
		out["TUNEBENCH_MOUNT"] = lt.layout.Dir
		if lt.layout.WAL != nil {
			out["TUNEBENCH_WAL_MOUNT"] = lt.layout.WAL.Dir
		}
	}
	if lt.lab.Store != nil {
		out["TUNEBENCH_RESULTS"] = lt.lab.Store.Path()
	}
	return out
}

// hugePagesOff reports whether a huge_pages value is off (PostgreSQL's
// boolean spellings of it included).
func hugePagesOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "false", "no", "0", "of", "f", "n", "fa", "fal", "fals":
		return true
	}
	return false
}
