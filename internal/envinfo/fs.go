package envinfo

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "mount information needs Linux /proc", "filesystem of %s", path)
	}
	defer f.Close()
	mounts, err := parseMountInfo(f)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "read /proc/self/mountinfo")
	}
	fsys := mountFor(mounts, resolved)
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

// mount is one line of /proc/self/mountinfo.
type mount struct {
	device       string // major:minor
	root         string
	mountPoint   string
	options      string
	fsType       string
	source       string
	superOptions string
}

// parseMountInfo reads /proc/<pid>/mountinfo text (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// with zero or more optional fields before the "-" separator and octal escapes
// (\040 for space and so on) in paths.
func parseMountInfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || len(f) < sep+3 {
			return nil, errors.New("malformed mountinfo line: " + sc.Text())
		}
		m := mount{
			device:     f[2],
			root:       unescapeMount(f[3]),
			mountPoint: unescapeMount(f[4]),
			options:    f[5],
			fsType:     f[sep+1],
			source:     unescapeMount(f[sep+2]),
		}
		if len(f) > sep+3 {
			m.superOptions = f[sep+3]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeMount undoes the kernel's octal escaping of space, tab, newline
// and backslash in mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// mountFor picks the mount whose mount point is the longest that contains
// path (an absolute, symlink-free path). Of several mounts on the same point
// the last one listed is on top and wins.
func mountFor(mounts []mount, path string) *FS {
	best := -1
	for i, m := range mounts {
		if !underMount(path, m.mountPoint) {
			continue
		}
		if best < 0 || len(m.mountPoint) >= len(mounts[best].mountPoint) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	m := mounts[best]
	return &FS{
		Path:         path,
		MountPoint:   m.mountPoint,
		MountRoot:    m.root,
		FSType:       m.fsType,
		Source:       redact.Patterns(m.source),
		Device:       m.device,
		Options:      redact.Patterns(m.options),
		SuperOptions: redact.Patterns(m.superOptions),
	}
}

// underMount reports whether path is mountPoint or below it, comparing whole
// path components ("/data" does not contain "/database").
func underMount(path, mountPoint string) bool {
	if mountPoint == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == mountPoint || strings.HasPrefix(path, mountPoint+"/")
}
