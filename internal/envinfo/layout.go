package envinfo

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tunebench/tunebench/internal/human"
)

// Layout is the storage layout a run's data directory was made on (an
// experiment's matrix.storage): what was asked for and the mkfs command
// as run. The filesystem, device and features as found are in DataDir.
type Layout struct {
	Name       string   `json:"name"`
	Filesystem string   `json:"filesystem"`
	Devices    []string `json:"devices,omitempty"`
	LoopSize   int64    `json:"loop_size,omitempty"`
	Volume     string   `json:"volume,omitempty"` // "raid0 over 2", "lvm striped over 3"
	Mkfs       string   `json:"mkfs"`             // the command as run
	Mount      []string `json:"mount,omitempty"`
	Readahead  int64    `json:"readahead,omitempty"` // bytes
	Scheduler  string   `json:"scheduler,omitempty"`
	WAL        *Layout  `json:"wal,omitempty"`
}

// Line describes the layout in one line (for the report and results show).
func (l *Layout) Line() string {
	if l == nil {
		return ""
	}
	var parts []string
	where := "on " + strings.Join(l.Devices, " + ")
	if len(l.Devices) == 0 {
		where = "on a " + human.Bytes(l.LoopSize) + " loop file"
	}
	parts = append(parts, fmt.Sprintf("%s: %s %s", l.Name, l.Filesystem, where))
	if l.Volume != "" {
		parts = append(parts, l.Volume)
	}
	if l.Mkfs != "" {
		// The device name varies between attaches: leave it out.
		f := strings.Fields(l.Mkfs)
		parts = append(parts, strings.Join(f[:len(f)-1], " "))
	}
	if len(l.Mount) > 0 {
		parts = append(parts, "mount "+strings.Join(l.Mount, ","))
	}
	if l.Readahead > 0 {
		parts = append(parts, "readahead "+human.Bytes(l.Readahead))
	}
	if l.Scheduler != "" {
		parts = append(parts, "scheduler "+l.Scheduler)
	}
	s := strings.Join(parts, ", ")
	if l.WAL != nil {
		s += "; WAL " + l.WAL.Line()
	}
	return s
}

// Envelope is the hardware envelope (cgroup limits) the run's server ran
// in: a line for people and the limits as applied and read back.
type Envelope struct {
	Brief  string          `json:"brief"`
	Record json.RawMessage `json:"record"`
	// Usage is what the run used of it: the group's counters before and
	// after the run; UsageLine says it in one line (limit hits, OOM kills,
	// CPU throttling during the run, the memory peak so far).
	Usage     json.RawMessage `json:"usage,omitempty"`
	UsageLine string          `json:"usage_line,omitempty"`
}

// Line is the envelope in one line ("" when none).
func (e *Envelope) Line() string {
	if e == nil {
		return ""
	}
	if e.UsageLine != "" {
		return e.Brief + "; during the run: " + e.UsageLine
	}
	return e.Brief
}

// WALLine describes the filesystem pg_wal is on when it is not the data
// directory's ("" otherwise).
func (s *Snapshot) WALLine() string {
	w := s.WALDir
	if w == nil {
		return ""
	}
	v := w.FSType
	if w.MountPoint != "" {
		v += " mounted at " + w.MountPoint
	}
	if w.Options != "" {
		v += " (" + w.Options + ")"
	}
	if d := w.Block.DeviceLine(); d != "" {
		v += "; " + d
	}
	return v
}

// StorageLines describe what lies under the snapshot's data directory:
// a heading and (name, value) lines for the layout, envelope, WAL
// filesystem, device, scheduler and readahead, queue and filesystem
// features. The heading is "" when the snapshot has none of them (stored
// before snapshot version 2, or a tmpfs).
func (s *Snapshot) StorageLines() (string, [][2]string) {
	d := s.DataDir
	if d == nil || (d.Block == nil && d.Features == nil) {
		return "", nil
	}
	var out [][2]string
	for _, l := range [][2]string{
		{"layout", s.Layout.Line()},
		{"envelope", s.Envelope.Line()},
		{"WAL", s.WALLine()},
		{"device", d.Block.DeviceLine()},
		{"scheduler, readahead", d.Block.SchedulerLine()},
		{"queue", d.Block.QueueLine()},
		{"filesystem features", d.Features.Line()},
	} {
		if l[1] != "" {
			out = append(out, l)
		}
	}
	return fmt.Sprintf("storage under %s (%s on %s)", d.Path, d.FSType, d.MountPoint), out
}

// ShowLines are the lines `results show` prints of the environment: where
// the server is when it is on another machine, the kernel settings an
// experiment set, and what lies under the data directory (StorageLines).
func (s *Snapshot) ShowLines() []string {
	var out []string
	if l := s.Server.Line(); l != "" && s.Server.Remote {
		out = append(out, "server: "+l)
	}
	if l := s.KernelLine(); l != "" {
		out = append(out, "kernel settings: "+l)
	}
	if head, lines := s.StorageLines(); head != "" {
		out = append(out, head+":")
		for _, l := range lines {
			out = append(out, "  "+l[0]+": "+l[1])
		}
	}
	return out
}
