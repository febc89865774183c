package envinfo

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/human"
)

// The one-line descriptions below are what the report's environment table
// and `tunebench results show` print, so that both say the same thing.

// Stack is b followed by the devices beneath it, depth first.
func (b *Block) Stack() []*Block {
	if b == nil {
		return nil
	}
	out := []*Block{b}
	for _, l := range b.Lower {
		out = append(out, l.Stack()...)
	}
	return out
}

// label names a device in the lines below. A loop device is "loop": its
// number is whichever was free when it was attached, and would make two runs
// on the same layout look different (the JSON keeps the name).
func (b *Block) label() string {
	if b.Kind == "loop" {
		return "loop"
	}
	return b.Name
}

// DeviceLine describes the device and what it is built on, e.g.
// "loop (file /srv/a.img, 64.0 MiB) on vda (0x1af4, 256.0 GiB,
// rotational)" or "nvme0n1p2 (partition of nvme0n1, Samsung SSD 980,
// 200.0 GiB, non-rotational)".
func (b *Block) DeviceLine() string {
	if b == nil {
		return ""
	}
	var what []string
	switch b.Kind {
	case "partition":
		what = append(what, "partition of "+b.Disk)
	case "loop":
		what = append(what, "file "+b.BackingFile)
	case "dm":
		what = append(what, strings.TrimSpace("device mapper "+b.DMName))
	case "md":
		md := strings.TrimSpace("software RAID " + b.MDLevel)
		if b.MDChunkKB > 0 {
			md += ", chunk " + strconv.FormatInt(b.MDChunkKB, 10) + " KiB"
		}
		what = append(what, md)
	}
	if b.Kind == "partition" && b.BackingFile != "" {
		what = append(what, "loop file "+b.BackingFile)
	}
	if b.BackingFile != "" && b.DirectIO {
		what = append(what, "direct I/O")
	}
	if m := strings.TrimSpace(b.Vendor + " " + b.Model); m != "" {
		what = append(what, m)
	}
	if b.SizeBytes > 0 {
		what = append(what, human.Bytes(b.SizeBytes))
	}
	// A loop device's flag is the kernel's default, not a property of
	// anything; its backing device says.
	if b.Queue != nil && b.BackingFile == "" {
		if b.Queue.Rotational {
			what = append(what, "rotational")
		} else {
			what = append(what, "non-rotational")
		}
	}
	if b.ReadOnly {
		what = append(what, "read-only")
	}
	s := b.label()
	if len(what) > 0 {
		s += " (" + strings.Join(what, ", ") + ")"
	}
	var lower []string
	for _, l := range b.Lower {
		lower = append(lower, l.DeviceLine())
	}
	if len(lower) > 0 {
		s += " on " + strings.Join(lower, " + ")
	}
	return s
}

// SchedulerLine gives each device's I/O scheduler and readahead, e.g.
// "loop none, readahead 128 KiB (256 sectors); vda mq-deadline, readahead
// 8192 KiB (16384 sectors)". The sectors are what `blockdev --getra`
// prints and `--setra` takes.
func (b *Block) SchedulerLine() string {
	var parts []string
	for _, d := range b.Stack() {
		if d.Queue == nil {
			continue
		}
		q := d.Queue
		s := d.label()
		if q.Scheduler != "" {
			s += " " + q.Scheduler + ","
		}
		s += " readahead " + strconv.FormatInt(q.ReadAheadKB, 10) + " KiB (" + strconv.FormatInt(q.ReadAheadSectors, 10) + " sectors)"
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// QueueLine gives each device's request-queue limits, e.g. "vda:
// nr_requests 256, max_sectors_kb 4096, block 512/4096 (logical/physical),
// write back cache, discard".
func (b *Block) QueueLine() string {
	var parts []string
	for _, d := range b.Stack() {
		if d.Queue == nil {
			continue
		}
		q := d.Queue
		s := d.label() + ": nr_requests " + strconv.FormatInt(q.NrRequests, 10) +
			", max_sectors_kb " + strconv.FormatInt(q.MaxSectorsKB, 10) +
			", block " + strconv.FormatInt(q.LogicalBlock, 10) + "/" + strconv.FormatInt(q.PhysicalBlock, 10) + " (logical/physical)"
		if q.WriteCache != "" {
			s += ", " + q.WriteCache + " cache"
		}
		if q.DiscardMaxBytes > 0 {
			s += ", discard"
		} else {
			s += ", no discard"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// Line summarises the format, e.g. "block 4096; crc finobt sparse reflink;
// agcount 4, inode_size 512, log internal".
func (ff *FSFeatures) Line() string {
	if ff == nil {
		return ""
	}
	var parts []string
	if ff.BlockSize > 0 {
		parts = append(parts, "block "+strconv.FormatInt(ff.BlockSize, 10))
	}
	if len(ff.Features) > 0 {
		parts = append(parts, strings.Join(ff.Features, " "))
	}
	keys := make([]string, 0, len(ff.Details))
	for k := range ff.Details {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var d []string
	for _, k := range keys {
		d = append(d, k+" "+ff.Details[k])
	}
	if len(d) > 0 {
		parts = append(parts, strings.Join(d, ", "))
	}
	return strings.Join(parts, "; ")
}
