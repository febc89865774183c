package envelope

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/human"
)

// Record is an envelope as applied, for storing with a run and showing in
// the report: the limits, the hierarchy, the disks the I/O limits went on
// and the control files as the kernel reads them back (it rounds the
// memory limit down to whole pages, for one).
type Record struct {
	Name   string   `json:"name"`
	Cgroup string   `json:"cgroup"` // "v1" or "v2"
	Paths  []string `json:"paths"`  // the group's directories
	// MemoryBytes is the limit on anonymous memory, page cache and kernel
	// memory together; swap is not extra room (memsw / swap.max = 0 where
	// the kernel accounts swap).
	MemoryBytes int64    `json:"memory_bytes,omitempty"`
	CPUs        float64  `json:"cpus,omitempty"`          // CFS quota in CPUs
	CPUPeriodUS int64    `json:"cpu_period_us,omitempty"` // its period
	Cpuset      string   `json:"cpuset,omitempty"`        // the cores, e.g. "0-1"
	IO          []Device `json:"io,omitempty"`
	// Files maps each control file written to the value read back.
	Files map[string]string `json:"files"`
}

// Describe returns the record of the envelope as applied.
func (g *Group) Describe() Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := Record{
		Name:        g.env.Name,
		Cgroup:      "v" + strconv.Itoa(g.version),
		Paths:       g.Paths(),
		MemoryBytes: g.env.Memory,
		CPUs:        g.env.CPUs,
		IO:          append([]Device(nil), g.devices...),
		Files:       maps.Clone(g.files),
	}
	if g.env.CPUs > 0 {
		r.CPUPeriodUS = CPUPeriod.Microseconds()
	}
	if len(g.cpuset) > 0 {
		r.Cpuset = FormatCPUList(g.cpuset)
	}
	return r
}

// Brief is the record in one line for terminals and the report's
// environment table, e.g. "hdd-2g (cgroup v1): memory 2.0 GiB incl. page
// cache, 1.5 CPUs, cores 0-1, loop3 (7:3) read 200 IOPS".
func (r Record) Brief() string {
	var parts []string
	if r.MemoryBytes > 0 {
		parts = append(parts, "memory "+human.Bytes(r.MemoryBytes)+" incl. page cache")
	}
	if r.CPUs > 0 {
		parts = append(parts, strconv.FormatFloat(r.CPUs, 'g', -1, 64)+" CPUs")
	}
	if r.Cpuset != "" {
		parts = append(parts, "cores "+r.Cpuset)
	}
	for _, d := range r.IO {
		name := fmt.Sprintf("%s (%s)", d.Disk, d.Dev)
		if d.Partition != "" {
			name += " for " + d.Partition
		}
		parts = append(parts, name+" "+IOLimit{ReadIOPS: d.ReadIOPS, WriteIOPS: d.WriteIOPS, ReadBPS: d.ReadBPS, WriteBPS: d.WriteBPS}.brief())
	}
	if len(parts) == 0 {
		parts = append(parts, "no limits (accounting only)")
	}
	return fmt.Sprintf("%s (cgroup %s): %s", r.Name, r.Cgroup, strings.Join(parts, ", "))
}
