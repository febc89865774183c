package envinfo

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseMountInfoCaptured(t *testing.T) {
	mounts, err := parseMountInfo(open(t, "proc/self/mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 20 {
		t.Errorf("%d mounts, want 20", len(mounts))
	}
	root := mounts[5]
	want := mount{device: "254:0", root: "/", mountPoint: "/", options: "rw,relatime", fsType: "ext4",
		source: "/dev/vda", superOptions: "rw,discard,resv_strict,resuid=65534,resgid=65534"}
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
		fs := mountFor(mounts, c.path)
		if fs == nil {
			t.Errorf("%s: no mount", c.path)
			continue
		}
		if fs.Path != c.path || fs.MountPoint != c.mountPoint || fs.FSType != c.fsType || fs.Device != c.device ||
			fs.Options != c.options || fs.SuperOptions != c.super {
			t.Errorf("%s: got %+v", c.path, fs)
		}
	}
}

func TestParseMountInfoSynthetic(t *testing.T) {
	text := `1 0 8:1 / / rw,noatime shared:1 - xfs /dev/sda1 rw,attr2,inode64,logbufs=8,noquota
2 1 259:3 /pgdata /srv/my\040data rw,noatime,nodiratime shared:7 master:2 - ext4 /dev/nvme0n1p3 rw,data=ordered
3 1 0:40 / /srv/back\134slash rw - nfs4 server:/export rw,vers=4.2,sec=sys
4 1 0:41 / /srv/nosuper rw - tmpfs tmpfs
`
	mounts, err := parseMountInfo(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 4 {
		t.Fatalf("%d mounts", len(mounts))
	}
	m := mounts[1]
	if m.mountPoint != "/srv/my data" || m.root != "/pgdata" || m.options != "rw,noatime,nodiratime" ||
		m.fsType != "ext4" || m.source != "/dev/nvme0n1p3" || m.superOptions != "rw,data=ordered" {
		t.Errorf("optional fields / escapes: %+v", m)
	}
	if mounts[2].mountPoint != `/srv/back\slash` {
		t.Errorf("backslash escape: %q", mounts[2].mountPoint)
	}
	if mounts[3].superOptions != "" || mounts[3].fsType != "tmpfs" {
		t.Errorf("no super options: %+v", mounts[3])
	}

	fs := mountFor(mounts, "/srv/my data/16/main")
	if fs == nil || fs.MountPoint != "/srv/my data" || fs.MountRoot != "/pgdata" || fs.Options != "rw,noatime,nodiratime" {
		t.Errorf("data dir: %+v", fs)
	}
	if fs := mountFor(mounts, "/srv/my datax"); fs == nil || fs.MountPoint != "/" {
		t.Errorf("prefix must match whole components: %+v", fs)
	}
	if fs := mountFor(mounts, "relative"); fs != nil {
		t.Errorf("relative path matched %+v", fs)
	}

	for _, bad := range []string{"1 0 8:1 / /\n", "1 0 8:1 / / rw shared:1 xfs /dev/sda1 rw\n", "1 0 8:1 / / rw - xfs\n"} {
		if _, err := parseMountInfo(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:   "/a b",
		`/a\011b`:   "/a\tb",
		`/a\012b`:   "/a\nb",
		`/a\134b`:   `/a\b`,
		`/end\04`:   `/end\04`,
		`/bad\089x`: `/bad\089x`,
		`/plain`:    "/plain",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
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
