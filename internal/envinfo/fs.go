package envinfo

import (
	"github.com/tunebench/tunebench/internal/machine"

	"errors"
	"io/fs"
	"path/filepath"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

// FS describes the filesystem a path lives on, as the kernel's mount table
// for this process shows it (FSInfo), and what lies beneath it: its block
// device and on-disk format (StorageInfo).
type FS struct {
	Path         string `json:"path"`          // the path asked about, absolute, symlinks resolved
	MountPoint   string `json:"mount_point"`   // where the filesystem is mounted
	MountRoot    string `json:"mount_root"`    // directory of the filesystem mounted there ("/" unless a bind mount)
	FSType       string `json:"fs_type"`       // e.g. ext4, xfs, tmpfs, overlay
	Source       string `json:"source"`        // e.g. /dev/nvme0n1p2
	Device       string `json:"device"`        // major:minor
	Options      string `json:"options"`       // per-mount options, e.g. rw,noatime
	SuperOptions string `json:"super_options"` // filesystem-wide options, e.g. rw,discard,data=ordered
	// Block is the block device under the filesystem (snapshot version 2;
	// nil when it has none or it could not be found).
	Block *Block `json:"block_device,omitempty"`
	// Features is the filesystem's on-disk format (snapshot version 2; nil
	// when it could not be read or tunebench has no reader for the type).
	Features *FSFeatures `json:"fs_features,omitempty"`
}

// FSInfo finds the filesystem that holds path. A path that does not exist
// yet is resolved through its nearest existing parent (where it would be
// created). Symbolic links are resolved first, then the mount with the
// longest mount point that contains the path is chosen from
// /proc/self/mountinfo.
func FSInfo(path string) (*FS, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "filesystem of %s", path)
	}
	resolved, err := resolveExisting(abs)
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "filesystem of %s", path)
	}
	mounts, err := machine.Mounts()
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "mount information needs Linux /proc", "filesystem of %s", path)
	}
	fsys := fsFor(mounts, resolved)
	if fsys == nil {
		return nil, errs.New(errs.KindEnvironment, "", "filesystem of %s: no mount contains %s", path, resolved)
	}
	return fsys, nil
}

// resolveExisting resolves symlinks in abs; when abs does not exist, it
// resolves the nearest existing ancestor and appends the rest.
func resolveExisting(abs string) (string, error) {
	rest := ""
	p := abs
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			if rest != "" {
				r = filepath.Join(r, rest)
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// fsFor describes the mount that holds path (absolute, symlinks resolved),
// nil when none does.
func fsFor(mounts []machine.Mount, path string) *FS {
	m := machine.MountFor(mounts, path)
	if m == nil {
		return nil
	}
	return &FS{
		Path:         path,
		MountPoint:   m.MountPoint,
		MountRoot:    m.Root,
		FSType:       m.FSType,
		Source:       redact.Patterns(m.Source),
		Device:       m.Device(),
		Options:      redact.Patterns(m.Options),
		SuperOptions: redact.Patterns(m.SuperOptions),
	}
}
