package machine

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
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
	st, err := ParseProcStat(read(t, "proc/3178/stat"))
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
	if ParentPIDOf(read(t, "stat_weird_comm")) != 20785 || ParentPIDOf([]byte("1 (x")) != -1 {
		t.Error("ppidOf")
	}
	for _, bad := range []string{"", "12 (x) S 1 2", "x (y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}

	ps, err := ParseProcStatus(read(t, "proc/3178/status"))
	if err != nil {
		t.Fatal(err)
	}
	if ps.VmRSS != 227140*1024 || ps.RssAnon != 8600*1024 || ps.RssFile != 5172*1024 || ps.RssShmem != 213368*1024 || !ps.HasRssSplit {
		t.Errorf("status %+v", ps)
	}

	pio, err := ParseProcIO(read(t, "proc/3177/io"))
	if err != nil {
		t.Fatal(err)
	}
	if pio.ReadBytes != 9916416 || pio.WriteBytes != 80822407168 || pio.CancelledWriteBytes != 30854385664 {
		t.Errorf("io %+v", pio)
	}
	if _, err := ParseProcIO([]byte("rchar: 1\n")); err == nil {
		t.Error("io without read_bytes: no error")
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

func TestParsePressure(t *testing.T) {
	p, err := ParsePressure([]byte("some avg10=0.00 avg60=3.16 avg300=8.84 total=3493427609\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"))
	if err != nil || p.Some != 3493427609 || p.Full != 12 || !p.HasFull {
		t.Errorf("%+v %v", p, err)
	}
	if p, err := ParsePressure([]byte("some avg10=1.00 avg60=0 avg300=0 total=5\n")); err != nil || p.Some != 5 || p.HasFull {
		t.Errorf("cpu on an old kernel: %+v %v", p, err)
	}
	for _, bad := range []string{"", "some avg10=0.00\n", "some total=x\n"} {
		if _, err := ParsePressure([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
