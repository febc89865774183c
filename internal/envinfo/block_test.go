package envinfo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeSys builds a /sys tree in a temporary directory. Its files hold the
// values of this kind of machine (a virtio disk vda, loop devices) and of
// the devices it lacks (an NVMe disk with a partition, device mapper,
// software RAID, a mounted btrfs).
type fakeSys struct {
	t    *testing.T
	root string
}

func newFakeSys(t *testing.T) *fakeSys {
	t.Helper()
	return &fakeSys{t: t, root: t.TempDir()}
}

func (f *fakeSys) file(path, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeSys) link(path, target string) {
	f.t.Helper()
	p := filepath.Join(f.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		f.t.Fatal(err)
	}
}

// queue writes a queue directory; rot is "0" or "1".
func (f *fakeSys) queue(dev, sched, ra, rot, nr, maxkb, lbs, pbs, wc, discard string) {
	for name, v := range map[string]string{
		"scheduler": sched, "read_ahead_kb": ra, "rotational": rot, "nr_requests": nr, "max_sectors_kb": maxkb,
		"logical_block_size": lbs, "physical_block_size": pbs, "write_cache": wc, "discard_max_bytes": discard,
	} {
		f.file(filepath.Join(dev, "queue", name), v)
	}
}

// device writes a device directory under devices/ with its dev and size
// files, and links dev/block/MAJ:MIN (and block/NAME for whole devices).
func (f *fakeSys) device(dir, majMin, sectors string) {
	f.file(filepath.Join(dir, "dev"), majMin)
	f.file(filepath.Join(dir, "size"), sectors)
	f.file(filepath.Join(dir, "ro"), "0")
	rel, err := filepath.Rel(filepath.Join(f.root, "dev", "block"), filepath.Join(f.root, dir))
	if err != nil {
		f.t.Fatal(err)
	}
	f.link(filepath.Join("dev", "block", majMin), rel)
}

func buildFakeSys(t *testing.T) *fakeSys {
	f := newFakeSys(t)
	// vda, as this machine's /sys/block/vda shows it (virtio: a vendor id,
	// no model), with a partition.
	vda := "devices/pci0000:00/0000:00:02.0/virtio1/block/vda"
	f.device(vda, "254:0", "536870912")
	f.file(vda+"/device/vendor", "0x1af4")
	f.queue(vda, "none [mq-deadline] kyber bfq", "8192", "1", "256", "4096", "512", "4096", "write back", "1073741824")
	f.device(vda+"/vda1", "254:1", "2097152")
	f.file(vda+"/vda1/partition", "1")
	// nvme0n1p1 under a device-mapper volume.
	nvme := "devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1"
	f.device(nvme, "259:0", "1953525168")
	f.file(nvme+"/device/model", "Samsung SSD 980 1TB                     ")
	f.queue(nvme, "[none] mq-deadline", "128", "0", "1023", "128", "512", "512", "write back", "2199023255040")
	f.device(nvme+"/nvme0n1p1", "259:1", "1953523120")
	f.file(nvme+"/nvme0n1p1/partition", "1")
	dm := "devices/virtual/block/dm-0"
	f.device(dm, "253:0", "1048576000")
	f.file(dm+"/dm/name", "vg0-pgdata")
	f.queue(dm, "none", "4096", "0", "128", "128", "512", "512", "write back", "2199023255040")
	f.link(dm+"/slaves/nvme0n1p1", "../../../../pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/nvme0n1p1")
	// md0: RAID 1 of two SATA disks with no queue-level discard.
	for _, d := range []struct{ name, majMin, dir string }{
		{"sda", "8:0", "devices/pci0000:00/0000:00:1f.2/ata1/block/sda"},
		{"sdb", "8:16", "devices/pci0000:00/0000:00:1f.2/ata2/block/sdb"},
	} {
		f.device(d.dir, d.majMin, "7814037168")
		f.file(d.dir+"/device/model", "ST4000NM0035-1V4")
		f.file(d.dir+"/device/vendor", "ATA     ")
		f.queue(d.dir, "mq-deadline [bfq] none", "128", "1", "64", "1280", "512", "4096", "write through", "0")
		f.link("devices/virtual/block/md0/slaves/"+d.name, "../../../../"+strings.TrimPrefix(d.dir, "devices/"))
	}
	md := "devices/virtual/block/md0"
	f.device(md, "9:0", "7813774336")
	f.file(md+"/md/level", "raid1")
	f.file(md+"/md/chunk_size", "0")
	f.queue(md, "none", "128", "1", "128", "1280", "512", "4096", "write through", "0")
	// loop2 (this machine's loop device values), its file on vda1.
	loop := "devices/virtual/block/loop2"
	f.device(loop, "7:2", "524288")
	f.file(loop+"/loop/backing_file", "/srv/images/b.img")
	f.file(loop+"/loop/dio", "1")
	f.queue(loop, "[none] mq-deadline kyber bfq", "2560", "1", "128", "1280", "512", "512", "write back", "4294966784")
	// the btrfs on loop2
	fsid := "fs/btrfs/389d1595-a4fa-49e9-b3ae-90b41bdbdaee"
	for _, feat := range []string{"extended_iref", "free_space_tree", "no_holes", "skinny_metadata"} {
		f.file(fsid+"/features/"+feat, "0x0")
	}
	f.file(fsid+"/sectorsize", "4096")
	f.file(fsid+"/nodesize", "16384")
	f.file(fsid+"/checksum", "crc32c (crc32c-lib)")
	f.link(fsid+"/devices/loop2", "../../../../devices/virtual/block/loop2")
	f.file(fsid+"/allocation/data/single/total_bytes", "8388608")
	f.file(fsid+"/allocation/data/total_bytes", "8388608")
	f.file(fsid+"/allocation/metadata/dup/total_bytes", "33554432")
	f.file(fsid+"/allocation/system/dup/total_bytes", "8388608")
	return f
}

// source reads the fake tree: /dev nodes exist for every device, the
// backing file of loop2 is on vda1, /dev/loop2 is 7:2, and commands print
// what out holds for them (the captured outputs by default).
func (f *fakeSys) source(t *testing.T, out map[string]string) storageSource {
	devDir := t.TempDir()
	for _, n := range []string{"vda", "vda1", "nvme0n1p1", "dm-0", "md0", "loop2"} {
		if err := os.WriteFile(filepath.Join(devDir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return storageSource{
		sysRoot: f.root,
		devDir:  devDir,
		devNumber: func(p string) (string, bool) {
			mm, ok := map[string]string{"/dev/loop2": "7:2", "/dev/md0": "9:0"}[p]
			return mm, ok
		},
		fileDevice: func(p string) (string, bool) {
			if strings.HasPrefix(p, "/srv/images/") {
				return "254:1", true
			}
			return "", false
		},
		run: func(_ context.Context, name string, args ...string) ([]byte, error) {
			cmd := name + " " + strings.Join(args, " ")
			cmd = strings.ReplaceAll(cmd, devDir, "/dev")
			v, ok := out[cmd]
			if !ok {
				return nil, errors.New("unexpected command " + cmd)
			}
			if strings.HasPrefix(v, "ERR ") {
				if v == "ERR missing" {
					return nil, fmt.Errorf("%s %w", name, errNoTool)
				}
				return nil, errors.New(strings.TrimPrefix(v, "ERR "))
			}
			return []byte(v), nil
		},
	}
}

func captured(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fsfeatures", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSysBlockKinds(t *testing.T) {
	f := buildFakeSys(t)
	src := f.source(t, nil)
	cases := []struct {
		majMin                 string
		wantName, kind, disk   string
		size                   int64
		line, sched, queueLine string
	}{
		{"254:0", "vda", "disk", "", 256 << 30,
			"vda (0x1af4, 256.0 GiB, rotational)",
			"vda mq-deadline, readahead 8192 KiB (16384 sectors)",
			"vda: nr_requests 256, max_sectors_kb 4096, block 512/4096 (logical/physical), write back cache, discard"},
		{"254:1", "vda1", "partition", "vda", 1 << 30,
			"vda1 (partition of vda, 0x1af4, 1.0 GiB, rotational)",
			"vda1 mq-deadline, readahead 8192 KiB (16384 sectors)", ""},
		{"253:0", "dm-0", "dm", "", 1048576000 * 512,
			"dm-0 (device mapper vg0-pgdata, 500.0 GiB, non-rotational) on nvme0n1p1 (partition of nvme0n1, Samsung SSD 980 1TB, 931.5 GiB, non-rotational)",
			"dm-0 none, readahead 4096 KiB (8192 sectors); nvme0n1p1 none, readahead 128 KiB (256 sectors)", ""},
		{"9:0", "md0", "md", "", 7813774336 * 512,
			"md0 (software RAID raid1, 3.6 TiB, rotational) on sda (ATA ST4000NM0035-1V4, 3.6 TiB, rotational) + sdb (ATA ST4000NM0035-1V4, 3.6 TiB, rotational)",
			"md0 none, readahead 128 KiB (256 sectors); sda bfq, readahead 128 KiB (256 sectors); sdb bfq, readahead 128 KiB (256 sectors)",
			"md0: nr_requests 128, max_sectors_kb 1280, block 512/4096 (logical/physical), write through cache, no discard; " +
				"sda: nr_requests 64, max_sectors_kb 1280, block 512/4096 (logical/physical), write through cache, no discard; " +
				"sdb: nr_requests 64, max_sectors_kb 1280, block 512/4096 (logical/physical), write through cache, no discard"},
		{"7:2", "loop2", "loop", "", 256 << 20,
			"loop (file /srv/images/b.img, direct I/O, 256.0 MiB) on vda1 (partition of vda, 0x1af4, 1.0 GiB, rotational)",
			"loop none, readahead 2560 KiB (5120 sectors); vda1 mq-deadline, readahead 8192 KiB (16384 sectors)", ""},
	}
	for _, c := range cases {
		b, err := src.sysBlock(c.majMin, 0)
		if err != nil {
			t.Errorf("%s: %v", c.majMin, err)
			continue
		}
		if b.Name != c.wantName || b.Kind != c.kind || b.Disk != c.disk || b.SizeBytes != c.size || b.MajMin != c.majMin {
			t.Errorf("%s: %+v", c.majMin, b)
		}
		if got := b.DeviceLine(); got != c.line {
			t.Errorf("%s device:\n got %q\nwant %q", c.majMin, got, c.line)
		}
		if got := b.SchedulerLine(); got != c.sched {
			t.Errorf("%s scheduler:\n got %q\nwant %q", c.majMin, got, c.sched)
		}
		if got := b.QueueLine(); c.queueLine != "" && got != c.queueLine {
			t.Errorf("%s queue:\n got %q\nwant %q", c.majMin, got, c.queueLine)
		}
	}

	loop, _ := src.sysBlock("7:2", 0)
	want := Queue{Scheduler: "none", ReadAheadKB: 2560, ReadAheadSectors: 5120, Rotational: true, NrRequests: 128,
		MaxSectorsKB: 1280, LogicalBlock: 512, PhysicalBlock: 512, WriteCache: "write back", DiscardMaxBytes: 4294966784}
	if loop.Queue == nil || *loop.Queue != want {
		t.Errorf("loop2 queue %+v, want %+v", loop.Queue, want)
	}
	if loop.BackingFile != "/srv/images/b.img" || !loop.DirectIO || len(loop.Lower) != 1 || loop.Lower[0].Name != "vda1" {
		t.Errorf("loop2: %+v", loop)
	}
	if _, err := src.sysBlock("8:99", 0); err == nil || !strings.Contains(err.Error(), "no block device 8:99") {
		t.Errorf("unknown device: %v", err)
	}
}

func TestStorageInfoByFilesystem(t *testing.T) {
	f := buildFakeSys(t)
	outputs := map[string]string{
		"dumpe2fs -h /dev/vda1": captured(t, "dumpe2fs-ext4-loop.txt"),
		"xfs_info /pg":          captured(t, "xfs_info.txt"),
	}
	src := f.source(t, outputs)

	ext4 := &FS{Path: "/data/pg", MountPoint: "/data", FSType: "ext4", Source: "/dev/root", Device: "254:1"}
	if w := src.storage(context.Background(), ext4); len(w) != 0 {
		t.Errorf("ext4 warnings: %v", w)
	}
	if ext4.Block == nil || ext4.Block.Name != "vda1" || ext4.Features == nil ||
		ext4.Features.Source != "dumpe2fs -h "+filepath.Join(src.devDir, "vda1") || ext4.Features.BlockSize != 1024 {
		t.Errorf("ext4: %+v %+v", ext4.Block, ext4.Features)
	}

	xfs := &FS{Path: "/pg/data", MountPoint: "/pg", FSType: "xfs", Source: "/dev/mapper/vg0-pgdata", Device: "253:0"}
	if w := src.storage(context.Background(), xfs); len(w) != 0 {
		t.Errorf("xfs warnings: %v", w)
	}
	if xfs.Block == nil || xfs.Block.DMName != "vg0-pgdata" || xfs.Features == nil || xfs.Features.BlockSize != 4096 {
		t.Errorf("xfs: %+v %+v", xfs.Block, xfs.Features)
	}

	// btrfs: an anonymous device number, the device named by the source;
	// the format from /sys/fs/btrfs, no command.
	btrfs := &FS{Path: "/b/x", MountPoint: "/b", FSType: "btrfs", Source: "/dev/loop2", Device: "0:39"}
	if w := src.storage(context.Background(), btrfs); len(w) != 0 {
		t.Errorf("btrfs warnings: %v", w)
	}
	wantB := &FSFeatures{Source: "/sys/fs/btrfs/389d1595-a4fa-49e9-b3ae-90b41bdbdaee",
		Features: []string{"extended_iref", "free_space_tree", "no_holes", "skinny_metadata"}, BlockSize: 4096,
		Details: map[string]string{"node_size": "16384", "checksum": "crc32c", "devices": "1",
			"data_profile": "single", "metadata_profile": "dup", "system_profile": "dup"}}
	if btrfs.Block == nil || btrfs.Block.Name != "loop2" || !reflect.DeepEqual(btrfs.Features, wantB) {
		t.Errorf("btrfs: %+v\n%+v", btrfs.Block, btrfs.Features)
	}
	if got, want := btrfs.Features.Line(), "block 4096; extended_iref free_space_tree no_holes skinny_metadata; "+
		"checksum crc32c, data_profile single, devices 1, metadata_profile dup, node_size 16384, system_profile dup"; got != want {
		t.Errorf("btrfs line:\n got %q\nwant %q", got, want)
	}

	// A btrfs /sys/fs/btrfs does not list: its superblock.
	outputs["btrfs inspect-internal dump-super /dev/md0"] = captured(t, "btrfs-dump-super.txt")
	btrfs = &FS{Path: "/r/x", MountPoint: "/r", FSType: "btrfs", Source: "/dev/md0", Device: "0:40"}
	if w := src.storage(context.Background(), btrfs); len(w) != 0 {
		t.Errorf("btrfs on md0 warnings: %v", w)
	}
	if btrfs.Block == nil || btrfs.Block.Name != "md0" || btrfs.Features == nil ||
		btrfs.Features.Source != "btrfs inspect-internal dump-super "+filepath.Join(src.devDir, "md0") || len(btrfs.Features.Features) != 6 {
		t.Errorf("btrfs on md0: %+v %+v", btrfs.Block, btrfs.Features)
	}

	// No block device: neither part, no warning.
	tmpfs := &FS{Path: "/dev/shm/x", MountPoint: "/dev/shm", FSType: "tmpfs", Source: "tmpfs", Device: "0:23"}
	if w := src.storage(context.Background(), tmpfs); len(w) != 0 || tmpfs.Block != nil || tmpfs.Features != nil {
		t.Errorf("tmpfs: %v %+v %+v", w, tmpfs.Block, tmpfs.Features)
	}

	// What cannot be read is a warning, and the rest is kept.
	outputs["dumpe2fs -h /dev/vda1"] = "ERR missing"
	outputs["xfs_info /pg"] = "ERR xfs_info: /pg is not a mounted XFS filesystem"
	ext4 = &FS{Path: "/data/pg", MountPoint: "/data", FSType: "ext4", Source: "/dev/vda1", Device: "254:1"}
	w := src.storage(context.Background(), ext4)
	if len(w) != 1 || w[0] != "ext4 features: dumpe2fs -h "+filepath.Join(src.devDir, "vda1")+": dumpe2fs not installed (install e2fsprogs)" || ext4.Block == nil {
		t.Errorf("missing dumpe2fs: %q %+v", w, ext4.Block)
	}
	xfs = &FS{Path: "/pg/data", MountPoint: "/pg", FSType: "xfs", Source: "/dev/dm-0", Device: "253:0"}
	w = src.storage(context.Background(), xfs)
	if len(w) != 1 || w[0] != "xfs features: xfs_info /pg: xfs_info: /pg is not a mounted XFS filesystem" || xfs.Features != nil {
		t.Errorf("failing xfs_info: %q", w)
	}
	gone := &FS{Path: "/x", MountPoint: "/x", FSType: "ext4", Source: "/dev/sdz1", Device: "8:99"}
	w = src.storage(context.Background(), gone)
	if len(w) != 2 || !strings.HasPrefix(w[0], "block device: no block device 8:99 under ") ||
		w[1] != "ext4 features: no device node to read with dumpe2fs" {
		t.Errorf("unknown device: %q", w)
	}
}

func TestRunTool(t *testing.T) {
	if _, err := lookTool("sh"); err != nil {
		t.Skip("no sh")
	}
	out, err := runTool(context.Background(), "sh", "-c", "echo out; echo ignored >&2")
	if err != nil || string(out) != "out\n" {
		t.Errorf("%q, %v", out, err)
	}
	_, err = runTool(context.Background(), "sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3")
	if err == nil || err.Error() != "the reason" {
		t.Errorf("failure: %v", err)
	}
	_, err = runTool(context.Background(), "tunebench-no-such-tool")
	if !errors.Is(err, errNoTool) {
		t.Errorf("missing tool: %v", err)
	}
	out, err = runTool(context.Background(), "sh", "-c", "head -c 1000000 /dev/zero")
	if err != nil || len(out) != toolOutputLimit {
		t.Errorf("output cap: %d bytes, %v", len(out), err)
	}
}

func TestRunToolTimeout(t *testing.T) {
	if _, err := lookTool("sleep"); err != nil {
		t.Skip("no sleep")
	}
	start := time.Now()
	_, err := runTool(context.Background(), "sleep", "30")
	if err == nil || !strings.Contains(err.Error(), "no answer within 2s") {
		t.Errorf("timeout: %v", err)
	}
	if took := time.Since(start); took > toolTimeout+2*time.Second {
		t.Errorf("took %s", took)
	}
}
