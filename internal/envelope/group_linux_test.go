//go:build linux

package envelope

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/proc"
)

// These tests make real cgroups: they need root and a cgroup hierarchy
// with the controllers each envelope needs, and skip saying which is
// missing otherwise.

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creating cgroups and loop devices")
	}
}

func mustParse(t *testing.T, s Spec) *Envelope {
	t.Helper()
	e, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// newGroup creates the group, skipping when no hierarchy can hold it, and
// closes it when the test ends (also when it fails), checking that its
// directories are gone.
func newGroup(t *testing.T, e *Envelope) *Group {
	t.Helper()
	needRoot(t)
	if _, err := Probe(e); err != nil {
		t.Skipf("this machine cannot hold the envelope: %v", err)
	}
	g, err := Create(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndCheck(t, g) })
	return g
}

func closeAndCheck(t *testing.T, g *Group) {
	t.Helper()
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, p := range g.Paths() {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Close (%v)", p, err)
		}
	}
}

func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s", p)
		}
	}
}

// writeUncached writes size bytes to path (alone in its directory) and
// drops them from the page cache, so a later read charges its cache to the
// reader's cgroup.
func writeUncached(t *testing.T, path string, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	for range size / len(buf) {
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := EvictCache(filepath.Dir(path)); err != nil || n != int64(size) {
		t.Fatalf("EvictCache: %d bytes, %v", n, err)
	}
}

// The memory limit counts the page cache: reading a file four times the
// limit keeps the group's usage (cache included) under the limit, and the
// read completes.
func TestMemoryLimitHoldsPageCache(t *testing.T) {
	needRoot(t)
	need(t, "dd")
	const limit, size = 64 << 20, 256 << 20
	file := filepath.Join(t.TempDir(), "big")
	writeUncached(t, file, size)
	g := newGroup(t, mustParse(t, Spec{Name: "mem-test", Memory: "64MiB"}))

	cmd := exec.Command("dd", "if="+file, "of=/dev/null", "bs=1M")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := g.Command(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var sampled, samples int64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-tick.C:
			if u, err := g.Usage(); err == nil && u.Memory != nil {
				sampled = max(sampled, u.Memory.Bytes)
				samples++
			}
		}
	}
	if err != nil {
		t.Fatalf("dd in the envelope: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("%d bytes", size)) {
		t.Errorf("dd did not read the whole file:\n%s", stderr.String())
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	m := u.Memory
	t.Logf("memory limit %d MiB, file %d MiB: peak %.1f MiB (kernel watermark), highest of %d samples %.1f MiB, cache at the end %.1f MiB, limit hits %d",
		limit>>20, size>>20, float64(m.PeakBytes)/(1<<20), samples, float64(sampled)/(1<<20), float64(m.FileBytes)/(1<<20), m.LimitHits)
	const slack = 1 << 20
	if m.PeakBytes > limit+slack || sampled > limit+slack {
		t.Errorf("usage went over the limit: peak %d, sampled %d, limit %d", m.PeakBytes, sampled, limit)
	}
	// The cache was charged to the group: usage came up to the limit.
	if m.PeakBytes < limit/2 || m.LimitHits == 0 {
		t.Errorf("peak %d is far below the limit %d or the limit was never hit (%d): the page cache was not charged to the group", m.PeakBytes, limit, m.LimitHits)
	}
}

// losetup attaches a loop device to a new file of the size and detaches
// it when the test ends.
func losetup(t *testing.T, size int64, args ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	return attach(t, img, args...)
}

func attach(t *testing.T, img string, args ...string) string {
	t.Helper()
	out, err := exec.Command("losetup", append(append([]string{"-f", "--show"}, args...), img)...).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach a loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// fioIOPS runs fio's 4k random read with direct I/O on dev for the
// duration, in g when it is not nil, and returns the read IOPS.
func fioIOPS(t *testing.T, g *Group, dev string, seconds int) float64 {
	t.Helper()
	cmd := exec.Command("fio", "--name=randread", "--filename="+dev, "--rw=randread", "--bs=4k", "--direct=1",
		"--ioengine=psync", fmt.Sprintf("--runtime=%d", seconds), "--time_based", "--output-format=json")
	if g != nil {
		if err := g.Command(cmd); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fio: %v\n%s", err, stderr.String())
	}
	var res struct {
		Jobs []struct {
			Read struct {
				IOPS float64 `json:"iops"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:] // fio may print notes before the JSON
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) != 1 {
		t.Fatalf("fio output: %v\n%s", err, out)
	}
	return res.Jobs[0].Read.IOPS
}

// An IOPS limit on a loop device holds fio's random reads (direct I/O)
// within 10% of the limit.
func TestIOPSLimitOnLoopDevice(t *testing.T) {
	needRoot(t)
	need(t, "fio", "losetup")
	dev := losetup(t, 128<<20)
	const limit = 200
	free := fioIOPS(t, nil, dev, 1)
	if free < 2*limit {
		t.Skipf("the loop device does only %.0f IOPS without a limit: too slow to show a limit of %d", free, limit)
	}
	g := newGroup(t, mustParse(t, Spec{Name: "iops-test", IO: []IOSpec{{Device: dev, ReadIOPS: fmt.Sprint(limit)}}}))
	got := fioIOPS(t, g, dev, 5)
	u, _ := g.Usage()
	t.Logf("%s: %.0f IOPS without a limit; %.1f IOPS under a read limit of %d (%+.1f%%); the group's I/O: %+v; record: %s",
		dev, free, got, limit, 100*(got-limit)/limit, u.IO, g.Describe().Brief())
	if math.Abs(got-limit) > 0.10*limit {
		t.Errorf("%.1f IOPS under a limit of %d: more than 10%% off", got, limit)
	}
	if len(u.IO) == 0 || u.IO[0].ReadIOs < 4*limit {
		t.Errorf("the group's I/O counters do not show fio's reads: %+v", u.IO)
	}
}

// A quota of 0.5 CPUs holds a busy loop to half of one CPU.
func TestCPUQuota(t *testing.T) {
	g := newGroup(t, mustParse(t, Spec{Name: "cpu-test", CPUs: "0.5"}))
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := g.Command(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(200 * time.Millisecond) // past the shell's start
	u0, _ := g.Usage()
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	u1, err := g.Usage()
	wall := time.Since(t0)
	if err != nil || u1.CPU == nil {
		t.Fatalf("usage: %+v %v", u1, err)
	}
	share := float64(u1.CPU.Time-u0.CPU.Time) / float64(wall)
	t.Logf("a busy loop under cpus 0.5 got %.3f of one CPU over %v (throttled in %d of %d periods)",
		share, wall.Round(time.Millisecond), u1.CPU.ThrottledPeriod, u1.CPU.Periods)
	// The limit: never above the quota.
	if share > 0.5*1.15 {
		t.Errorf("%.3f of one CPU, want at most 0.5 + 15%%", share)
	}
	// Up to it, when the quota was what held the loop back (throttled in
	// most periods); on a machine busy with other work the loop gets less
	// than its quota for lack of CPU, not because of the limit.
	busy := u1.CPU.Periods > 0 && u1.CPU.ThrottledPeriod*2 < u1.CPU.Periods
	switch {
	case !busy && share < 0.5*0.85:
		t.Errorf("%.3f of one CPU, want 0.5 ± 15%%", share)
	case busy:
		t.Logf("the machine is busy (throttled in %d of %d periods): the lower bound is not checked", u1.CPU.ThrottledPeriod, u1.CPU.Periods)
	}
	if u1.CPU.ThrottledPeriod == 0 && share > 0.45 {
		t.Error("no throttled periods")
	}
}

// A child that runs as another user (the managed server's case) starts in
// the group, and the record names the limits as applied.
func TestCommandAsOtherUser(t *testing.T) {
	g := newGroup(t, mustParse(t, Spec{Name: "user-test", Memory: "256MiB", CPUs: "1", Cores: "1"}))
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := g.Command(cmd); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v", err)
	}
	rel := ":/" + ParentName + "/" + g.Name()
	if n := strings.Count(string(out), rel+"\n"); n != len(g.Paths()) {
		t.Errorf("the child is in %d of the group's %d directories %v:\n%s", n, len(g.Paths()), g.Paths(), out)
	}
	r := g.Describe()
	b, _ := json.Marshal(r)
	t.Logf("record: %s", b)
	if r.Cpuset == "" || r.MemoryBytes != 256<<20 || r.CPUPeriodUS != 100000 {
		t.Errorf("record %+v", r)
	}
	if g.Version() == 1 && r.Files["memory.limit_in_bytes"] != "268435456" {
		t.Errorf("memory.limit_in_bytes read back as %q", r.Files["memory.limit_in_bytes"])
	}
}

// Close moves a process still in the group out (it keeps running) and
// removes the directories; Add moves a running process in.
func TestCloseMovesProcessesOut(t *testing.T) {
	needRoot(t)
	e := mustParse(t, Spec{Name: "close-test", Memory: "128MiB"})
	if _, err := Probe(e); err != nil {
		t.Skip(err)
	}
	g, err := Create(e)
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	if err := g.Add(sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Pids(); len(pids) != 1 || pids[0] != sleeper.Process.Pid {
		t.Errorf("Pids = %v, want [%d]", pids, sleeper.Process.Pid)
	}
	closeAndCheck(t, g)
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", sleeper.Process.Pid))
	if strings.Contains(string(b), ParentName) {
		t.Errorf("the process is still in a tunebench cgroup:\n%s", b)
	}
	if err := sleeper.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process did not survive Close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := g.Command(exec.Command("true")); err == nil {
		t.Error("Command after Close: no error")
	}
}

// A write the kernel refuses part way through Create leaves nothing.
func TestCreateFailureRemovesAll(t *testing.T) {
	needRoot(t)
	e := mustParse(t, Spec{Name: "fail-test", Memory: "128MiB", CPUs: "1"})
	if _, err := Probe(e); err != nil {
		t.Skip(err)
	}
	sys, err := currentSystem()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	_, err = create(e, sys, os.Getpid(), "/sys", func(g *Group) []write {
		paths = g.Paths()
		return []write{{dir: g.dirs[len(g.dirs)-1], file: "cgroup.procs", value: "not-a-pid"}}
	})
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error: %v", err)
	if len(paths) < 2 {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", p)
		}
	}
}

// Sweep removes the empty groups of a process that is gone, and keeps
// those of a live one.
func TestSweep(t *testing.T) {
	needRoot(t)
	e := mustParse(t, Spec{Name: "sweep-test", Memory: "128MiB", CPUs: "1"})
	if _, err := Probe(e); err != nil {
		t.Skip(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	sys, _ := currentSystem()
	left, err := create(e, sys, gone.Process.Pid, "/sys", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A process the killed owner started in its group outlives it (a
	// server): Sweep asks it to end before removing the group.
	server := exec.Command("sleep", "60")
	if err := left.Command(server); err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		left.Close()
		t.Fatal(err)
	}
	go server.Wait()
	t.Cleanup(func() { server.Process.Kill() })
	for range 100 { // v1: the shell joins the group, then execs
		if pids, _ := left.Pids(); slices.Contains(pids, server.Process.Pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	live := newGroup(t, e)
	removed, err := Sweep()
	if err != nil {
		t.Errorf("Sweep: %v", err)
	}
	if proc.Alive(server.Process.Pid, 0) {
		t.Errorf("the process left in %s still runs", left.Name())
	}
	if !strings.Contains(strings.Join(removed, " "), fmt.Sprintf("stopped pids [%d]", server.Process.Pid)) {
		t.Errorf("removed %v does not say it stopped %d", removed, server.Process.Pid)
	}
	for _, p := range left.Paths() {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Sweep left %s (removed %v)", p, removed)
			left.Close()
		}
	}
	for _, p := range live.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Sweep removed the live group's %s", p)
		}
	}
	t.Logf("swept %v", removed)
}

// The v2 path (CLONE_INTO_CGROUP, one directory), on whatever unified
// hierarchy is mounted: an envelope without limits needs no controller.
func TestV2Group(t *testing.T) {
	g := newGroup(t, mustParse(t, Spec{Name: "v2-test", Cgroup: "v2"}))
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := g.Command(cmd); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "0::/"+ParentName+"/"+g.Name()+"\n") {
		t.Errorf("the child is not in %v:\n%s", g.Paths(), out)
	}
	if u, err := g.Usage(); err != nil || u.CPU == nil {
		t.Errorf("usage %+v %v", u, err)
	}
}

// A partition stands for its disk: the kernel refuses throttling limits
// on a partition (ENODEV).
func TestPartitionLimitGoesOnDisk(t *testing.T) {
	needRoot(t)
	need(t, "losetup", "partx")
	img := filepath.Join(t.TempDir(), "parted.img")
	mbr := make([]byte, 512)
	entry := mbr[446:]
	entry[4] = 0x83                                  // Linux
	binary.LittleEndian.PutUint32(entry[8:], 2048)   // first sector
	binary.LittleEndian.PutUint32(entry[12:], 14336) // 7 MiB
	mbr[510], mbr[511] = 0x55, 0xaa
	if err := os.WriteFile(img, mbr, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 8<<20); err != nil {
		t.Fatal(err)
	}
	dev := attach(t, img, "-P")
	if out, err := exec.Command("partx", "-a", dev).CombinedOutput(); err != nil {
		t.Skipf("partx -a %s: %v: %s", dev, err, out)
	}
	name := filepath.Base(dev)
	b, err := os.ReadFile(filepath.Join("/sys/block", name, name+"p1", "dev"))
	if err != nil {
		t.Skipf("no partition appeared on %s: %v", dev, err)
	}
	part := strings.TrimSpace(string(b))
	t.Cleanup(func() { exec.Command("partx", "-d", dev).Run() })
	diskDev, _ := os.ReadFile(filepath.Join("/sys/block", name, "dev"))

	g := newGroup(t, mustParse(t, Spec{Name: "part-test", IO: []IOSpec{{Device: part, ReadIOPS: "100"}}}))
	r := g.Describe()
	want := Device{Given: part, Dev: strings.TrimSpace(string(diskDev)), Disk: name, Partition: name + "p1", ReadIOPS: 100}
	if len(r.IO) != 1 || r.IO[0] != want {
		t.Errorf("record io %+v, want %+v", r.IO, want)
	}
	t.Logf("record: %s", r.Brief())
	if g.Version() == 1 {
		// The kernel's own answer for the partition itself.
		var blkio string
		for _, d := range g.dirs {
			if slices.Contains(d.controllers, "blkio") {
				blkio = d.path
			}
		}
		err := writeFile(filepath.Join(blkio, "blkio.throttle.read_iops_device"), part+" 100")
		t.Logf("writing the partition %s itself: %v", part, err)
		if !errors.Is(err, syscall.ENODEV) {
			t.Errorf("the kernel took a partition's limit (%v): resolving to the disk may be unneeded", err)
		}
	}
}

// The envelope's own cost: fio's 4k random reads on a loop device with no
// envelope and in an envelope whose limits are far above the need, in
// pairs of 1 s runs (alternating which goes first). Opt-in (about 20 s):
// TUNEBENCH_ENVELOPE_OVERHEAD=1; the figures are in docs/envelopes.md.
func TestEnvelopeOverhead(t *testing.T) {
	if os.Getenv("TUNEBENCH_ENVELOPE_OVERHEAD") == "" {
		t.Skip("opt-in benchmark: set TUNEBENCH_ENVELOPE_OVERHEAD=1")
	}
	needRoot(t)
	need(t, "fio", "losetup")
	dev := losetup(t, 128<<20)
	cpus, _ := allowedCPUs()
	e := mustParse(t, Spec{Name: "overhead", Memory: "8GiB", CPUs: fmt.Sprint(len(cpus)),
		IO: []IOSpec{{Device: dev, ReadIOPS: "10000000", ReadBPS: "100GiB"}}})
	g := newGroup(t, e)
	fioIOPS(t, nil, dev, 1) // warm up
	const pairs = 8
	var free, env, ratios []float64
	for i := range pairs {
		var a, b float64
		if i%2 == 0 {
			a = fioIOPS(t, nil, dev, 1)
			b = fioIOPS(t, g, dev, 1)
		} else {
			b = fioIOPS(t, g, dev, 1)
			a = fioIOPS(t, nil, dev, 1)
		}
		free, env, ratios = append(free, a), append(env, b), append(ratios, b/a)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	slices.Sort(ratios)
	t.Logf("fio randread 4k direct on %s, %d pairs of 1 s runs: no envelope %.0f IOPS (%.0f..%.0f); in %s: %.0f IOPS (%.0f..%.0f); median ratio %.3f (%.3f..%.3f)",
		dev, pairs, mean(free), slices.Min(free), slices.Max(free), g.Describe().Brief(), mean(env), slices.Min(env), slices.Max(env),
		(ratios[pairs/2-1]+ratios[pairs/2])/2, ratios[0], ratios[pairs-1])
}

// Leave moves a process Add moved in back out, while the group stays.
func TestAddLeave(t *testing.T) {
	needRoot(t)
	e := mustParse(t, Spec{Name: "leave-test", Memory: "128MiB"})
	if _, err := Probe(e); err != nil {
		t.Skip(err)
	}
	g := newGroup(t, e)
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := sleeper.Process.Pid
	if err := g.Add(pid); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Pids(); len(pids) != 1 || pids[0] != pid {
		t.Fatalf("after Add: Pids = %v, want [%d]", pids, pid)
	}
	if err := g.Leave(pid); err != nil {
		t.Fatal(err)
	}
	if pids, _ := g.Pids(); len(pids) != 0 {
		t.Errorf("after Leave: Pids = %v, want none", pids)
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if strings.Contains(string(b), ParentName) {
		t.Errorf("the process is still in a tunebench cgroup after Leave:\n%s", b)
	}
}
