package layout

import (
	"runtime"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
)

// Describe says what a layout makes, in one line.
func (l *Layout) Describe() string {
	var b strings.Builder
	b.WriteString(l.Filesystem)
	if len(l.Devices) > 0 {
		b.WriteString(" on " + strings.Join(l.Devices, " + "))
	} else {
		b.WriteString(" on a " + human.Bytes(l.LoopSize) + " loop file")
	}
	if len(l.Mkfs) > 0 {
		b.WriteString(", mkfs " + strings.Join(l.Mkfs, " "))
	}
	if len(l.Mount) > 0 {
		b.WriteString(", mount " + strings.Join(l.Mount, ","))
	}
	if l.Readahead > 0 {
		b.WriteString(", readahead " + human.Bytes(l.Readahead))
	}
	if l.Scheduler != "" {
		b.WriteString(", scheduler " + l.Scheduler)
	}
	if l.Reuse {
		b.WriteString(", one filesystem for all its configurations")
	}
	return b.String()
}

// Finding is one machine check of a layout: what was checked, and the
// problem (nil when it passed).
type Finding struct {
	What string
	Err  error
}

// MachineCheck checks what a layout (and its WAL layout) needs of this
// machine without touching anything: its tools and kernel support, and
// the safety of every device it names.
func MachineCheck(l *Layout) []Finding {
	if runtime.GOOS != "linux" {
		return []Finding{{"NOT READY", errs.New(errs.KindUsage, "run the experiment on a Linux machine, or remove matrix.storage",
			"storage layouts (loop devices, mkfs, md/LVM, mount) need Linux; this is %s", runtime.GOOS)}}
	}
	var out []Finding
	for each := l; each != nil; each = each.WAL {
		if err := Installed(each); err != nil {
			out = append(out, Finding{"NOT READY", err})
		}
		for _, d := range each.Devices {
			if err := SafeDevice(d); err != nil {
				out = append(out, Finding{"REFUSED", err})
			} else {
				out = append(out, Finding{d + ": a block device not in use (erased only with --allow-destroy)", nil})
			}
		}
	}
	return out
}
