package system

import (
	"fmt"
	"strconv"

	"github.com/tunebench/tunebench/internal/machine"

	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestReadGroup(t *testing.T) {
	root := filepath.Join("testdata", "root", "proc")
	g, err := ReadGroup(root, 3177)
	if err != nil {
		t.Fatal(err)
	}
	// The postmaster and its five auxiliary processes; pid 1 is not a child.
	if g.Procs != 6 {
		t.Errorf("procs %d, want 6", g.Procs)
	}
	var ticks uint64
	var private, maxShm uint64
	var rd, wr uint64
	for _, pid := range []string{"3177", "3178", "3179", "3181", "3182", "3183"} {
		st, err := machine.ParseProcStat(read(t, "root/proc/"+pid+"/stat"))
		if err != nil {
			t.Fatal(err)
		}
		ticks += st.UTime + st.STime
		if pid == "3177" {
			ticks += st.CUTime + st.CSTime
		}
		ps, _ := machine.ParseProcStatus(read(t, "root/proc/"+pid+"/status"))
		private += ps.RssAnon + ps.RssFile
		maxShm = max(maxShm, ps.RssShmem)
		pio, _ := machine.ParseProcIO(read(t, "root/proc/"+pid+"/io"))
		rd += pio.ReadBytes
		wr += pio.WriteBytes
	}
	if g.CPUTicks != ticks || g.RSS != private+maxShm || g.Shmem != maxShm || g.ReadBytes != rd || g.WriteBytes != wr || g.IOErr != nil {
		t.Errorf("group %+v; want ticks %d rss %d shm %d read %d write %d", g, ticks, private+maxShm, maxShm, rd, wr)
	}
	if maxShm != 213368*1024 {
		t.Errorf("max shmem %d (the checkpointer's)", maxShm)
	}
	if _, err := ReadGroup(root, 999999); err == nil {
		t.Error("missing root: no error")
	}
	if ppid, err := ParentPID(root, 3181); err != nil || ppid != 3177 {
		t.Errorf("ParentPID = %d, %v", ppid, err)
	}
}

// procCopy copies the test /proc (testdata/root/proc, src) to a temporary
// directory, root, that a test may change.
func procCopy(t *testing.T) (src, root string) {
	t.Helper()
	src, root = filepath.Join("testdata", "root", "proc"), t.TempDir()
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return src, root
}

// TestReadGroupChildren: where the kernel lists a process's children
// (/proc/PID/task/TID/children), the group is read from those lists, not
// from a scan of every process: a process whose stat names the root as
// its parent but that no list names is not read.
func TestReadGroupChildren(t *testing.T) {
	src, root := procCopy(t)
	scanned, err := ReadGroup(root, 3177)
	if err != nil {
		t.Fatal(err)
	}
	// A decoy that only a scan finds, and the lists of the postmaster's
	// two threads (one of them empty).
	decoy := filepath.Join(root, "4000")
	if err := os.CopyFS(decoy, os.DirFS(filepath.Join(src, "3178"))); err != nil {
		t.Fatal(err)
	}
	lists := map[string]string{"3177": "3178 3179 3181 ", "3190": "3182 3183\n"}
	for tid, list := range lists {
		dir := filepath.Join(root, "3177", "task", tid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "children"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "3177", "task", "3191"), 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGroup(root, 3177)
	if err != nil {
		t.Fatal(err)
	}
	if g != scanned {
		t.Errorf("from the children lists %+v, want the scan's %+v (the decoy 4000 read?)", g, scanned)
	}
	// Without the lists, the scan finds the decoy as well.
	if err := os.RemoveAll(filepath.Join(root, "3177", "task")); err != nil {
		t.Fatal(err)
	}
	if g, err := ReadGroup(root, 3177); err != nil || g.Procs != scanned.Procs+1 {
		t.Errorf("scan with the decoy: %d processes (%v), want %d", g.Procs, err, scanned.Procs+1)
	}
	if _, err := ReadGroup(root, 999999); err == nil {
		t.Error("missing root: no error")
	}
}

// TestDeviceForPathHere resolves a real directory on this machine: either a
// device is found and appears in /proc/diskstats, or the error says why.
func TestDeviceForPathHere(t *testing.T) {
	if _, err := os.Stat("/proc/diskstats"); err != nil {
		t.Skip("no /proc/diskstats")
	}
	d, fsys, err := DeviceForPath(t.TempDir())
	if err != nil {
		if !errors.Is(err, machine.ErrNoDevice) {
			t.Fatalf("error %v is not machine.ErrNoDevice", err)
		}
		t.Logf("no device (fine): %v", err)
		return
	}
	b, _ := os.ReadFile("/proc/diskstats")
	m, err := machine.ParseDiskstats(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m[d.Name]; !ok {
		t.Errorf("device %s (for %s) not in /proc/diskstats", d.Label(), fsys.MountPoint)
	}
}

// fakeClock advances one second per call.
func fakeClock() clock {
	t := time.Unix(1000, 0)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func values(pts []sampler.Point) map[string]float64 {
	m := map[string]float64{}
	for _, p := range pts {
		m[p.Series] = p.V
	}
	return m
}

// writeProc copies a snapshot's files into a fake tree's proc directory,
// with pressure files whose totals grow by psi microseconds a snapshot.
func writeProc(t *testing.T, root, snap string, psi uint64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "proc", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "proc", "pressure"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{"stat": "stat", "meminfo": "meminfo", "diskstats": "diskstats", "net_dev": "net/dev"} {
		if err := os.WriteFile(filepath.Join(root, "proc", dst), read(t, snap+"/"+src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range []string{"cpu", "io", "memory"} {
		text := fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", 1000+psi*uint64(i+1), psi)
		if err := os.WriteFile(filepath.Join(root, "proc", "pressure", f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSamplers: the host and disk samplers on two snapshots one (fake)
// second apart: gauges at once, rates from the second reading on, the
// series named with the host's prefix.
func TestSamplers(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeProc(t, root, "snap1", 0)
	for _, prefix := range []string{"", ServerPrefix} {
		host := &Host{Src: Local{Root: root}, Prefix: prefix, clock: fakeClock()}
		disk := &Disk{Src: Local{Root: root}, Device: "vda", clock: fakeClock()}
		writeProc(t, root, "snap1", 0)
		all := []sampler.Sampler{host, disk}
		first := map[string]float64{}
		for _, s := range all {
			pts, err := s.Sample(ctx, time.Time{})
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			for k, v := range values(pts) {
				first[k] = v
			}
		}
		// Rates need two readings; gauges come at once.
		if len(first) != 4 || first[prefix+MemUsed] != (24684092-22539488)*1024 {
			t.Errorf("first samples: %v", first)
		}
		writeProc(t, root, "snap2", 250000)
		got := map[string]float64{}
		for _, s := range all {
			pts, err := s.Sample(ctx, time.Time{})
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			for k, v := range values(pts) {
				got[k] = v
			}
		}
		for k, want := range map[string]float64{
			prefix + CPUUser: 74.5, prefix + CPUSystem: 22.5, prefix + CPUIdle: 3, prefix + CPUIOWait: 0, prefix + CPUSteal: 0,
			DiskReadIOPS: 0, DiskWrIOPS: 0, DiskAwait: 0, DiskUtil: 0,
			prefix + NetRx: 0, prefix + NetTx: 0, prefix + NetLo: 112857633269 - 112851681471,
			// 250 ms of 1 s stalled: 25%, twice and three times that for
			// some io and memory.
			prefix + PSICPU: 25, prefix + PSIIO: 50, prefix + PSIIOFull: 25, prefix + PSIMem: 75, prefix + PSIMemFull: 25,
		} {
			v, ok := got[k]
			if !ok || !near(v, want) {
				t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
			}
		}
	}
	bad := &Disk{Src: Local{Root: root}, Device: "sdz"}
	if _, err := bad.Sample(ctx, time.Time{}); err == nil || !strings.Contains(err.Error(), "sdz") {
		t.Errorf("unknown device: %v", err)
	}
	// A kernel without pressure files: the other series come.
	if err := os.RemoveAll(filepath.Join(root, "proc", "pressure")); err != nil {
		t.Fatal(err)
	}
	h := &Host{Src: Local{Root: root}, clock: fakeClock()}
	for range 2 {
		pts, err := h.Sample(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if v := values(pts); v[PSICPU] != 0 || len(v) == 0 {
			t.Errorf("without pressure files: %v", v)
		}
	}
}

func TestPGProcsSampler(t *testing.T) {
	root := filepath.Join("testdata", "root", "proc")
	pm := 3177
	s := &PGProcs{Proc: root, Postmaster: func() (int, error) { return pm, nil }, clock: fakeClock()}
	pts, err := s.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := values(pts)
	if v[PGProcCount] != 6 || v[PGProcRSS] == 0 {
		t.Errorf("first sample %v", v)
	}
	if _, ok := v[PGProcCPU]; ok {
		t.Error("cpu rate from one reading")
	}
	// Same files one (fake) second later: rates are 0.
	pts, err = s.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v = values(pts)
	if c, ok := v[PGProcCPU]; !ok || c != 0 || v[PGProcRead] != 0 || v[PGProcWrite] != 0 {
		t.Errorf("second sample %v", v)
	}
	// The postmaster changed (restart): no rate across it.
	pm = 3178
	pts, _ = s.Sample(context.Background(), time.Time{})
	if _, ok := values(pts)[PGProcCPU]; ok {
		t.Error("rate across a postmaster change")
	}
	s.Postmaster = func() (int, error) { return 0, os.ErrNotExist }
	if _, err := s.Sample(context.Background(), time.Time{}); err == nil {
		t.Error("no postmaster: no error")
	}
}

// TestPGProcsThroughSource: the same processes read through a file
// source (a server's host read over SQL) sum to what the local reader
// reads.
func TestPGProcsThroughSource(t *testing.T) {
	root := filepath.Join("testdata", "root", "proc")
	local, err := ReadGroup(root, 3177)
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{3177}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != 3177 && pid != 1 {
			pids = append(pids, pid)
		}
	}
	s := &PGProcs{Src: Local{Root: filepath.Dir(root)}, Procs: func(context.Context) (int, []int, error) { return 3177, pids, nil }, clock: fakeClock()}
	pts, err := s.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := values(pts)
	if v[PGProcCount] != float64(local.Procs) || v[PGProcRSS] != float64(local.RSS) || v[PGProcShmem] != float64(local.Shmem) {
		t.Errorf("through the source %v, locally %+v", v, local)
	}
	s.Procs = func(context.Context) (int, []int, error) { return 999, []int{999}, nil }
	if _, err := s.Sample(context.Background(), time.Time{}); err == nil {
		t.Error("a postmaster whose stat is missing: no error")
	}
}

func TestDriverSampler(t *testing.T) {
	s := &Driver{}
	if pts, _ := s.Sample(context.Background(), time.Time{}); len(pts) != 0 {
		t.Errorf("first sample gave %v", pts)
	}
	// Burn a little CPU so the second sample sees some.
	deadline := time.Now().Add(30 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	pts, err := s.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := values(pts)
	if c, ok := v[DriverCPU]; !ok || c <= 0 || c > 100*float64(16) {
		t.Errorf("driver cpu %v (%v)", c, x)
	}
	if g, ok := v[DriverGC]; !ok || g < 0 {
		t.Errorf("gc pause %v", g)
	}
}

// TestReadGroupFiles: a process without an io file (gone, or hidden) is
// read without its I/O and is no error; an io file that cannot be read is
// the group's IOErr, naming the file; a status file longer than the
// reader's first buffer is read whole.
func TestReadGroupFiles(t *testing.T) {
	_, root := procCopy(t)
	want, err := ReadGroup(root, 3177)
	if err != nil {
		t.Fatal(err)
	}
	// 3182's status behind 10 kB of lines the parser skips.
	status := filepath.Join(root, "3182", "status")
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	long := append([]byte(strings.Repeat("Filler:\tx\n", 1000)), b...)
	if err := os.WriteFile(status, long, 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err := ReadGroup(root, 3177); err != nil || g != want {
		t.Errorf("with a long status file: %+v (%v), want %+v", g, err, want)
	}

	pio, err := machine.ParseProcIO(read(t, "root/proc/3179/io"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "3179", "io")); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGroup(root, 3177)
	if err != nil || g.IOErr != nil || g.ReadBytes != want.ReadBytes-pio.ReadBytes || g.Procs != want.Procs {
		t.Errorf("without 3179/io: %+v (%v), want its bytes left out and no error", g, err)
	}
	if err := os.Mkdir(filepath.Join(root, "3179", "io"), 0o755); err != nil {
		t.Fatal(err)
	}
	if g, err := ReadGroup(root, 3177); err != nil || g.IOErr == nil || !strings.Contains(g.IOErr.Error(), filepath.Join("3179", "io")) {
		t.Errorf("with an unreadable 3179/io: IOErr %v (%v), want it named", g.IOErr, err)
	}
}

// TestParsePostmasterPID: the first line of postmaster.pid.
func TestParsePostmasterPID(t *testing.T) {
	for in, want := range map[string]int{"3177\n/tmp/data\n1700000000\n5432\n": 3177, "42": 42} {
		if got, err := ParsePostmasterPID([]byte(in)); err != nil || got != want {
			t.Errorf("ParsePostmasterPID(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x\n", "-1\n"} {
		if _, err := ParsePostmasterPID([]byte(bad)); err == nil {
			t.Errorf("ParsePostmasterPID(%q): no error", bad)
		}
	}
}
