//go:build linux

package machine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestParseMounts: optional fields, escaped paths (a space, a backslash),
// a line without super options, and the mount that holds a path, compared
// by whole path components.
func TestParseMounts(t *testing.T) {
	text := `1 0 8:1 / / rw,noatime shared:1 - xfs /dev/sda1 rw,attr2,inode64,logbufs=8,noquota
2 1 259:3 /pgdata /srv/my\040data rw,noatime,nodiratime shared:7 master:2 - ext4 /dev/nvme0n1p3 rw,data=ordered
3 1 0:40 / /srv/back\134slash rw - nfs4 server:/export rw,vers=4.2,sec=sys
4 1 0:41 / /srv/tab\011and\012newline rw - tmpfs tmpfs rw
`
	ms, err := ParseMounts([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 {
		t.Fatalf("%d mounts", len(ms))
	}
	m := ms[1]
	if m.MountPoint != "/srv/my data" || m.Root != "/pgdata" || m.Options != "rw,noatime,nodiratime" || m.Device() != "259:3" ||
		m.FSType != "ext4" || m.Source != "/dev/nvme0n1p3" || m.SuperOptions != "rw,data=ordered" {
		t.Errorf("optional fields / escapes: %+v", m)
	}
	if ms[2].MountPoint != `/srv/back\slash` || ms[3].MountPoint != "/srv/tab\tand\nnewline" {
		t.Errorf("escapes: %q %q", ms[2].MountPoint, ms[3].MountPoint)
	}
	if got := MountFor(ms, "/srv/my data/16/main"); got == nil || got.MountPoint != "/srv/my data" {
		t.Errorf("data dir: %+v", got)
	}
	if got := MountFor(ms, "/srv/my datax"); got == nil || got.MountPoint != "/" {
		t.Errorf("prefix must match whole components: %+v", got)
	}
	for _, bad := range []string{"1 0 8:1 / /\n", "1 0 8:1 / / rw - xfs\n"} {
		if _, err := ParseMounts([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestMountUnderSpace: a filesystem mounted on a directory whose name has a
// space is found in this process's mount table (the kernel writes the space
// as \040), by IsMountPoint and MountsUnder, and its device is mounted.
func TestMountUnderSpace(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting needs root, and CI runs as root")
		}
		t.Skip("mounting needs root")
	}
	dir := filepath.Join(t.TempDir(), "a dir", "with spaces")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tbtest", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	if ok, err := IsMountPoint(dir); !ok || err != nil {
		t.Errorf("IsMountPoint(%q) = %v, %v", dir, ok, err)
	}
	under, err := MountsUnder(filepath.Dir(filepath.Dir(dir)))
	if err != nil || len(under) != 1 || under[0].MountPoint != dir || under[0].FSType != "tmpfs" {
		t.Errorf("MountsUnder: %+v, %v", under, err)
	}
	if ok, _ := IsMountPoint(filepath.Dir(dir)); ok {
		t.Errorf("%s is not a mount point", filepath.Dir(dir))
	}
}
