package system

import (
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

func TestParseStatAndCPUPct(t *testing.T) {
	a, err := ParseStat(read(t, "snap1/stat"))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{User: 672352, Nice: 293, System: 487284, Idle: 1550442, IOWait: 38827, IRQ: 0, SoftIRQ: 224401, Steal: 698}
	if a != want {
		t.Fatalf("snap1: got %+v, want %+v", a, want)
	}
	b, err := ParseStat(read(t, "snap2/stat"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := CPUPctBetween(a, b)
	if !ok {
		t.Fatal("no pct between the snapshots")
	}
	// One second on 2 CPUs: 200 ticks; user 149, system 38 + softirq 7, idle 6.
	if b.Total()-a.Total() != 200 {
		t.Errorf("ticks %d, want 200", b.Total()-a.Total())
	}
	if !near(p.User, 74.5) || !near(p.System, 22.5) || !near(p.Idle, 3) || p.IOWait != 0 || p.Steal != 0 {
		t.Errorf("pct %+v", p)
	}
	if sum := p.User + p.System + p.IOWait + p.Steal + p.Idle; !near(sum, 100) {
		t.Errorf("sum %v", sum)
	}
	if _, ok := CPUPctBetween(b, a); ok {
		t.Error("backwards counters gave a result")
	}
	if _, ok := CPUPctBetween(a, a); ok {
		t.Error("no elapsed ticks gave a result")
	}
	// iowait going backwards (a known kernel quirk) does not drop the sample.
	c := b
	c.IOWait--
	if _, ok := CPUPctBetween(a, c); !ok {
		t.Error("iowait going backwards dropped the sample")
	}
	// Old kernels: fewer fields.
	old, err := ParseStat([]byte("cpu  10 0 5 100\ncpu0 10 0 5 100\n"))
	if err != nil || old != (CPUTimes{User: 10, System: 5, Idle: 100}) {
		t.Errorf("short cpu line: %+v %v", old, err)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2\n", "cpu 1 x 3 4\n"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	m, err := ParseMeminfo(read(t, "snap1/meminfo"))
	if err != nil {
		t.Fatal(err)
	}
	const k = 1024
	if m.Total != 24684092*k || m.Available != 22539488*k || !m.HasAvailable || m.Cached != 5706980*k ||
		m.Buffers != 164516*k || m.Shmem != 1398636*k || m.Dirty != 578644*k || m.SReclaimable != 319512*k {
		t.Fatalf("parsed %+v", m)
	}
	if m.Used() != (24684092-22539488)*k {
		t.Errorf("used %d", m.Used())
	}
	if m.PageCache() != (5706980+164516-1398636)*k {
		t.Errorf("page cache %d", m.PageCache())
	}
	// Without MemAvailable (kernel < 3.14): free's classic formula.
	old, err := ParseMeminfo([]byte("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 300 kB\nSReclaimable: 50 kB\n"))
	if err != nil || old.Used() != 500*k {
		t.Errorf("old kernel: used %d, %v", old.Used(), err)
	}
	if _, err := ParseMeminfo([]byte("Cached: 1 kB\n")); err == nil {
		t.Error("no MemTotal: no error")
	}
	if _, err := ParseMeminfo([]byte("MemTotal: x kB\n")); err == nil {
		t.Error("bad number: no error")
	}
}

func TestParseDiskstatsAndRates(t *testing.T) {
	m, err := ParseDiskstats(read(t, "snap1/diskstats"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 10 {
		t.Errorf("%d devices, want 10 (8 loop, vda, zram0)", len(m))
	}
	a := m["vda"]
	want := DiskStat{Major: 254, Minor: 0, Name: "vda", ReadIOs: 764705, ReadSectors: 31721698, ReadMs: 557671,
		WriteIOs: 34524342, WriteSectors: 593366960, WriteMs: 2530796, InFlight: 0, IOMs: 1820940,
		DiscardIOs: 138951, FlushIOs: 16585948, FlushMs: 737757}
	if a != want {
		t.Fatalf("vda: %+v\nwant %+v", a, want)
	}
	// Two seconds later: 100 reads of 8 KiB in 150 ms total, 300 writes of
	// 4 KiB in 450 ms total, busy 500 ms.
	b := a
	b.ReadIOs += 100
	b.ReadSectors += 100 * 16
	b.ReadMs += 150
	b.WriteIOs += 300
	b.WriteSectors += 300 * 8
	b.WriteMs += 450
	b.IOMs += 500
	r, ok := DiskRatesBetween(a, b, 2)
	if !ok {
		t.Fatal("no rates")
	}
	if r.ReadIOPS != 50 || r.WriteIOPS != 150 || r.ReadBytesS != 100*8192/2 || r.WriteBytesS != 300*4096/2 ||
		!near(r.AwaitMs, 1.5) || !near(r.ReadAwaitMs, 1.5) || !near(r.WriteAwaitMs, 1.5) || !near(r.UtilPct, 25) {
		t.Errorf("rates %+v", r)
	}
	// Idle interval (the captured second had no I/O on vda): zeros, await 0.
	m2, err := ParseDiskstats(read(t, "snap2/diskstats"))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := DiskRatesBetween(a, m2["vda"], 1); !ok || r != (DiskRates{}) {
		t.Errorf("idle: %+v %v", r, ok)
	}
	if _, ok := DiskRatesBetween(b, a, 1); ok {
		t.Error("backwards counters gave rates")
	}
	// Old kernels: 14 fields.
	old, err := ParseDiskstats([]byte("   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"))
	if err != nil || old["sda"].WriteMs != 8 || old["sda"].IOMs != 10 || old["sda"].FlushIOs != 0 {
		t.Errorf("old format: %+v %v", old["sda"], err)
	}
	if _, err := ParseDiskstats([]byte("8 0 sda 1 2 3\n")); err == nil {
		t.Error("short line: no error")
	}
}

func TestParseNetDev(t *testing.T) {
	a, err := ParseNetDev(read(t, "snap1/net_dev"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 4 || a["lo"].RxBytes != 112851681471 || a["eth0"].RxBytes != 307651286 || a["eth0"].TxBytes != 791041 {
		t.Fatalf("parsed %+v", a)
	}
	rx, tx, lo := NetSums(a)
	if rx != 307651286 || tx != 791041 || lo != 112851681471 {
		t.Errorf("sums %d %d %d", rx, tx, lo)
	}
	b, err := ParseNetDev(read(t, "snap2/net_dev"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, lo2 := NetSums(b); lo2-lo != 112857633269-112851681471 {
		t.Errorf("lo delta %d", lo2-lo)
	}
	if _, err := ParseNetDev([]byte("eth0: 1 2 3\n")); err == nil {
		t.Error("short line: no error")
	}
}

func TestParseProcFiles(t *testing.T) {
	st, err := ParseProcStat(read(t, "root/proc/3178/stat"))
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != 3178 || st.PPID != 3177 || st.Comm != "postgres" || st.State != 'S' || st.UTime != 54 || st.STime != 189 ||
		st.StartTime != 1384849 || st.RSSPages != 56695 {
		t.Errorf("stat %+v", st)
	}
	w, err := ParseProcStat(read(t, "stat_weird_comm"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Comm != "x (y) z" || w.PPID != 20785 || w.StartTime != 1522386 || w.RSSPages != 394 {
		t.Errorf("weird comm: %+v", w)
	}
	if ppidOf(read(t, "stat_weird_comm")) != 20785 || ppidOf([]byte("1 (x")) != -1 {
		t.Error("ppidOf")
	}
	for _, bad := range []string{"", "12 (x) S 1 2", "x (y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}

	ps, err := ParseProcStatus(read(t, "root/proc/3178/status"))
	if err != nil {
		t.Fatal(err)
	}
	if ps.VmRSS != 227140*1024 || ps.RssAnon != 8600*1024 || ps.RssFile != 5172*1024 || ps.RssShmem != 213368*1024 || !ps.HasRssSplit {
		t.Errorf("status %+v", ps)
	}

	pio, err := ParseProcIO(read(t, "root/proc/3177/io"))
	if err != nil {
		t.Fatal(err)
	}
	if pio.ReadBytes != 9916416 || pio.WriteBytes != 80822407168 || pio.CancelledWriteBytes != 30854385664 {
		t.Errorf("io %+v", pio)
	}
	if _, err := ParseProcIO([]byte("rchar: 1\n")); err == nil {
		t.Error("io without read_bytes: no error")
	}

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
		st, err := ParseProcStat(read(t, "root/proc/"+pid+"/stat"))
		if err != nil {
			t.Fatal(err)
		}
		ticks += st.UTime + st.STime
		if pid == "3177" {
			ticks += st.CUTime + st.CSTime
		}
		ps, _ := ParseProcStatus(read(t, "root/proc/"+pid+"/status"))
		private += ps.RssAnon + ps.RssFile
		maxShm = max(maxShm, ps.RssShmem)
		pio, _ := ParseProcIO(read(t, "root/proc/"+pid+"/io"))
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

func TestFindDevice(t *testing.T) {
	sys := filepath.Join("testdata", "sys")
	cases := []struct {
		majMin string
		want   Device
		label  string
	}{
		{"254:0", Device{Name: "vda", Kind: "disk", MajMin: "254:0"}, "vda"},
		{"8:0", Device{Name: "sda", Kind: "disk", MajMin: "8:0"}, "sda"},
		{"8:2", Device{Name: "sda", Kind: "disk", Partition: "sda2", MajMin: "8:2"}, "sda (partition sda2)"},
		{"259:2", Device{Name: "nvme0n1", Kind: "disk", Partition: "nvme0n1p2", MajMin: "259:2"}, "nvme0n1 (partition nvme0n1p2)"},
		{"253:0", Device{Name: "dm-0", Kind: "dm", DMName: "vg0-pgdata", MajMin: "253:0"}, "dm-0 (vg0-pgdata)"},
		{"9:0", Device{Name: "md0", Kind: "md", MajMin: "9:0"}, "md0"},
	}
	for _, c := range cases {
		d, err := FindDevice(sys, c.majMin)
		if err != nil {
			t.Errorf("%s: %v", c.majMin, err)
			continue
		}
		if d != c.want || d.Label() != c.label {
			t.Errorf("%s: got %+v %q, want %+v %q", c.majMin, d, d.Label(), c.want, c.label)
		}
	}
	for _, mm := range []string{"0:27", "8:3", "", "1:1"} {
		if _, err := FindDevice(sys, mm); !errors.Is(err, ErrNoDevice) {
			t.Errorf("%q: error %v, want ErrNoDevice", mm, err)
		}
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
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("error %v is not ErrNoDevice", err)
		}
		t.Logf("no device (fine): %v", err)
		return
	}
	b, _ := os.ReadFile("/proc/diskstats")
	m, err := ParseDiskstats(b)
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

// writeProc copies a snapshot's files into a fake /proc root.
func writeProc(t *testing.T, root, snap string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{"stat": "stat", "meminfo": "meminfo", "diskstats": "diskstats", "net_dev": "net/dev"} {
		if err := os.WriteFile(filepath.Join(root, dst), read(t, snap+"/"+src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSamplers(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeProc(t, root, "snap1")
	cpu, mem := &CPU{Proc: root}, &Memory{Proc: root}
	disk := &Disk{Proc: root, Device: "vda", clock: fakeClock()}
	netS := &Net{Proc: root, clock: fakeClock()}
	all := []sampler.Sampler{cpu, mem, disk, netS}
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
	if len(first) != 4 || first[MemUsed] != (24684092-22539488)*1024 {
		t.Errorf("first samples: %v", first)
	}
	writeProc(t, root, "snap2")
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
		CPUUser: 74.5, CPUSystem: 22.5, CPUIdle: 3, CPUIOWait: 0, CPUSteal: 0,
		DiskReadIOPS: 0, DiskWrIOPS: 0, DiskAwait: 0, DiskUtil: 0,
		NetRx: 0, NetTx: 0, NetLo: 112857633269 - 112851681471,
	} {
		v, ok := got[k]
		if !ok || !near(v, want) {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	bad := &Disk{Proc: root, Device: "sdz"}
	if _, err := bad.Sample(ctx, time.Time{}); err == nil || !strings.Contains(err.Error(), "sdz") {
		t.Errorf("unknown device: %v", err)
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

	pio, err := ParseProcIO(read(t, "root/proc/3179/io"))
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
