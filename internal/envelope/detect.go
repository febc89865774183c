package envelope

import (
	"runtime"

	"github.com/tunebench/tunebench/internal/machine"

	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
)

// hierarchy is one mounted cgroup hierarchy: the v2 unified one, or a v1
// one with its controllers (cpu and cpuacct are often mounted together).
type hierarchy struct {
	version     int
	mount       string   // where it is mounted, e.g. /sys/fs/cgroup/memory
	controllers []string // v1: bound to it; v2: listed in the root's cgroup.controllers
	self        string   // this process's cgroup in it, e.g. "/" or "/user.slice"
	readOnly    bool     // mounted ro
	writable    bool     // this process may create groups in it
}

func (h *hierarchy) has(c string) bool { return slices.Contains(h.controllers, c) }

// system is what /proc/self/mountinfo and /proc/self/cgroup say about the
// cgroup hierarchies this process sees.
type system struct {
	v2 *hierarchy
	v1 map[string]*hierarchy // by controller; co-mounted controllers share one
}

// v1Controllers are the controller names a v1 mount's options may carry.
var v1Controllers = []string{"blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "hugetlb",
	"memory", "misc", "net_cls", "net_prio", "perf_event", "pids", "rdma"}

// readSystem reads the hierarchies this process sees from its mount table.
// writable decides whether a mount point may be written (access(2) W_OK in
// production).
func readSystem(mounts []machine.Mount, selfCgroup []byte, readFile func(string) ([]byte, error), writable func(string) bool) *system {
	sys := &system{v1: map[string]*hierarchy{}}
	self := parseSelfCgroup(selfCgroup)
	for _, m := range mounts {
		fstype, mount, root := m.FSType, m.MountPoint, m.Root
		readOnly := slices.Contains(strings.Split(m.Options, ","), "ro")
		switch fstype {
		case "cgroup2":
			if sys.v2 != nil && root != "/" {
				continue
			}
			h := &hierarchy{version: 2, mount: mount, self: self["0:"], readOnly: readOnly}
			if b, err := readFile(filepath.Join(mount, "cgroup.controllers")); err == nil {
				h.controllers = strings.Fields(string(b))
			}
			h.writable = !readOnly && writable(mount)
			sys.v2 = h
		case "cgroup":
			var ctrls []string
			for o := range strings.SplitSeq(m.SuperOptions, ",") {
				if slices.Contains(v1Controllers, o) {
					ctrls = append(ctrls, o)
				}
			}
			if len(ctrls) == 0 {
				continue // name=systemd and the like
			}
			h := &hierarchy{version: 1, mount: mount, controllers: ctrls, readOnly: readOnly}
			h.self = self[strings.Join(ctrls, ",")]
			h.writable = !readOnly && writable(mount)
			for _, c := range ctrls {
				if old, dup := sys.v1[c]; !dup || (!old.writable && h.writable) {
					sys.v1[c] = h
				}
			}
		}
	}
	return sys
}

// parseSelfCgroup reads /proc/self/cgroup ("4:memory:/a", "2:cpu,cpuacct:/",
// "0::/b") into controller list (sorted, comma-joined; "0:" for v2) -> path.
func parseSelfCgroup(b []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out["0:"] = parts[2]
			continue
		}
		c := strings.Split(parts[1], ",")
		slices.Sort(c)
		out[strings.Join(c, ",")] = parts[2]
	}
	return out
}

// Controller names an envelope needs: required ones for its limits, and
// the accounting ones joined when the hierarchy has them.
func (e *Envelope) required(version int) []string {
	var c []string
	if e.Memory > 0 {
		c = append(c, "memory")
	}
	if e.CPUs > 0 {
		c = append(c, "cpu")
	}
	if e.Cores > 0 || len(e.Cpuset) > 0 {
		c = append(c, "cpuset")
	}
	if len(e.IO) > 0 {
		c = append(c, map[int]string{1: "blkio", 2: "io"}[version])
	}
	return c
}

func accounting(version int) []string {
	if version == 1 {
		return []string{"memory", "cpuacct"}
	}
	return []string{"memory"}
}

// missing lists what keeps hierarchy version v from holding the
// controllers, one phrase each ("blkio (not mounted)").
func (s *system) missing(v int, ctrls []string) []string {
	var out []string
	if v == 2 {
		h := s.v2
		switch {
		case h == nil:
			return []string{"no cgroup2 filesystem is mounted"}
		case h.readOnly:
			return []string{h.mount + " is mounted read-only"}
		case !h.writable:
			return []string{h.mount + " is not writable by this user (run as root)"}
		}
		var lack []string
		for _, c := range ctrls {
			if !h.has(c) {
				lack = append(lack, c)
			}
		}
		if len(lack) > 0 {
			listed := strings.Join(h.controllers, " ")
			if listed == "" {
				listed = "none"
			}
			out = append(out, fmt.Sprintf("%s at %s (its cgroup.controllers lists %s; a controller bound to a v1 hierarchy is not offered on v2)",
				strings.Join(lack, ", "), h.mount, listed))
		}
		return out
	}
	for _, c := range ctrls {
		h := s.v1[c]
		switch {
		case h == nil:
			out = append(out, c+" (not mounted)")
		case h.readOnly:
			out = append(out, c+" ("+h.mount+" is mounted read-only)")
		case !h.writable:
			out = append(out, c+" ("+h.mount+" is not writable by this user: run as root)")
		}
	}
	return out
}

// choose picks the hierarchy version for e: the forced one, else v2 then
// v1 with the accounting controllers too, then v2 then v1 without them.
func (s *system) choose(e *Envelope) (int, error) {
	versions := []int{2, 1}
	switch e.Cgroup {
	case "v1":
		versions = []int{1}
	case "v2":
		versions = []int{2}
	}
	for _, full := range []bool{true, false} {
		for _, v := range versions {
			need := e.required(v)
			if full {
				need = append(need, accounting(v)...)
			}
			if len(s.missing(v, need)) == 0 && (v == 2 || len(s.controllersFor(e, v)) > 0) {
				return v, nil
			}
		}
	}
	var why []string
	for _, v := range versions {
		m := s.missing(v, e.required(v))
		if len(m) == 0 {
			// Only v1 without a single hierarchy to join gets here.
			m = s.missing(v, accounting(v))
		}
		why = append(why, fmt.Sprintf("cgroup v%d lacks %s", v, strings.Join(m, "; ")))
	}
	hint := "mount the missing v1 controllers (e.g. mount -t cgroup -o blkio cgroup /sys/fs/cgroup/blkio) or boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2; creating cgroups needs root"
	if e.Cgroup != "" {
		hint = "leave cgroup out (auto) to use the other hierarchy, or " + hint
	}
	return 0, errs.New(errs.KindEnvironment, hint, "no cgroup hierarchy can hold envelope %q: %s", e.Name, strings.Join(why, "; "))
}

// controllersFor lists the controllers a group of version v joins: the
// required ones and the accounting ones the hierarchy offers.
func (s *system) controllersFor(e *Envelope, v int) []string {
	c := e.required(v)
	for _, a := range accounting(v) {
		if !slices.Contains(c, a) && len(s.missing(v, []string{a})) == 0 {
			c = append(c, a)
		}
	}
	return c
}

// currentSystem reads this process's view of the cgroup hierarchies.
func currentSystem() (*system, error) {
	mounts, err := machine.Mounts()
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "envelopes need Linux with /proc mounted", "cannot read the mount table")
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	return readSystem(mounts, self, os.ReadFile, writable), nil
}

// Probe says which cgroup version Create would use for e on this machine
// ("v1" or "v2"), or why none can hold it. It writes nothing.
func Probe(e *Envelope) (string, error) {
	if runtime.GOOS != "linux" {
		return "", errs.New(errs.KindUsage, "run the experiment on a Linux machine, or remove matrix.envelope",
			"envelopes (cgroup CPU, memory and I/O limits) need Linux; this is %s", runtime.GOOS)
	}
	sys, err := currentSystem()
	if err != nil {
		return "", err
	}
	v, err := sys.choose(e)
	if err != nil {
		return "", err
	}
	return "v" + strconv.Itoa(v), nil
}
