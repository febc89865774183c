// Package kernel varies Linux kernel settings as experiment dimensions:
// sysctl keys under /proc/sys, transparent huge pages, and the request
// queue settings of the block devices under a data directory. Every
// value is checked before anything changes, journaled with the process
// that holds it before it is written, read back, and restored when its
// holder ends; what a killed holder left is restored by the next
// tunebench command (RestoreLeftovers).
package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
)

// Class is what a key changes.
type Class int

const (
	Sysctl Class = iota // a file under /proc/sys (vm.dirty_ratio)
	THP                 // transparent huge pages (enabled, defrag)
	Queue               // a block device's request queue (queue.nr_requests)
)

// QueuePrefix starts the keys of block queue settings.
const QueuePrefix = "queue."

// QueueAttrs are the request-queue files a key may name (queue.NAME), in
// /sys/block/DEV/queue; where one is read-only on a device it is refused.
var QueueAttrs = []string{"nr_requests", "read_ahead_kb", "rotational", "wbt_lat_usec", "scheduler",
	"max_sectors_kb", "nomerges", "rq_affinity", "add_random", "iostats"}

// Key is a parsed kernel setting name.
type Key struct {
	Name  string // canonical (transparent_hugepage.enabled -> transparent_hugepage)
	Class Class
	Attr  string // THP: enabled or defrag; Queue: the queue file
}

var sysctlRe = regexp.MustCompile(`^[a-z0-9_]+(\.[A-Za-z0-9_:-]+)+$`)

// ParseKey reads a key's name; only its spelling is checked here
// (Machine.Check looks at the machine).
func ParseKey(name string) (Key, error) {
	n := strings.TrimSpace(name)
	switch {
	case n == "transparent_hugepage" || n == "transparent_hugepage.enabled":
		return Key{Name: "transparent_hugepage", Class: THP, Attr: "enabled"}, nil
	case n == "transparent_hugepage.defrag":
		return Key{Name: n, Class: THP, Attr: "defrag"}, nil
	case strings.HasPrefix(n, "transparent_hugepage."):
		return Key{}, errs.Usage("use transparent_hugepage (its enabled mode) or transparent_hugepage.defrag",
			"unknown transparent huge page setting %q", n)
	case strings.HasPrefix(n, QueuePrefix):
		attr := strings.TrimPrefix(n, QueuePrefix)
		for _, a := range QueueAttrs {
			if a == attr {
				return Key{Name: n, Class: Queue, Attr: attr}, nil
			}
		}
		hint := "queue settings: queue." + strings.Join(QueueAttrs, ", queue.")
		if s := closest(attr, QueueAttrs); s != "" {
			hint = "did you mean queue." + s + "?"
		}
		return Key{}, errs.Usage(hint, "unknown block queue setting %q", n)
	case sysctlRe.MatchString(n):
		return Key{Name: n, Class: Sysctl}, nil
	}
	return Key{}, errs.Usage("write a sysctl key as sysctl(8) does (vm.dirty_ratio), transparent_hugepage[.defrag], or queue.nr_requests",
		"%q is not a kernel setting name", name)
}

func closest(s string, list []string) string {
	best, bestD := "", 3
	for _, c := range list {
		if d := option.EditDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Machine is where the kernel's files are: Root "/" on the machine itself;
// tests point it at a copy.
type Machine struct {
	Root string
	// Euid is the effective user (nil: os.Geteuid).
	Euid func() int
}

// Local is this machine.
func Local() Machine { return Machine{Root: "/"} }

func (m Machine) path(parts ...string) string {
	root := m.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// Path is the file of a sysctl or THP key (queue keys have one per device:
// QueuePath).
func (m Machine) Path(k Key) string {
	if k.Class == THP {
		return m.path("sys/kernel/mm/transparent_hugepage", k.Attr)
	}
	return m.path("proc/sys", strings.ReplaceAll(k.Name, ".", "/"))
}

// QueuePath is the file of a queue key on device dev (a disk's name: vda,
// nvme0n1, loop3, dm-0, md0).
func (m Machine) QueuePath(k Key, dev string) string {
	return m.path("sys/block", dev, "queue", k.Attr)
}

// Supported says whether kernel settings can be changed here at all: on
// Linux, as root.
func (m Machine) Supported() error {
	if runtime.GOOS != "linux" {
		return errs.Usage("remove kernel: from the experiment, or run it on Linux",
			"kernel settings are Linux's; this is %s", runtime.GOOS)
	}
	euid := os.Geteuid
	if m.Euid != nil {
		euid = m.Euid
	}
	if euid() != 0 {
		return errs.Usage("run the experiment as root (sudo), or remove its kernel settings",
			"changing kernel settings needs root; this process runs as uid %d", euid())
	}
	return nil
}

// Check validates value for the file at path of key k without changing
// anything: the file exists and can be read and written, and the value has
// the shape of the current one. It returns the value as it will be
// written.
func Check(k Key, path, value string) (string, error) {
	value = strings.TrimSpace(value)
	if value == "" || strings.ContainsAny(value, "\x00\n\r") {
		return "", errs.Usage("give one value on one line", "%s: empty or multi-line value %q", k.Name, value)
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		return "", accessError(k, path, err, "read")
	}
	if err := writable(path); err != nil {
		return "", accessError(k, path, err, "write")
	}
	current := strings.TrimSpace(string(cur))
	if choices, _, ok := parseChoices(current); ok {
		for _, c := range choices {
			if c == value {
				return value, nil
			}
		}
		return "", errs.Usage("use one of: "+strings.Join(choices, ", "), "invalid value %q for %s", value, k.Name)
	}
	if nums := strings.Fields(current); len(nums) > 0 && allInts(nums) {
		got := strings.Fields(value)
		if !allInts(got) {
			return "", errs.Usage(fmt.Sprintf("%s holds integers (now %s)", k.Name, current), "invalid value %q for %s: not an integer", value, k.Name)
		}
		if len(got) != len(nums) {
			return "", errs.Usage(fmt.Sprintf("give %d integers separated by spaces, as it holds now: %s", len(nums), current),
				"invalid value %q for %s: %d field(s), it has %d", value, k.Name, len(got), len(nums))
		}
		if k.Attr == "rotational" && value != "0" && value != "1" {
			return "", errs.Usage("use 0 (not rotational: SSD) or 1 (rotational: HDD)", "invalid value %q for %s", value, k.Name)
		}
		return strings.Join(got, " "), nil
	}
	return value, nil
}

// accessError explains why a kernel file cannot be read or written.
func accessError(k Key, path string, err error, what string) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		hint := "check the name with sysctl -a"
		switch k.Class {
		case THP:
			hint = "this kernel has no transparent huge pages (CONFIG_TRANSPARENT_HUGEPAGE)"
		case Queue:
			hint = "this device's queue has no " + k.Attr
		}
		return errs.Usage(hint, "kernel setting %s does not exist on this machine (%s)", k.Name, path)
	case isReadOnlyFS(err):
		return errs.Usage("run tunebench on the host, or in a privileged container with /proc/sys and /sys mounted read-write",
			"kernel setting %s cannot be changed here: %s is on a read-only filesystem (a container?)", k.Name, path)
	case errors.Is(err, os.ErrPermission) && what == "read":
		return errs.Usage(k.Name+" can be written but not read (an action, not a setting): run it in a hook instead, e.g. before_run: \"echo 3 > /proc/sys/vm/drop_caches\"",
			"kernel setting %s cannot be read back", k.Name)
	case errors.Is(err, os.ErrPermission):
		return errs.Usage("it is read-only on this kernel (or this device); remove it from the experiment",
			"kernel setting %s cannot be written (%s)", k.Name, path)
	}
	return errs.Wrap(errs.KindEnvironment, err, "", "kernel setting %s: cannot %s %s", k.Name, what, path)
}

// writable checks the write bits and the filesystem (read-only /proc/sys
// in a container): root passes access(2) on a read-only sysfs file.
func writable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return os.ErrPermission
	}
	if err := canWrite(path); err != nil {
		return &os.PathError{Op: "access", Path: path, Err: err}
	}
	return nil
}

func allInts(fs []string) bool {
	for _, f := range fs {
		if _, err := strconv.ParseInt(f, 10, 64); err != nil {
			return false
		}
	}
	return true
}

// parseChoices reads "always [madvise] never" (THP, a queue's scheduler):
// the words and the selected one.
func parseChoices(s string) (all []string, selected string, ok bool) {
	if !strings.Contains(s, "[") {
		return nil, "", false
	}
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
			w = strings.Trim(w, "[]")
			selected = w
		}
		all = append(all, w)
	}
	return all, selected, selected != ""
}

// Read is a kernel file's value as Check and Apply compare it: the
// selected word of a choice file, integers with single spaces, or the
// trimmed text.
func Read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return normalize(string(b)), nil
}

func normalize(s string) string {
	s = strings.TrimSpace(s)
	if _, sel, ok := parseChoices(s); ok {
		return sel
	}
	return strings.Join(strings.Fields(s), " ")
}

// Setting is one kernel setting to make.
type Setting struct {
	Key   string
	Value string
}

// Target is one file a setting writes: the key, the file, the value.
type Target struct {
	Key   Key
	Path  string
	Dev   string // queue keys: the device
	Value string
	// Implied is the other key of a pair the kernel keeps together
	// (vm.dirty_bytes when vm.dirty_ratio is written: it becomes 0): it
	// is journaled, so that the pair is restored, but not written.
	Implied bool
}

// pairs are the sysctl keys the kernel keeps as one setting: writing one
// sets the other to 0 (Documentation/admin-guide/sysctl/vm.rst). Of a
// pair's two previous values, the one that is not 0 is the one to restore
// (writing 0 back is refused: the byte forms have a minimum).
var pairs = map[string]string{
	"vm.dirty_ratio": "vm.dirty_bytes", "vm.dirty_bytes": "vm.dirty_ratio",
	"vm.dirty_background_ratio": "vm.dirty_background_bytes", "vm.dirty_background_bytes": "vm.dirty_background_ratio",
}

// restoreSkips reports whether a journaled value needs no write to be
// restored: a pair's key whose previous value was 0 comes back when its
// partner is written.
func restoreSkips(e Entry) bool {
	_, paired := pairs[e.Key]
	return paired && e.Previous == "0"
}

// Resolve checks settings on the machine and turns them into the files to
// write: sysctl and THP keys once, queue keys on each of devs that has
// the file (an error when none has it writable). Every problem is
// reported, joined, before anything changes.
func (m Machine) Resolve(settings []Setting, devs []string) ([]Target, error) {
	var out []Target
	var problems []error
	given := map[string]bool{}
	for _, s := range settings {
		if k, err := ParseKey(s.Key); err == nil {
			given[k.Name] = true
		}
	}
	// A queue's scheduler first: switching it resets nr_requests to the
	// new scheduler's default.
	settings = append([]Setting(nil), settings...)
	sort.SliceStable(settings, func(i, j int) bool {
		return settings[i].Key == QueuePrefix+"scheduler" && settings[j].Key != QueuePrefix+"scheduler"
	})
	for _, s := range settings {
		k, err := ParseKey(s.Key)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if k.Class != Queue {
			v, err := Check(k, m.Path(k), s.Value)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			out = append(out, Target{Key: k, Path: m.Path(k), Value: v})
			if partner, ok := pairs[k.Name]; ok {
				if given[partner] {
					problems = append(problems, errs.Usage("give one of them: writing one sets the other to 0",
						"%s and %s are one setting of the kernel", k.Name, partner))
					continue
				}
				pk := Key{Name: partner, Class: Sysctl}
				if _, err := os.Stat(m.Path(pk)); err == nil {
					out = append(out, Target{Key: pk, Path: m.Path(pk), Value: "0", Implied: true})
				}
			}
			continue
		}
		if len(devs) == 0 {
			problems = append(problems, errs.Usage("block queue settings need the server's data directory on a block device on this machine (a managed server, not tmpfs)",
				"%s: no block device under the data directory", k.Name))
			continue
		}
		var found []Target
		var last error
		for _, d := range devs {
			p := m.QueuePath(k, d)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			v, err := Check(k, p, s.Value)
			if err != nil {
				last = err
				continue
			}
			found = append(found, Target{Key: k, Path: p, Dev: d, Value: v})
		}
		if len(found) == 0 {
			if last == nil {
				last = errs.Usage("remove it, or put the data directory on a device that has it",
					"%s: none of the devices under the data directory (%s) has it", k.Name, strings.Join(devs, ", "))
			}
			problems = append(problems, last)
			continue
		}
		out = append(out, found...)
	}
	if len(problems) > 0 {
		first := problems[0]
		if len(problems) == 1 {
			return nil, first
		}
		return nil, errs.Wrap(errs.KindOf(first), errors.Join(problems...), errs.HintOf(first), "%d kernel settings cannot be made", len(problems))
	}
	return out, nil
}
