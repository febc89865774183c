package envinfo

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/machine"
)

// TestMountTableCaptured: a mount table captured on a 2-CPU VM, read by
// machine.ParseMounts, and the filesystem of paths on it (fsFor).
func TestMountTableCaptured(t *testing.T) {
	b, err := io.ReadAll(open(t, "proc/self/mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := machine.ParseMounts(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 20 {
		t.Errorf("%d mounts, want 20", len(mounts))
	}
	root := mounts[5]
	want := machine.Mount{Major: 254, Minor: 0, Root: "/", MountPoint: "/", Options: "rw,relatime", FSType: "ext4",
		Source: "/dev/vda", SuperOptions: "rw,discard,resv_strict,resuid=65534,resgid=65534"}
	if root != want {
		t.Errorf("root mount %+v, want %+v", root, want)
	}

	cases := []struct {
		path, mountPoint, fsType, device, options, super string
	}{
		{"/work/main/internal", "/", "ext4", "254:0", "rw,relatime", "rw,discard,resv_strict,resuid=65534,resgid=65534"},
		{"/", "/", "ext4", "254:0", "rw,relatime", "rw,discard,resv_strict,resuid=65534,resgid=65534"},
		{"/dev/shm/x", "/dev/shm", "tmpfs", "0:27", "rw,relatime", "rw,size=24684092k"}, // mounted twice: the later one is on top
		{"/dev/pts", "/dev/pts", "devpts", "0:26", "rw,relatime", "rw,mode=600,ptmxmode=000"},
		{"/dev/ptsx", "/dev", "devtmpfs", "0:6", "rw,relatime", "rw,size=12334492k,nr_inodes=3083623,mode=755"},
		{"/sys/fs/cgroup/memory/a/b", "/sys/fs/cgroup/memory", "cgroup", "0:32", "rw,relatime", "rw,memory"},
		{"/mnt/sandboxing/model_tools_env/v1/python/lib", "/mnt/sandboxing/model_tools_env/v1/python", "tmpfs", "0:25", "ro,nosuid,nodev,relatime", "ro,size=4k,mode=755"},
	}
	for _, c := range cases {
		fs := fsFor(mounts, c.path)
		if fs == nil {
			t.Errorf("%s: no mount", c.path)
			continue
		}
		if fs.Path != c.path || fs.MountPoint != c.mountPoint || fs.FSType != c.fsType || fs.Device != c.device ||
			fs.Options != c.options || fs.SuperOptions != c.super {
			t.Errorf("%s: got %+v", c.path, fs)
		}
	}
	if fs := fsFor(mounts, "relative"); fs != nil {
		t.Errorf("relative path matched %+v", fs)
	}
}

func TestResolveExisting(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		link:                                realDir,
		filepath.Join(link, "not", "there"): filepath.Join(realDir, "not", "there"),
		filepath.Join(real, "x"):            filepath.Join(realDir, "x"),
	} {
		got, err := resolveExisting(in)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFSInfoLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/mountinfo")
	}
	dir := t.TempDir()
	fs, err := FSInfo(filepath.Join(dir, "pgdata"))
	if err != nil {
		t.Fatal(err)
	}
	if fs.MountPoint == "" || fs.FSType == "" || !strings.HasPrefix(fs.Path, fs.MountPoint) ||
		!strings.HasSuffix(fs.Path, "pgdata") {
		t.Errorf("implausible: %+v", fs)
	}
	// /proc is always its own mount.
	fs, err = FSInfo("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	if fs.FSType != "proc" || fs.MountPoint != "/proc" {
		t.Errorf("/proc/self: %+v", fs)
	}
}
