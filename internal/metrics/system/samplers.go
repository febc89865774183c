package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tunebench/tunebench/internal/machine"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

// Series names (docs/metrics.md documents every one).
const (
	CPUUser      = "sys.cpu_user_pct"
	CPUSystem    = "sys.cpu_system_pct"
	CPUIOWait    = "sys.cpu_iowait_pct"
	CPUSteal     = "sys.cpu_steal_pct"
	CPUIdle      = "sys.cpu_idle_pct"
	MemUsed      = "sys.mem_used_bytes"
	PageCache    = "sys.page_cache_bytes"
	MemDirty     = "sys.mem_dirty_bytes"
	MemShmem     = "sys.mem_shmem_bytes"
	DiskReadIOPS = "disk.read_iops"
	DiskWrIOPS   = "disk.write_iops"
	DiskReadBps  = "disk.read_bytes_s"
	DiskWriteBps = "disk.write_bytes_s"
	DiskAwait    = "disk.await_ms"
	DiskRAwait   = "disk.read_await_ms"
	DiskWAwait   = "disk.write_await_ms"
	DiskUtil     = "disk.util_pct"
	NetRx        = "net.rx_bytes_s"
	NetTx        = "net.tx_bytes_s"
	NetLo        = "net.lo_bytes_s"
	PGProcCPU    = "pg.proc_cpu_pct"
	PGProcRSS    = "pg.proc_rss_bytes"
	PGProcShmem  = "pg.proc_shmem_bytes"
	PGProcRead   = "pg.proc_read_bytes_s"
	PGProcWrite  = "pg.proc_write_bytes_s"
	PGProcCount  = "pg.proc_count"
	DriverCPU    = "driver.cpu_pct"
	DriverGC     = "driver.gc_pause_ms"
)

// clock is the samplers' time source (monotonic); tests replace it.
type clock func() time.Time

func (c clock) now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

func readFile(root, name string) ([]byte, error) { return os.ReadFile(filepath.Join(root, name)) }

// CPU samples /proc/stat: the split of all CPUs' time since the previous
// sample, in percent.
type CPU struct {
	Proc string // /proc
	prev machine.CPUTimes
	have bool
}

func (*CPU) Name() string { return "cpu" }

func (s *CPU) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	b, err := readFile(s.Proc, "stat")
	if err != nil {
		return nil, err
	}
	cur, err := machine.ParseStat(b)
	if err != nil {
		return nil, err
	}
	prev, had := s.prev, s.have
	s.prev, s.have = cur, true
	if !had {
		return nil, nil
	}
	p, ok := machine.CPUPctBetween(prev, cur)
	if !ok {
		return nil, nil
	}
	return []sampler.Point{
		{Series: CPUUser, V: p.User}, {Series: CPUSystem, V: p.System}, {Series: CPUIOWait, V: p.IOWait},
		{Series: CPUSteal, V: p.Steal}, {Series: CPUIdle, V: p.Idle},
	}, nil
}

// Memory samples /proc/meminfo (gauges).
type Memory struct {
	Proc string
}

func (*Memory) Name() string { return "memory" }

func (s *Memory) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	b, err := readFile(s.Proc, "meminfo")
	if err != nil {
		return nil, err
	}
	m, err := machine.ParseMeminfo(b)
	if err != nil {
		return nil, err
	}
	return []sampler.Point{
		{Series: MemUsed, V: float64(m.Used())}, {Series: PageCache, V: float64(m.PageCache())},
		{Series: MemDirty, V: float64(m.Dirty + m.Writeback)}, {Series: MemShmem, V: float64(m.Shmem)},
	}, nil
}

// Disk samples one device's line of /proc/diskstats.
type Disk struct {
	Proc   string
	Device string // name in /proc/diskstats
	clock  clock
	prev   machine.DiskStat
	prevAt time.Time
}

func (*Disk) Name() string { return "disk" }

func (s *Disk) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	b, err := readFile(s.Proc, "diskstats")
	if err != nil {
		return nil, err
	}
	at := s.clock.now()
	m, err := machine.ParseDiskstats(b)
	if err != nil {
		return nil, err
	}
	cur, ok := m[s.Device]
	if !ok {
		return nil, fmt.Errorf("device %s not in /proc/diskstats", s.Device)
	}
	prev, prevAt := s.prev, s.prevAt
	s.prev, s.prevAt = cur, at
	if prevAt.IsZero() {
		return nil, nil
	}
	r, ok := machine.DiskRatesBetween(prev, cur, at.Sub(prevAt).Seconds())
	if !ok {
		return nil, nil
	}
	return []sampler.Point{
		{Series: DiskReadIOPS, V: r.ReadIOPS}, {Series: DiskWrIOPS, V: r.WriteIOPS},
		{Series: DiskReadBps, V: r.ReadBytesS}, {Series: DiskWriteBps, V: r.WriteBytesS},
		{Series: DiskAwait, V: r.AwaitMs}, {Series: DiskRAwait, V: r.ReadAwaitMs}, {Series: DiskWAwait, V: r.WriteAwaitMs},
		{Series: DiskUtil, V: r.UtilPct},
	}, nil
}

// Net samples /proc/net/dev: bytes per second over every non-loopback
// interface, and over loopback (where a local benchmark's traffic goes).
type Net struct {
	Proc           string
	clock          clock
	prevRx, prevTx uint64
	prevLo         uint64
	prevAt         time.Time
}

func (*Net) Name() string { return "net" }

func (s *Net) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	b, err := readFile(s.Proc, "net/dev")
	if err != nil {
		return nil, err
	}
	at := s.clock.now()
	m, err := machine.ParseNetDev(b)
	if err != nil {
		return nil, err
	}
	rx, tx, lo := machine.NetSums(m)
	prevAt := s.prevAt
	pr, pt, pl := s.prevRx, s.prevTx, s.prevLo
	s.prevRx, s.prevTx, s.prevLo, s.prevAt = rx, tx, lo, at
	secs := at.Sub(prevAt).Seconds()
	// Interfaces coming and going (or counter wraps) make a sum go
	// backwards: skip that interval.
	if prevAt.IsZero() || secs <= 0 || rx < pr || tx < pt || lo < pl {
		return nil, nil
	}
	return []sampler.Point{
		{Series: NetRx, V: float64(rx-pr) / secs}, {Series: NetTx, V: float64(tx-pt) / secs},
		{Series: NetLo, V: float64(lo-pl) / secs},
	}, nil
}

// PGProcs samples the PostgreSQL server's processes: the postmaster (found
// by Postmaster on every sample, so a restarted server is followed) and its
// children.
type PGProcs struct {
	Proc       string
	Postmaster func() (int, error)
	clock      clock

	reader  procReader
	prevPM  int
	prev    Group
	prevAt  time.Time
	ioNoted bool
}

func (*PGProcs) Name() string { return "pg-processes" }

func (s *PGProcs) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	pm, err := s.Postmaster()
	if err != nil {
		s.prevPM = 0
		return nil, fmt.Errorf("finding the postmaster: %w", err)
	}
	at := s.clock.now()
	g, err := s.reader.readGroup(s.Proc, pm)
	if err != nil {
		s.prevPM = 0
		return nil, err
	}
	pts := []sampler.Point{
		{Series: PGProcRSS, V: float64(g.RSS)}, {Series: PGProcShmem, V: float64(g.Shmem)},
		{Series: PGProcCount, V: float64(g.Procs)},
	}
	prev, prevAt, samePM := s.prev, s.prevAt, s.prevPM == pm
	s.prev, s.prevAt, s.prevPM = g, at, pm
	secs := at.Sub(prevAt).Seconds()
	if !samePM || secs <= 0 {
		return pts, nil
	}
	if g.CPUTicks >= prev.CPUTicks {
		pts = append(pts, sampler.Point{Series: PGProcCPU, V: 100 * float64(g.CPUTicks-prev.CPUTicks) / machine.UserHZ / secs})
	}
	if g.IOErr == nil && prev.IOErr == nil && g.ReadBytes >= prev.ReadBytes && g.WriteBytes >= prev.WriteBytes {
		pts = append(pts,
			sampler.Point{Series: PGProcRead, V: float64(g.ReadBytes-prev.ReadBytes) / secs},
			sampler.Point{Series: PGProcWrite, V: float64(g.WriteBytes-prev.WriteBytes) / secs})
	}
	if g.IOErr != nil && !s.ioNoted {
		s.ioNoted = true
		return pts, fmt.Errorf("PostgreSQL process I/O is not readable (%v): run tunebench as root or as the server's OS user to get %s and %s", g.IOErr, PGProcRead, PGProcWrite)
	}
	return pts, nil
}

// Driver samples tunebench's own process: CPU (percent of one CPU) and the
// garbage collector's stop-the-world pause time, in milliseconds per second
// (metrics.ReadSelf; the pause total is estimated from the runtime's
// histogram).
type Driver struct {
	clock  clock
	prev   metrics.SelfSample
	prevAt time.Time
}

func (*Driver) Name() string { return "driver" }

func (s *Driver) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	cur, at := metrics.ReadSelf(), s.clock.now()
	prev, prevAt := s.prev, s.prevAt
	s.prev, s.prevAt = cur, at
	secs := at.Sub(prevAt).Seconds()
	if prevAt.IsZero() || secs <= 0 {
		return nil, nil
	}
	d := cur.Sub(prev)
	return []sampler.Point{
		{Series: DriverCPU, V: 100 * d.CPU.Seconds() / secs},
		{Series: DriverGC, V: float64(d.GCPauseTotal) / float64(time.Millisecond) / secs},
	}, nil
}
