// Package envelope runs processes inside a hardware envelope: a cgroup with
// a memory limit that counts the page cache, a CPU limit (a quota in CPUs
// and/or a set of cores) and I/O limits per disk (IOPS and bytes per
// second). It uses cgroup v2 where the unified hierarchy offers the needed
// controllers and cgroup v1 otherwise, and says what is missing when
// neither can hold an envelope.
//
// The flow: Parse a Spec (strings, as an experiment file or a flag gives
// them) into an Envelope; Create a Group from it (devices are resolved to
// their disk's major:minor then, so a loop device made by a storage layout
// can be named before it exists); start processes in it with Command (or
// move one with Add); read Usage while it runs; store Describe's Record
// with the run; Close it. Sweep removes the groups an interrupted process
// left. docs/envelopes.md describes every limit and what is recorded.
package envelope

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
)

// Spec is an envelope as written in an experiment file or given on the
// command line: every value a string (YAML numbers decode into them too),
// checked by Parse. An empty value means no limit of that kind.
type Spec struct {
	// Name identifies the envelope in records and in the cgroup's name:
	// letters, digits, '_' and '-'. Empty: "envelope".
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Cgroup chooses the hierarchy: "" or "auto" (v2 when it has the
	// controllers, else v1), "v1" or "v2".
	Cgroup string `yaml:"cgroup,omitempty" json:"cgroup,omitempty"`
	// Memory is the memory limit including the page cache: "512MiB", "2GB"
	// (binary units: MB and MiB both mean 2^20 bytes) or bytes.
	Memory string `yaml:"memory,omitempty" json:"memory,omitempty"`
	// CPUs is a CPU quota in CPUs: "1.5" is 150 ms of CPU time per 100 ms.
	CPUs string `yaml:"cpus,omitempty" json:"cpus,omitempty"`
	// Cores pins to that many cores: the first N this process may run on.
	Cores string `yaml:"cores,omitempty" json:"cores,omitempty"`
	// Cpuset pins to the listed cores: "0-3,6". Not together with Cores.
	Cpuset string `yaml:"cpuset,omitempty" json:"cpuset,omitempty"`
	// IO limits I/O per device.
	IO []IOSpec `yaml:"io,omitempty" json:"io,omitempty"`
}

// IOSpec is one device's I/O limits. At least one limit is given.
type IOSpec struct {
	// Device is a block device (/dev/sdb, /dev/loop3), "major:minor", or
	// any other path: the device of the filesystem it is on. A partition
	// stands for its whole disk (the kernel limits disks, not partitions).
	Device    string `yaml:"device" json:"device"`
	ReadIOPS  string `yaml:"read_iops,omitempty" json:"read_iops,omitempty"`
	WriteIOPS string `yaml:"write_iops,omitempty" json:"write_iops,omitempty"`
	// ReadBPS and WriteBPS are bytes per second: "100MiB", "40MB/s".
	ReadBPS  string `yaml:"read_bps,omitempty" json:"read_bps,omitempty"`
	WriteBPS string `yaml:"write_bps,omitempty" json:"write_bps,omitempty"`
}

// Envelope is a checked Spec. Zero fields mean no limit of that kind; the
// zero Envelope limits nothing but still accounts memory and CPU.
type Envelope struct {
	Name   string    `json:"name"`
	Cgroup string    `json:"cgroup,omitempty"` // "", "v1" or "v2"
	Memory int64     `json:"memory_bytes,omitempty"`
	CPUs   float64   `json:"cpus,omitempty"`
	Cores  int       `json:"cores,omitempty"`
	Cpuset []int     `json:"cpuset,omitempty"`
	IO     []IOLimit `json:"io,omitempty"`
}

// IOLimit is one device's limits; zero means unlimited.
type IOLimit struct {
	Device    string `json:"device"`
	ReadIOPS  uint64 `json:"read_iops,omitempty"`
	WriteIOPS uint64 `json:"write_iops,omitempty"`
	ReadBPS   uint64 `json:"read_bps,omitempty"`
	WriteBPS  uint64 `json:"write_bps,omitempty"`
}

// Limits below these are refused: a smaller memory limit kills any server
// at start, and the kernel's smallest CFS quota is 1 ms per 100 ms period.
const (
	MinMemory = 8 << 20
	MinCPUs   = 0.01
)

// Problem is one bad value of a Spec, with the fix.
type Problem struct {
	Field string // e.g. "memory", "io[1].read_iops"
	Value string
	What  string // what is wrong
	Fix   string // what to write instead
}

func (p Problem) String() string {
	return fmt.Sprintf("%s %q: %s; %s", p.Field, p.Value, p.What, p.Fix)
}

// ParseError lists every bad value of one Spec. Parse returns it wrapped
// as a usage error; errors.As finds it (an experiment file can point at
// each field's line).
type ParseError struct {
	Name     string
	Problems []Problem
}

func (e *ParseError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("envelope %q: %s", e.Name, strings.Join(lines, "\n  "))
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// Parse checks a Spec and returns the Envelope, or an error listing each
// bad value with its fix. It touches nothing: devices, core numbers and the
// cgroup hierarchy are checked by Create (and Probe) on the machine.
func Parse(s Spec) (*Envelope, error) {
	e := &Envelope{Name: strings.TrimSpace(s.Name)}
	var ps []Problem
	bad := func(field, value, what, fix string) {
		ps = append(ps, Problem{Field: field, Value: value, What: what, Fix: fix})
	}
	if e.Name == "" {
		e.Name = "envelope"
	} else if !nameRe.MatchString(e.Name) {
		bad("name", s.Name, "not a name", "use up to 40 letters, digits, '_' or '-', e.g. hdd-2g")
	}
	switch c := strings.ToLower(strings.TrimSpace(s.Cgroup)); c {
	case "", "auto":
	case "v1", "v2":
		e.Cgroup = c
	case "1", "2":
		e.Cgroup = "v" + c
	default:
		bad("cgroup", s.Cgroup, "not a cgroup version", "write auto, v1 or v2")
	}
	if v := strings.TrimSpace(s.Memory); v != "" {
		n, err := ParseSize(v)
		switch {
		case err != nil:
			bad("memory", s.Memory, "not a size", "write e.g. 512MiB or 2GiB (binary units: 2GB is 2GiB)")
		case n < MinMemory:
			bad("memory", s.Memory, "below the smallest envelope of "+human.Bytes(MinMemory), "give at least 8MiB, or leave memory out for no limit")
		default:
			e.Memory = n
		}
	}
	if v := strings.TrimSpace(s.CPUs); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			bad("cpus", s.CPUs, "not a number of CPUs", "write a quota in CPUs, e.g. 0.5, 1 or 1.5")
		case f < MinCPUs:
			bad("cpus", s.CPUs, "below the smallest quota of 0.01 CPUs", "give at least 0.01, or leave cpus out for no quota")
		default:
			e.CPUs = f
		}
	}
	cores, cpuset := strings.TrimSpace(s.Cores), strings.TrimSpace(s.Cpuset)
	if cores != "" && cpuset != "" {
		bad("cores", s.Cores, "given together with cpuset "+strconv.Quote(s.Cpuset), "give a count (cores: 2) or a list (cpuset: 0-1), not both")
	} else if cores != "" {
		n, err := strconv.Atoi(cores)
		if err != nil || n < 1 {
			bad("cores", s.Cores, "not a count of cores", "write a whole number of cores, e.g. 2 (for a list of cores use cpuset: 0-1,4)")
		} else {
			e.Cores = n
		}
	} else if cpuset != "" {
		list, err := ParseCPUList(cpuset)
		if err != nil {
			bad("cpuset", s.Cpuset, err.Error(), "write core numbers and ranges, e.g. 0-3,6")
		} else {
			e.Cpuset = list
		}
	}
	seen := map[string]int{}
	for i, io := range s.IO {
		field := func(f string) string { return fmt.Sprintf("io[%d].%s", i, f) }
		l := IOLimit{Device: strings.TrimSpace(io.Device)}
		if l.Device == "" {
			bad(field("device"), io.Device, "no device", "name a block device (/dev/sdb), major:minor (8:16) or a path on the filesystem to limit")
		} else if j, dup := seen[l.Device]; dup {
			bad(field("device"), io.Device, fmt.Sprintf("also in io[%d]", j), "give each device's limits in one entry")
		} else {
			seen[l.Device] = i
		}
		iops := func(name, v string, dst *uint64) {
			if v = strings.TrimSpace(v); v == "" {
				return
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				bad(field(name), v, "not a positive whole number of I/Os per second", "write e.g. 200 (an HDD-like device) or 20000 (an SSD-like one)")
				return
			}
			*dst = n
		}
		bps := func(name, v string, dst *uint64) {
			if v = strings.TrimSpace(v); v == "" {
				return
			}
			n, err := ParseSize(strings.TrimSuffix(strings.TrimSpace(v), "/s"))
			if err != nil || n == 0 {
				bad(field(name), v, "not a rate in bytes per second", "write e.g. 100MiB or 150MB/s (binary units)")
				return
			}
			*dst = uint64(n)
		}
		iops("read_iops", io.ReadIOPS, &l.ReadIOPS)
		iops("write_iops", io.WriteIOPS, &l.WriteIOPS)
		bps("read_bps", io.ReadBPS, &l.ReadBPS)
		bps("write_bps", io.WriteBPS, &l.WriteBPS)
		if l.ReadIOPS == 0 && l.WriteIOPS == 0 && l.ReadBPS == 0 && l.WriteBPS == 0 &&
			strings.TrimSpace(io.ReadIOPS+io.WriteIOPS+io.ReadBPS+io.WriteBPS) == "" {
			bad(field("device"), io.Device, "no limit for the device", "add read_iops, write_iops, read_bps or write_bps")
		}
		e.IO = append(e.IO, l)
	}
	if len(ps) > 0 {
		return nil, &errs.Error{Kind: errs.KindUsage, Err: &ParseError{Name: e.Name, Problems: ps}}
	}
	return e, nil
}

// Problems returns the bad values in an error from Parse (nil for others).
func Problems(err error) []Problem {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Problems
	}
	return nil
}

// IsZero says whether the envelope limits nothing.
func (e *Envelope) IsZero() bool {
	return e.Memory == 0 && e.CPUs == 0 && e.Cores == 0 && len(e.Cpuset) == 0 && len(e.IO) == 0
}

// Brief is the envelope in one line, e.g. "hdd-2g: memory 2.0 GiB, 1.5
// CPUs, 2 cores, /dev/sdb read 200 IOPS".
func (e *Envelope) Brief() string {
	var parts []string
	if e.Memory > 0 {
		parts = append(parts, "memory "+human.Bytes(e.Memory))
	}
	if e.CPUs > 0 {
		parts = append(parts, strconv.FormatFloat(e.CPUs, 'g', -1, 64)+" CPUs")
	}
	if e.Cores > 0 {
		parts = append(parts, strconv.Itoa(e.Cores)+" cores")
	}
	if len(e.Cpuset) > 0 {
		parts = append(parts, "cpuset "+FormatCPUList(e.Cpuset))
	}
	for _, l := range e.IO {
		parts = append(parts, l.Device+" "+l.brief())
	}
	if len(parts) == 0 {
		parts = append(parts, "no limits")
	}
	return e.Name + ": " + strings.Join(parts, ", ")
}

func (l IOLimit) brief() string {
	var p []string
	if l.ReadIOPS > 0 {
		p = append(p, fmt.Sprintf("read %d IOPS", l.ReadIOPS))
	}
	if l.WriteIOPS > 0 {
		p = append(p, fmt.Sprintf("write %d IOPS", l.WriteIOPS))
	}
	if l.ReadBPS > 0 {
		p = append(p, "read "+human.Bytes(int64(l.ReadBPS))+"/s")
	}
	if l.WriteBPS > 0 {
		p = append(p, "write "+human.Bytes(int64(l.WriteBPS))+"/s")
	}
	return strings.Join(p, " ")
}

var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?$`)

// ParseSize reads a byte count: a number with an optional unit K, M, G or
// T (binary: "2GB", "2G" and "2GiB" are all 2^31 bytes), or plain bytes.
func ParseSize(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || (m[2] == "" && strings.HasPrefix(m[3], "i")) {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	switch strings.ToUpper(m[2]) {
	case "K":
		f *= 1 << 10
	case "M":
		f *= 1 << 20
	case "G":
		f *= 1 << 30
	case "T":
		f *= 1 << 40
	}
	if f >= 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(f), nil
}

// ParseCPUList reads a kernel CPU list ("0-3,6,8-9") into sorted, distinct
// core numbers.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(strings.TrimSpace(hi))
		}
		switch {
		case part == "" || errA != nil || errB != nil || a < 0:
			return nil, fmt.Errorf("%q is not a core number or range", part)
		case b < a:
			return nil, fmt.Errorf("range %q runs backwards", part)
		case b > 4095:
			return nil, fmt.Errorf("core %d is beyond any machine", b)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList writes core numbers as a kernel CPU list: [0 1 2 5] -> "0-2,5".
func FormatCPUList(cpus []int) string {
	c := slices.Clone(cpus)
	slices.Sort(c)
	c = slices.Compact(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}
