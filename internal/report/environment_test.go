package report

import (
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/store"
)

// loopEnv is a version 2 snapshot of a data directory on a loop device
// whose readahead is ra KiB, over a virtio disk.
func loopEnv(fstype string, ra int64) *envinfo.Snapshot {
	disk := &envinfo.Block{Name: "vda", MajMin: "254:0", Kind: "disk", Vendor: "0x1af4", SizeBytes: 256 << 30,
		Queue: &envinfo.Queue{Scheduler: "mq-deadline", ReadAheadKB: 8192, ReadAheadSectors: 16384, Rotational: true,
			NrRequests: 256, MaxSectorsKB: 4096, LogicalBlock: 512, PhysicalBlock: 4096, WriteCache: "write back", DiscardMaxBytes: 1 << 30}}
	loop := &envinfo.Block{Name: "loop3", MajMin: "7:3", Kind: "loop", BackingFile: "/var/tmp/tb/" + fstype + ".img", SizeBytes: 300 << 20,
		Queue: &envinfo.Queue{Scheduler: "none", ReadAheadKB: ra, ReadAheadSectors: 2 * ra, Rotational: true,
			NrRequests: 128, MaxSectorsKB: 1280, LogicalBlock: 512, PhysicalBlock: 512, WriteCache: "write back", DiscardMaxBytes: 4294966784},
		Lower: []*envinfo.Block{disk}}
	ff := &envinfo.FSFeatures{Source: "xfs_info /mnt/tb", Features: []string{"crc", "finobt", "reflink"}, BlockSize: 4096,
		Details: map[string]string{"inode_size": "512", "log": "internal"}}
	if fstype == "ext4" {
		ff = &envinfo.FSFeatures{Source: "dumpe2fs -h /dev/loop3", Features: []string{"has_journal", "extent", "64bit"}, BlockSize: 4096,
			Details: map[string]string{"inode_size": "256"}}
	}
	return &envinfo.Snapshot{Version: envinfo.SnapshotVersion, Host: envinfo.Host{Hostname: "lab"},
		DataDir: &envinfo.FS{Path: "/mnt/tb/data", MountPoint: "/mnt/tb", FSType: fstype, Source: "/dev/loop3", Device: "7:3",
			Options: "rw,noatime", Block: loop, Features: ff}}
}

func envRowNamed(rows []envRow, name string) *envRow {
	for i := range rows {
		if rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}

// The environment table shows the device, scheduler and readahead, queue
// and filesystem features of each run, red where they differ, and a run
// stored before they were recorded as "(not recorded)".
func TestEnvironmentStorageRows(t *testing.T) {
	run := func(id int64, env *envinfo.Snapshot) *runData {
		return &runData{Run: &store.Run{ID: id}, Env: env}
	}
	old := loopEnv("ext4", 128)
	old.Version, old.DataDir.Block, old.DataDir.Features = 0, nil, nil
	d := &dataset{Runs: []*runData{run(1, loopEnv("ext4", 128)), run(2, loopEnv("ext4", 128)), run(3, loopEnv("xfs", 4096)), run(4, old)}}
	env, _, _ := environment(d)

	dev := envRowNamed(env, "Device")
	if dev == nil || !dev.Differs || len(dev.Values) != 3 ||
		dev.Values[0].Value != "loop (file /var/tmp/tb/ext4.img, 300.0 MiB) on vda (0x1af4, 256.0 GiB, rotational)" ||
		dev.Values[0].Runs != "1, 2" || dev.Values[2].Value != "(not recorded)" || dev.Values[2].Runs != "4" {
		t.Errorf("Device row: %+v", dev)
	}
	sched := envRowNamed(env, "Scheduler, readahead")
	if sched == nil || !sched.Differs ||
		sched.Values[0].Value != "loop none, readahead 128 KiB (256 sectors); vda mq-deadline, readahead 8192 KiB (16384 sectors)" ||
		sched.Values[1].Value != "loop none, readahead 4096 KiB (8192 sectors); vda mq-deadline, readahead 8192 KiB (16384 sectors)" ||
		sched.Values[1].Runs != "3" {
		t.Errorf("Scheduler row: %+v", sched)
	}
	q := envRowNamed(env, "Queue")
	if q == nil || !strings.HasPrefix(q.Values[0].Value, "loop: nr_requests 128, max_sectors_kb 1280, block 512/512 (logical/physical), write back cache, discard; vda: ") {
		t.Errorf("Queue row: %+v", q)
	}
	ff := envRowNamed(env, "Filesystem features")
	if ff == nil || !ff.Differs || ff.Values[0].Value != "block 4096; has_journal extent 64bit; inode_size 256" ||
		ff.Values[1].Value != "block 4096; crc finobt reflink; inode_size 512, log internal" {
		t.Errorf("Filesystem features row: %+v", ff)
	}

	// The same storage for every run: one value, not red.
	d = &dataset{Runs: []*runData{run(1, loopEnv("xfs", 256)), run(2, loopEnv("xfs", 256))}}
	env, _, _ = environment(d)
	for _, name := range []string{"Device", "Scheduler, readahead", "Queue", "Filesystem features"} {
		if r := envRowNamed(env, name); r == nil || r.Differs || len(r.Values) != 1 || r.Values[0].Runs != "" {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// Runs stored before version 2 only: no such rows at all.
	d = &dataset{Runs: []*runData{run(1, old), run(2, old)}}
	env, _, _ = environment(d)
	for _, name := range []string{"Device", "Scheduler, readahead", "Queue", "Filesystem features"} {
		if r := envRowNamed(env, name); r != nil {
			t.Errorf("%s shown for old runs: %+v", name, r)
		}
	}
}

// A round trip that moves by microseconds between runs, and a GOMAXPROCS
// that follows the clients, are shown with their runs but not marked as a
// difference in configuration (issue 34); a server elsewhere, or another
// tunebench, is.
func TestEnvironmentMeasuredRowsNotDifferences(t *testing.T) {
	run := func(id int64, addr string, rtt float64, procs int, version string) *runData {
		env := loopEnv("xfs", 256)
		env.Server = &envinfo.Server{Address: addr, RTTMs: rtt, RTTSamples: 20}
		env.Driver = envinfo.Driver{TunebenchVersion: version, GoVersion: "go1.26.8", GOMAXPROCS: procs}
		return &runData{Run: &store.Run{ID: id}, Env: env}
	}
	d := &dataset{Runs: []*runData{run(1, "127.0.0.1:5432", 0.061, 1, "a1"), run(2, "127.0.0.1:5432", 0.083, 2, "a1"), run(3, "127.0.0.1:5432", 0.070, 4, "a1")}}
	env, _, _ := environment(d)
	for _, name := range []string{"Server", "Driver"} {
		r := envRowNamed(env, name)
		if r == nil || r.Differs || len(r.Values) != 3 || r.Values[0].Runs != "1" {
			t.Errorf("%s: %+v, want its 3 values shown with their runs, not marked", name, r)
		}
	}
	d = &dataset{Runs: []*runData{run(1, "127.0.0.1:5432", 0.061, 2, "a1"), run(2, "10.0.0.5:5432", 0.5, 2, "b2")}}
	env, _, _ = environment(d)
	for _, name := range []string{"Server", "Driver"} {
		if r := envRowNamed(env, name); r == nil || !r.Differs {
			t.Errorf("%s: %+v, want it marked", name, r)
		}
	}
}
