package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Pressure stall series (PSI, Linux 4.20+): the share of time some task
// waited for the resource ("full": every non-idle task did), in percent.
const (
	PSICPU     = "sys.pressure_cpu_pct"
	PSIIO      = "sys.pressure_io_pct"
	PSIIOFull  = "sys.pressure_io_full_pct"
	PSIMem     = "sys.pressure_mem_pct"
	PSIMemFull = "sys.pressure_mem_full_pct"
)

// ServerPrefix is put before the host series (sys.*, net.*) of a database
// server's host measured apart from the machine tunebench runs on.
const ServerPrefix = "server."

// clock is the samplers' time source (monotonic); tests replace it.
type clock func() time.Time

func (c clock) now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// FileSource reads a host's files: this machine's (Local), or a database
// server's through SQL (target/pg). Read returns the contents by path; a
// file that does not exist is left out of the map, and an error is the
// source failing as a whole.
type FileSource interface {
	// Describe says where the files come from, e.g. "local /proc".
	Describe() string
	Read(ctx context.Context, paths []string) (map[string][]byte, error)
}

// Local reads this machine's files; Root (tests: a fake tree) is put in
// front of every path.
type Local struct{ Root string }

func (Local) Describe() string { return "local /proc" }

func (l Local) Read(_ context.Context, paths []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(l.Root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}

// hostFiles are the files Host reads, in one Read (one round trip of a
// remote source).
var hostFiles = []string{"/proc/stat", "/proc/meminfo", "/proc/net/dev",
	"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory"}

// Host samples a host's CPU time split (/proc/stat, percent of all CPUs),
// memory (/proc/meminfo), network (/proc/net/dev, bytes per second over
// every non-loopback interface and over loopback) and pressure stall
// (/proc/pressure, where the kernel has it) through Src. Prefix goes before
// the series names: "" for the machine tunebench runs on (sys.*, net.*),
// ServerPrefix for a database server's host.
type Host struct {
	Src    FileSource
	Prefix string
	clock  clock

	prevCPU        machine.CPUTimes
	haveCPU        bool
	prevRx, prevTx uint64
	prevLo         uint64
	prevNetAt      time.Time
	prevPSI        [3]machine.Pressure
	psiOK          [3]bool
	prevPSIAt      time.Time
}

func (h *Host) Name() string { return h.Prefix + "host" }

func (h *Host) series(name string) string { return h.Prefix + name }

func (h *Host) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	files, err := h.Src.Read(ctx, hostFiles)
	if err != nil {
		return nil, err
	}
	at := h.clock.now()
	var pts []sampler.Point
	b, ok := files["/proc/stat"]
	if !ok {
		return nil, errors.New("/proc/stat: not found")
	}
	cur, err := machine.ParseStat(b)
	if err != nil {
		return nil, err
	}
	prev, had := h.prevCPU, h.haveCPU
	h.prevCPU, h.haveCPU = cur, true
	if p, ok := machine.CPUPctBetween(prev, cur); had && ok {
		pts = append(pts,
			sampler.Point{Series: h.series(CPUUser), V: p.User}, sampler.Point{Series: h.series(CPUSystem), V: p.System},
			sampler.Point{Series: h.series(CPUIOWait), V: p.IOWait}, sampler.Point{Series: h.series(CPUSteal), V: p.Steal},
			sampler.Point{Series: h.series(CPUIdle), V: p.Idle})
	}
	if b, ok := files["/proc/meminfo"]; ok {
		m, err := machine.ParseMeminfo(b)
		if err != nil {
			return pts, err
		}
		pts = append(pts,
			sampler.Point{Series: h.series(MemUsed), V: float64(m.Used())}, sampler.Point{Series: h.series(PageCache), V: float64(m.PageCache())},
			sampler.Point{Series: h.series(MemDirty), V: float64(m.Dirty + m.Writeback)}, sampler.Point{Series: h.series(MemShmem), V: float64(m.Shmem)})
	}
	if b, ok := files["/proc/net/dev"]; ok {
		m, err := machine.ParseNetDev(b)
		if err != nil {
			return pts, err
		}
		rx, tx, lo := machine.NetSums(m)
		prevAt := h.prevNetAt
		pr, pt, pl := h.prevRx, h.prevTx, h.prevLo
		h.prevRx, h.prevTx, h.prevLo, h.prevNetAt = rx, tx, lo, at
		// Interfaces coming and going (or counter wraps) make a sum go
		// backwards: skip that interval.
		if secs := at.Sub(prevAt).Seconds(); !prevAt.IsZero() && secs > 0 && rx >= pr && tx >= pt && lo >= pl {
			pts = append(pts,
				sampler.Point{Series: h.series(NetRx), V: float64(rx-pr) / secs}, sampler.Point{Series: h.series(NetTx), V: float64(tx-pt) / secs},
				sampler.Point{Series: h.series(NetLo), V: float64(lo-pl) / secs})
		}
	}
	pts = append(pts, h.pressure(files, at)...)
	return pts, nil
}

// pressure is the share of the interval tasks stalled on CPU, I/O and
// memory, from the stall totals (microseconds).
func (h *Host) pressure(files map[string][]byte, at time.Time) []sampler.Point {
	var pts []sampler.Point
	secs := at.Sub(h.prevPSIAt).Seconds()
	had := !h.prevPSIAt.IsZero() && secs > 0
	h.prevPSIAt = at
	pct := func(cur, prev uint64) float64 { return 100 * float64(cur-prev) / 1e6 / secs }
	for i, f := range []string{"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory"} {
		b, ok := files[f]
		if !ok {
			h.psiOK[i] = false
			continue
		}
		cur, err := machine.ParsePressure(b)
		if err != nil {
			h.psiOK[i] = false
			continue
		}
		prev, prevOK := h.prevPSI[i], h.psiOK[i]
		h.prevPSI[i], h.psiOK[i] = cur, true
		if !had || !prevOK || cur.Some < prev.Some || cur.Full < prev.Full {
			continue
		}
		switch i {
		case 0:
			pts = append(pts, sampler.Point{Series: h.series(PSICPU), V: pct(cur.Some, prev.Some)})
		case 1:
			pts = append(pts, sampler.Point{Series: h.series(PSIIO), V: pct(cur.Some, prev.Some)},
				sampler.Point{Series: h.series(PSIIOFull), V: pct(cur.Full, prev.Full)})
		case 2:
			pts = append(pts, sampler.Point{Series: h.series(PSIMem), V: pct(cur.Some, prev.Some)},
				sampler.Point{Series: h.series(PSIMemFull), V: pct(cur.Full, prev.Full)})
		}
	}
	return pts
}

// Disk samples one device's line of /proc/diskstats (the device under the
// server's data directory) through Src.
type Disk struct {
	Src    FileSource
	Device string // name in /proc/diskstats
	clock  clock
	prev   machine.DiskStat
	prevAt time.Time
}

func (*Disk) Name() string { return "disk" }

func (s *Disk) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	files, err := s.Src.Read(ctx, []string{"/proc/diskstats"})
	if err != nil {
		return nil, err
	}
	b, ok := files["/proc/diskstats"]
	if !ok {
		return nil, errors.New("/proc/diskstats: not found")
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
	return DiskPoints(r), nil
}

// DiskPoints are the disk.* series of r.
func DiskPoints(r machine.DiskRates) []sampler.Point {
	return []sampler.Point{
		{Series: DiskReadIOPS, V: r.ReadIOPS}, {Series: DiskWrIOPS, V: r.WriteIOPS},
		{Series: DiskReadBps, V: r.ReadBytesS}, {Series: DiskWriteBps, V: r.WriteBytesS},
		{Series: DiskAwait, V: r.AwaitMs}, {Series: DiskRAwait, V: r.ReadAwaitMs}, {Series: DiskWAwait, V: r.WriteAwaitMs},
		{Series: DiskUtil, V: r.UtilPct},
	}
}

// PGProcs samples the PostgreSQL server's processes: the postmaster and
// its children. On this machine (Proc, Postmaster) the postmaster is found
// on every sample, so a restarted server is followed, and its children
// from the kernel's lists. On a server's host read through a FileSource
// (Src, Procs), Procs lists the postmaster and its processes, and their
// /proc/PID files come in one Read.
type PGProcs struct {
	// Prefix replaces the series names' "pg." for another database's
	// server (MariaDB's mariadbd: "mariadb."); "" keeps PostgreSQL's.
	Prefix     string
	Proc       string
	Postmaster func() (int, error)
	// Src and Procs: a remote host's processes (root first).
	Src   FileSource
	Procs func(ctx context.Context) (root int, pids []int, err error)
	clock clock

	reader  procReader
	prevPM  int
	prev    Group
	prevAt  time.Time
	ioNoted bool
}

func (s *PGProcs) Name() string {
	if s.Prefix != "" {
		return strings.TrimSuffix(s.Prefix, ".") + "-processes"
	}
	return "pg-processes"
}

// Gauge is the series the sampler gives at every sample (the process
// count), by which a run tells its gaps.
func (s *PGProcs) Gauge() string { return s.series(PGProcCount) }

// series is a series name with the sampler's prefix.
func (s *PGProcs) series(name string) string {
	if s.Prefix == "" {
		return name
	}
	return s.Prefix + strings.TrimPrefix(name, "pg.")
}

func (s *PGProcs) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	pm, g, err := s.read(ctx)
	if err != nil {
		s.prevPM = 0
		return nil, err
	}
	at := s.clock.now()
	pts := []sampler.Point{
		{Series: s.series(PGProcRSS), V: float64(g.RSS)}, {Series: s.series(PGProcShmem), V: float64(g.Shmem)},
		{Series: s.series(PGProcCount), V: float64(g.Procs)},
	}
	prev, prevAt, samePM := s.prev, s.prevAt, s.prevPM == pm
	s.prev, s.prevAt, s.prevPM = g, at, pm
	secs := at.Sub(prevAt).Seconds()
	if !samePM || secs <= 0 {
		return pts, nil
	}
	if g.CPUTicks >= prev.CPUTicks {
		pts = append(pts, sampler.Point{Series: s.series(PGProcCPU), V: 100 * float64(g.CPUTicks-prev.CPUTicks) / machine.UserHZ / secs})
	}
	if g.IOErr == nil && prev.IOErr == nil && g.ReadBytes >= prev.ReadBytes && g.WriteBytes >= prev.WriteBytes {
		pts = append(pts,
			sampler.Point{Series: s.series(PGProcRead), V: float64(g.ReadBytes-prev.ReadBytes) / secs},
			sampler.Point{Series: s.series(PGProcWrite), V: float64(g.WriteBytes-prev.WriteBytes) / secs})
	}
	if g.IOErr != nil && !s.ioNoted {
		s.ioNoted = true
		return pts, fmt.Errorf("the server's process I/O is not readable (%v): run tunebench as root or as the server's OS user to get %s and %s", g.IOErr, s.series(PGProcRead), s.series(PGProcWrite))
	}
	return pts, nil
}

// read finds the postmaster and sums its group, here or through Src.
func (s *PGProcs) read(ctx context.Context) (int, Group, error) {
	if s.Src == nil {
		pm, err := s.Postmaster()
		if err != nil {
			return 0, Group{}, fmt.Errorf("finding the postmaster: %w", err)
		}
		g, err := s.reader.readGroup(s.Proc, pm)
		return pm, g, err
	}
	root, pids, err := s.Procs(ctx)
	if err != nil {
		return 0, Group{}, err
	}
	var paths []string
	for _, pid := range pids {
		for _, f := range []string{"stat", "status", "io"} {
			paths = append(paths, "/proc/"+strconv.Itoa(pid)+"/"+f)
		}
	}
	files, err := s.Src.Read(ctx, paths)
	if err != nil {
		return 0, Group{}, err
	}
	g, err := SumGroup(root, pids, func(pid int, name string) ([]byte, error) {
		p := "/proc/" + strconv.Itoa(pid) + "/" + name
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	})
	return root, g, err
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
