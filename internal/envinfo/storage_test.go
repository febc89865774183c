package envinfo

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// A snapshot stored before versions were recorded (a run of the binary
// before snapshot version 2, from internal/cli/testdata/oldstore) reads into
// today's types: version 1, no block device, no filesystem features.
func TestSnapshotVersion1Reads(t *testing.T) {
	old := `{"host":{"hostname":"vm","os":"linux","cpus":2},"data_dir":{"path":"/tmp/srv/data","mount_point":"/",
"mount_root":"/","fs_type":"ext4","source":"/dev/vda","device":"254:0","options":"rw,relatime","super_options":"rw,discard"},
"driver":{"go_version":"go1.26.8","tunebench_version":"6ebd4cb","gomaxprocs":2,"num_cpu":2},"taken_at":"2026-01-01T00:00:00Z"}`
	var s Snapshot
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion() != 1 || s.DataDir == nil || s.DataDir.FSType != "ext4" || s.DataDir.Block != nil || s.DataDir.Features != nil {
		t.Errorf("version 1 snapshot: %d %+v", s.SchemaVersion(), s.DataDir)
	}
	if s.DataDir.Block.DeviceLine() != "" || s.DataDir.Block.SchedulerLine() != "" || s.DataDir.Block.QueueLine() != "" || s.DataDir.Features.Line() != "" {
		t.Error("a version 1 snapshot describes no device")
	}
	// Today's snapshot says its version, and the new parts are left out of
	// the JSON when there are none.
	now := Take(context.Background(), Options{Version: "test"})
	b, err := json.Marshal(now)
	if err != nil {
		t.Fatal(err)
	}
	if now.SchemaVersion() != SnapshotVersion || !strings.HasPrefix(string(b), `{"version":2,"host":`) {
		t.Errorf("new snapshot: %s", b)
	}
	f := FS{Path: "/x"}
	if b, _ := json.Marshal(f); strings.Contains(string(b), "block_device") || strings.Contains(string(b), "fs_features") {
		t.Errorf("empty parts written: %s", b)
	}
}

// loopFS makes a filesystem of fstype, sizeMiB large, in a file on a loop
// device and mounts it on a temporary directory; it returns the mount
// point, the loop device (/dev/loopN) and the file. The cleanup unmounts,
// detaches and removes everything, also when the test fails half-way.
func loopFS(t *testing.T, fstype string, sizeMiB int64) (mnt, dev, img string) {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("skipping: loop devices and mount need root on Linux")
	}
	for _, tool := range []string{"losetup", "mount", "umount", "mkfs." + fstype} {
		if _, err := lookTool(tool); err != nil {
			t.Skipf("skipping: %s not found", tool)
		}
	}
	dir := t.TempDir()
	img = filepath.Join(dir, fstype+".img")
	mnt = filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(sizeMiB << 20)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(img) })
	sbin := func(name string, args ...string) ([]byte, error) {
		p, err := lookTool(name)
		if err != nil {
			return nil, err
		}
		return exec.Command(p, args...).CombinedOutput()
	}
	mkfsArgs := []string{"-q", img}
	if fstype == "ext4" {
		mkfsArgs = []string{"-q", "-F", img}
	}
	if out, err := sbin("mkfs."+fstype, mkfsArgs...); err != nil {
		t.Fatalf("mkfs.%s: %v: %s", fstype, err, out)
	}
	out, err := sbin("losetup", "--find", "--show", img)
	if err != nil {
		t.Skipf("skipping: no loop device here: losetup: %v: %s", err, out)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := sbin("losetup", "-d", dev); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	if out, err := sbin("mount", "-t", fstype, dev, mnt); err != nil {
		t.Fatalf("mount %s: %v: %s", dev, err, out)
	}
	t.Cleanup(func() {
		if out, err := sbin("umount", mnt); err != nil {
			t.Errorf("umount %s: %v: %s; unmounting lazily", mnt, err, out)
			_, _ = sbin("umount", "-l", mnt)
		}
	})
	return mnt, dev, img
}

// The snapshot of a directory on a loop-device filesystem names the loop
// device with its backing file and the disk under it, the scheduler and
// readahead, and the filesystem's format.
func TestTakeOnLoopFilesystems(t *testing.T) {
	cases := []struct {
		fstype  string
		sizeMiB int64
		feature string // one of the default features mkfs enables
		source  string // how the format is read
	}{
		{"ext4", 64, "has_journal", "dumpe2fs -h "},
		{"xfs", 300, "crc", "xfs_info "}, // mkfs.xfs takes no less than 300 MiB
		{"btrfs", 256, "no_holes", "/sys/fs/btrfs/"},
	}
	for _, c := range cases {
		t.Run(c.fstype, func(t *testing.T) {
			mnt, dev, img := loopFS(t, c.fstype, c.sizeMiB)
			data := filepath.Join(mnt, "pgdata")
			if err := os.Mkdir(data, 0o700); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			s := Take(context.Background(), Options{DataDir: data, Version: "test"})
			took := time.Since(start)
			if len(s.Warnings) > 0 {
				t.Errorf("warnings: %q", s.Warnings)
			}
			d := s.DataDir
			if d == nil || d.FSType != c.fstype || d.Block == nil {
				t.Fatalf("data dir: %+v", d)
			}
			b := d.Block
			realImg, _ := filepath.EvalSymlinks(img)
			if "/dev/"+b.Name != dev || b.Kind != "loop" || (b.BackingFile != img && b.BackingFile != realImg) || b.SizeBytes != c.sizeMiB<<20 {
				t.Errorf("device %+v, want %s backed by %s", b, dev, img)
			}
			if b.Queue == nil || b.Queue.ReadAheadKB <= 0 || b.Queue.ReadAheadSectors != 2*b.Queue.ReadAheadKB ||
				b.Queue.LogicalBlock == 0 || b.Queue.MaxSectorsKB == 0 {
				t.Errorf("queue %+v", b.Queue)
			}
			if sched := b.SchedulerLine(); !strings.HasPrefix(sched, "loop ") || !strings.Contains(sched, "readahead ") {
				t.Errorf("scheduler line %q", sched)
			}
			if len(b.Lower) != 1 || b.Lower[0].Queue == nil {
				t.Errorf("the device under the loop file is not described: %+v", b.Lower)
			}
			ff := d.Features
			if ff == nil || !strings.HasPrefix(ff.Source, c.source) || !slices.Contains(ff.Features, c.feature) || ff.BlockSize == 0 {
				t.Errorf("features %+v", ff)
			}
			t.Logf("%s, %s in %s\n%s\n%s\n%s\n%s", c.fstype, b.Name, took, b.DeviceLine(), b.SchedulerLine(), b.QueueLine(), ff.Line())
		})
	}
}
