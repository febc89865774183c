package envinfo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Block describes the block device under a filesystem as /sys shows it:
// what it is, how big, and the request-queue settings that shape the I/O a
// benchmark sees. Everything is read from /sys; nothing needs root.
type Block struct {
	// Name is the kernel's name of the filesystem's device: vda, nvme0n1p2,
	// loop3, dm-0, md0.
	Name   string `json:"name"`
	MajMin string `json:"maj_min"` // major:minor
	// Kind is disk, partition, loop, dm (device mapper: LVM, LUKS...) or md
	// (software RAID).
	Kind string `json:"kind"`
	// Disk is the whole disk a partition belongs to (its queue settings,
	// model and vendor are the disk's).
	Disk      string `json:"disk,omitempty"`
	Model     string `json:"model,omitempty"`  // device/model (SCSI, ATA, NVMe)
	Vendor    string `json:"vendor,omitempty"` // device/vendor (for virtio, the PCI vendor id)
	SizeBytes int64  `json:"size_bytes"`       // of Name (the partition, not its disk)
	ReadOnly  bool   `json:"read_only,omitempty"`
	// BackingFile and DirectIO describe a loop device: the file it maps and
	// whether it reads and writes that file with direct I/O.
	BackingFile string `json:"backing_file,omitempty"`
	DirectIO    bool   `json:"direct_io,omitempty"`
	DMName      string `json:"dm_name,omitempty"`  // device mapper name, e.g. vg0-data
	MDLevel     string `json:"md_level,omitempty"` // software RAID level, e.g. raid1
	MDChunkKB   int64  `json:"md_chunk_kb,omitempty"`
	Queue       *Queue `json:"queue,omitempty"` // nil when the device has no queue directory
	// Lower are the devices beneath: a dm or md device's members (slaves), or
	// the device holding a loop device's backing file.
	Lower []*Block `json:"lower,omitempty"`
}

// Queue holds the settings of a device's request queue
// (/sys/block/NAME/queue).
type Queue struct {
	Scheduler string `json:"scheduler"` // the active I/O scheduler: none, mq-deadline, bfq, kyber
	// ReadAheadKB is read_ahead_kb; ReadAheadSectors is the same in 512-byte
	// sectors, as `blockdev --getra` prints it.
	ReadAheadKB      int64 `json:"read_ahead_kb"`
	ReadAheadSectors int64 `json:"read_ahead_sectors"`
	Rotational       bool  `json:"rotational"`
	NrRequests       int64 `json:"nr_requests"`
	MaxSectorsKB     int64 `json:"max_sectors_kb"`
	LogicalBlock     int64 `json:"logical_block_size"`
	PhysicalBlock    int64 `json:"physical_block_size"`
	// WriteCache is "write back" (the device has a volatile cache the kernel
	// flushes) or "write through".
	WriteCache string `json:"write_cache"`
	// DiscardMaxBytes is the largest discard the device takes; 0 means it
	// does not support discard (TRIM/UNMAP).
	DiscardMaxBytes int64 `json:"discard_max_bytes"`
}

// maxLowerDepth bounds how far Lower is followed (a loop file on an LVM
// volume on a RAID is depth 3).
const maxLowerDepth = 4

// sysBlock reads the block device whose number is majMin under sysRoot
// (normally /sys), through sysRoot/dev/block/MAJ:MIN.
func (src storageSource) sysBlock(majMin string, depth int) (*Block, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(src.sysRoot, "dev", "block", majMin))
	if err != nil {
		return nil, fmt.Errorf("no block device %s under %s", majMin, filepath.Join(src.sysRoot, "dev", "block"))
	}
	return src.describe(dir, depth), nil
}

// describe reads a device's directory under /sys/devices (or a partition's,
// whose parent is its disk).
func (src storageSource) describe(dir string, depth int) *Block {
	b := &Block{Name: filepath.Base(dir), MajMin: sysString(dir, "dev"), Kind: "disk"}
	disk := dir
	if exists(filepath.Join(dir, "partition")) {
		disk = filepath.Dir(dir)
		b.Kind, b.Disk = "partition", filepath.Base(disk)
	}
	if n, ok := sysInt(dir, "size"); ok {
		b.SizeBytes = n * 512 // always in 512-byte sectors, whatever the block size
	}
	if n, ok := sysInt(dir, "ro"); ok {
		b.ReadOnly = n != 0
	}
	b.Model = sysString(disk, "device/model")
	b.Vendor = sysString(disk, "device/vendor")
	var lower []string // device directories beneath
	switch {
	case exists(filepath.Join(disk, "loop")):
		if b.Kind == "disk" {
			b.Kind = "loop"
		}
		b.BackingFile = sysString(disk, "loop/backing_file")
		if n, ok := sysInt(disk, "loop/dio"); ok {
			b.DirectIO = n != 0
		}
	case exists(filepath.Join(disk, "dm")):
		if b.Kind == "disk" {
			b.Kind = "dm"
		}
		b.DMName = sysString(disk, "dm/name")
		lower = slaves(disk)
	case exists(filepath.Join(disk, "md")):
		if b.Kind == "disk" {
			b.Kind = "md"
		}
		b.MDLevel = sysString(disk, "md/level")
		if n, ok := sysInt(disk, "md/chunk_size"); ok {
			b.MDChunkKB = n / 1024
		}
		lower = slaves(disk)
	}
	b.Queue = readQueue(filepath.Join(disk, "queue"))
	if depth >= maxLowerDepth {
		return b
	}
	for _, l := range lower {
		b.Lower = append(b.Lower, src.describe(l, depth+1))
	}
	if b.BackingFile != "" && src.fileDevice != nil {
		if mm, ok := src.fileDevice(b.BackingFile); ok {
			if lb, err := src.sysBlock(mm, depth+1); err == nil {
				b.Lower = append(b.Lower, lb)
			}
		}
	}
	return b
}

// slaves lists the device directories a dm or md device is built on.
func slaves(disk string) []string {
	ents, err := os.ReadDir(filepath.Join(disk, "slaves"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if d, err := filepath.EvalSymlinks(filepath.Join(disk, "slaves", e.Name())); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// readQueue reads a queue directory; nil when there is none.
func readQueue(dir string) *Queue {
	if !exists(dir) {
		return nil
	}
	q := &Queue{
		Scheduler:  selectedMode(sysString(dir, "scheduler")),
		WriteCache: sysString(dir, "write_cache"),
	}
	q.ReadAheadKB, _ = sysInt(dir, "read_ahead_kb")
	q.ReadAheadSectors = q.ReadAheadKB * 2
	if n, ok := sysInt(dir, "rotational"); ok {
		q.Rotational = n != 0
	}
	q.NrRequests, _ = sysInt(dir, "nr_requests")
	q.MaxSectorsKB, _ = sysInt(dir, "max_sectors_kb")
	q.LogicalBlock, _ = sysInt(dir, "logical_block_size")
	q.PhysicalBlock, _ = sysInt(dir, "physical_block_size")
	q.DiscardMaxBytes, _ = sysInt(dir, "discard_max_bytes")
	return q
}

// sysString is the trimmed content of a small sysfs file; "" when it cannot
// be read.
func sysString(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sysInt is a sysfs file holding one integer.
func sysInt(dir, name string) (int64, bool) {
	n, err := strconv.ParseInt(sysString(dir, name), 10, 64)
	return n, err == nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// BlockDevices names the disks whose request queues serve path: the
// filesystem's device (a partition's disk) and every device beneath it
// (an md array's or a volume's members, a loop file's device). None for a
// filesystem without a block device (tmpfs).
func BlockDevices(ctx context.Context, path string) ([]string, error) {
	f, err := FSInfo(path)
	if err != nil {
		return nil, err
	}
	StorageInfo(ctx, f)
	var out []string
	seen := map[string]bool{}
	var walk func(b *Block)
	walk = func(b *Block) {
		if b == nil {
			return
		}
		name := b.Name
		if b.Disk != "" {
			name = b.Disk
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		for _, l := range b.Lower {
			walk(l)
		}
	}
	walk(f.Block)
	return out, nil
}
