package envinfo

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/tunebench/tunebench/internal/redact"
)

// storageSource is where StorageInfo reads from; tests point sysRoot and
// devDir at a fake tree and replace the system calls and commands.
type storageSource struct {
	sysRoot string // normally /sys
	devDir  string // normally /dev
	// devNumber is the major:minor of a block device node.
	devNumber func(path string) (string, bool)
	// fileDevice is the major:minor of the block device holding a file.
	fileDevice func(path string) (string, bool)
	run        runFunc
}

func systemStorage() storageSource {
	return storageSource{sysRoot: "/sys", devDir: "/dev", devNumber: DevNumber, fileDevice: fileBlockDevice, run: runTool}
}

// StorageInfo completes f with what lies beneath the filesystem: its block
// device and queue settings from /sys (f.Block) and its on-disk format
// (f.Features). It returns a warning for each part that could not be read;
// a filesystem without a block device (tmpfs, overlay, nfs) has neither
// part and no warning. Each command it runs is cut off after 2 s.
func StorageInfo(ctx context.Context, f *FS) []string {
	return systemStorage().storage(ctx, f)
}

func (src storageSource) storage(ctx context.Context, f *FS) []string {
	var warns []string
	mm := f.Device
	if mm == "" || strings.HasPrefix(mm, "0:") {
		// An anonymous device number: btrfs (its devices are named by the
		// mount's source) or a filesystem with no block device.
		mm = ""
		if strings.HasPrefix(f.Source, "/dev/") && src.devNumber != nil {
			mm, _ = src.devNumber(f.Source)
		}
	}
	if mm != "" {
		b, err := src.sysBlock(mm, 0)
		if err != nil {
			warns = append(warns, "block device: "+err.Error())
		} else {
			redactBlock(b)
			f.Block = b
		}
	}
	ff, warn := src.fsFeatures(ctx, f, f.Block)
	if warn != "" {
		warns = append(warns, f.FSType+" features: "+warn)
	}
	if ff != nil {
		ff.Source = redact.Patterns(ff.Source)
		f.Features = ff
	}
	return warns
}

// devNode is the device node of b, "" when it does not exist.
func (src storageSource) devNode(b *Block) string {
	if b == nil {
		return ""
	}
	p := filepath.Join(src.devDir, b.Name)
	if !exists(p) {
		return ""
	}
	return p
}

// fileBlockDevice is the block device holding path: the device number of
// its filesystem or, when that is anonymous (btrfs), the device its mount
// names.
func fileBlockDevice(path string) (string, bool) {
	if mm, ok := statDevice(path); ok && !strings.HasPrefix(mm, "0:") {
		return mm, true
	}
	if fs, err := FSInfo(path); err == nil && strings.HasPrefix(fs.Source, "/dev/") {
		return DevNumber(fs.Source)
	}
	return "", false
}

// redactBlock masks password-shaped text in the paths a block device
// description carries.
func redactBlock(b *Block) {
	b.BackingFile = redact.Patterns(b.BackingFile)
	for _, l := range b.Lower {
		redactBlock(l)
	}
}
