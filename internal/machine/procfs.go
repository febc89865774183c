package machine

// The system-wide counters of /proc: CPU time (stat), memory (meminfo),
// block devices (diskstats) and network interfaces (net/dev), and the
// rates between two readings.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CPUTimes is the aggregate "cpu" line of /proc/stat, in USER_HZ ticks.
// Guest time is already included in user/nice by the kernel and is not kept.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is the sum of all kept fields.
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// ParseStat reads the aggregate cpu line of /proc/stat (proc(5)). Kernels
// older than 2.6.11 lack steal (and older ones iowait/irq): missing fields
// are 0.
func ParseStat(b []byte) (CPUTimes, error) {
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return CPUTimes{}, fmt.Errorf("/proc/stat: short cpu line %q", strings.TrimSpace(string(line)))
		}
		var v [8]uint64
		for i := 0; i < 8 && i+1 < len(f); i++ {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			v[i] = n
		}
		return CPUTimes{User: v[0], Nice: v[1], System: v[2], Idle: v[3], IOWait: v[4], IRQ: v[5], SoftIRQ: v[6], Steal: v[7]}, nil
	}
	return CPUTimes{}, errors.New("/proc/stat: no cpu line")
}

// CPUPct is the split of all CPUs' time over an interval, in percent of the
// interval (0..100, summing to 100).
type CPUPct struct {
	User   float64 // user + nice
	System float64 // system + irq + softirq
	IOWait float64
	Steal  float64
	Idle   float64
}

// CPUPctBetween computes the split between two readings; ok is false when
// no time passed or a counter went backwards.
func CPUPctBetween(prev, cur CPUTimes) (p CPUPct, ok bool) {
	if cur.Total() <= prev.Total() {
		return p, false
	}
	d := func(a, b uint64) (float64, bool) {
		if b < a {
			return 0, false
		}
		return float64(b - a), true
	}
	var parts [8]float64
	pairs := [8][2]uint64{
		{prev.User, cur.User}, {prev.Nice, cur.Nice}, {prev.System, cur.System}, {prev.Idle, cur.Idle},
		{prev.IOWait, cur.IOWait}, {prev.IRQ, cur.IRQ}, {prev.SoftIRQ, cur.SoftIRQ}, {prev.Steal, cur.Steal},
	}
	var total float64
	for i, pr := range pairs {
		v, good := d(pr[0], pr[1])
		if !good {
			// iowait can go backwards on some kernels (it is an estimate
			// per idle CPU); treat that field as 0 rather than dropping
			// the sample.
			if i == 4 {
				v = 0
			} else {
				return p, false
			}
		}
		parts[i] = v
		total += v
	}
	if total <= 0 {
		return p, false
	}
	pct := func(v float64) float64 { return 100 * v / total }
	return CPUPct{
		User:   pct(parts[0] + parts[1]),
		System: pct(parts[2] + parts[5] + parts[6]),
		IOWait: pct(parts[4]),
		Steal:  pct(parts[7]),
		Idle:   pct(parts[3]),
	}, true
}

// Mem holds the /proc/meminfo fields tunebench uses, in bytes.
type Mem struct {
	Total, Free, Available, Buffers, Cached, SReclaimable, Shmem, Dirty, Writeback uint64
	HasAvailable                                                                   bool
	// HugePages are the default-size huge page counters (HugePages_Total,
	// _Free, _Rsvd, _Surp: counts, not bytes) and HugePageSize their size
	// in bytes.
	HugePagesTotal, HugePagesFree, HugePagesRsvd, HugePagesSurp, HugePageSize uint64
}

// Used is memory in use: MemTotal - MemAvailable (what procps' free shows
// as used since 4.0), or, on kernels without MemAvailable (< 3.14),
// MemTotal - MemFree - Buffers - Cached - SReclaimable.
func (m Mem) Used() uint64 {
	if m.HasAvailable {
		return sub0(m.Total, m.Available)
	}
	return sub0(m.Total, m.Free+m.Buffers+m.Cached+m.SReclaimable)
}

// PageCache is the file-backed page cache: Cached + Buffers - Shmem.
// Shared memory (PostgreSQL's shared_buffers, tmpfs files) is counted by
// the kernel in Cached but is not a cache of files on disk.
func (m Mem) PageCache() uint64 { return sub0(m.Cached+m.Buffers, m.Shmem) }

func sub0(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// ParseMeminfo reads /proc/meminfo ("Name:   123 kB" lines).
func ParseMeminfo(b []byte) (Mem, error) {
	var m Mem
	seen := 0
	for line := range bytes.Lines(b) {
		name, rest, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/meminfo: %s: %w", name, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		switch name {
		case "MemTotal":
			m.Total = v
			seen++
		case "MemFree":
			m.Free = v
			seen++
		case "MemAvailable":
			m.Available, m.HasAvailable = v, true
		case "Buffers":
			m.Buffers = v
		case "Cached":
			m.Cached = v
		case "SReclaimable":
			m.SReclaimable = v
		case "Shmem":
			m.Shmem = v
		case "Dirty":
			m.Dirty = v
		case "Writeback":
			m.Writeback = v
		case "HugePages_Total":
			m.HugePagesTotal = v
		case "HugePages_Free":
			m.HugePagesFree = v
		case "HugePages_Rsvd":
			m.HugePagesRsvd = v
		case "HugePages_Surp":
			m.HugePagesSurp = v
		case "Hugepagesize":
			m.HugePageSize = v
		}
	}
	if seen < 2 {
		return m, errors.New("/proc/meminfo: no MemTotal/MemFree")
	}
	return m, nil
}

// DiskStat is one device's line of /proc/diskstats (counters since boot).
type DiskStat struct {
	Major, Minor           uint32
	Name                   string
	ReadIOs, ReadSectors   uint64
	ReadMs                 uint64 // time spent reading, summed over requests
	WriteIOs, WriteSectors uint64
	WriteMs                uint64
	InFlight               uint64
	IOMs                   uint64 // time with at least one request in flight
	DiscardIOs             uint64 // kernel 4.18+, else 0
	FlushIOs, FlushMs      uint64 // kernel 5.5+, else 0
}

// SectorSize is the unit of the sector counters in /proc/diskstats, fixed
// at 512 bytes whatever the device's block size.
const SectorSize = 512

// ParseDiskstats reads /proc/diskstats into a map by device name.
func ParseDiskstats(b []byte) (map[string]DiskStat, error) {
	out := map[string]DiskStat{}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		if len(f) < 14 {
			return nil, fmt.Errorf("/proc/diskstats: short line %q", strings.TrimSpace(string(line)))
		}
		var n [18]uint64
		for i := 3; i < len(f) && i-3 < len(n); i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/diskstats: %s field %d: %w", f[2], i+1, err)
			}
			n[i-3] = v
		}
		maj, err1 := strconv.ParseUint(f[0], 10, 32)
		minr, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/diskstats: bad device numbers in %q", strings.TrimSpace(string(line)))
		}
		out[f[2]] = DiskStat{
			Major: uint32(maj), Minor: uint32(minr), Name: f[2],
			ReadIOs: n[0], ReadSectors: n[2], ReadMs: n[3],
			WriteIOs: n[4], WriteSectors: n[6], WriteMs: n[7],
			InFlight: n[8], IOMs: n[9],
			DiscardIOs: n[11], FlushIOs: n[15], FlushMs: n[16],
		}
	}
	return out, nil
}

// DiskRates is a device's activity over an interval.
type DiskRates struct {
	ReadIOPS, WriteIOPS       float64
	ReadBytesS, WriteBytesS   float64
	AwaitMs                   float64 // mean time per read or write request (queue + service), 0 without requests
	UtilPct                   float64 // share of the interval with requests in flight
	ReadAwaitMs, WriteAwaitMs float64
}

// DiskRatesBetween computes rates over secs seconds; ok is false when a
// counter went backwards (device re-created) or secs <= 0.
func DiskRatesBetween(prev, cur DiskStat, secs float64) (r DiskRates, ok bool) {
	if secs <= 0 || cur.ReadIOs < prev.ReadIOs || cur.WriteIOs < prev.WriteIOs ||
		cur.ReadSectors < prev.ReadSectors || cur.WriteSectors < prev.WriteSectors ||
		cur.ReadMs < prev.ReadMs || cur.WriteMs < prev.WriteMs || cur.IOMs < prev.IOMs {
		return r, false
	}
	rio, wio := float64(cur.ReadIOs-prev.ReadIOs), float64(cur.WriteIOs-prev.WriteIOs)
	rms, wms := float64(cur.ReadMs-prev.ReadMs), float64(cur.WriteMs-prev.WriteMs)
	r.ReadIOPS, r.WriteIOPS = rio/secs, wio/secs
	r.ReadBytesS = float64(cur.ReadSectors-prev.ReadSectors) * SectorSize / secs
	r.WriteBytesS = float64(cur.WriteSectors-prev.WriteSectors) * SectorSize / secs
	if rio+wio > 0 {
		r.AwaitMs = (rms + wms) / (rio + wio)
	}
	if rio > 0 {
		r.ReadAwaitMs = rms / rio
	}
	if wio > 0 {
		r.WriteAwaitMs = wms / wio
	}
	r.UtilPct = 100 * float64(cur.IOMs-prev.IOMs) / (secs * 1000)
	if r.UtilPct > 100 {
		r.UtilPct = 100
	}
	return r, true
}

// NetDev is one interface's byte counters from /proc/net/dev.
type NetDev struct {
	RxBytes, TxBytes uint64
}

// ParseNetDev reads /proc/net/dev (two header lines, then
// "iface: rx_bytes rx_packets ... tx_bytes ...").
func ParseNetDev(b []byte) (map[string]NetDev, error) {
	out := map[string]NetDev{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if len(f) < 16 {
			if strings.Contains(name, "|") { // header
				continue
			}
			return nil, fmt.Errorf("/proc/net/dev: short line for %s", name)
		}
		rx, err1 := strconv.ParseUint(f[0], 10, 64)
		tx, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/dev: bad counters for %s", name)
		}
		out[name] = NetDev{RxBytes: rx, TxBytes: tx}
	}
	return out, sc.Err()
}

// NetSums adds up the interfaces: rx and tx over every interface except
// loopback, and loopback's received bytes (every byte sent on lo is also
// received on it once) separately.
func NetSums(m map[string]NetDev) (rx, tx, lo uint64) {
	for name, d := range m {
		if name == "lo" {
			lo = d.RxBytes
			continue
		}
		rx += d.RxBytes
		tx += d.TxBytes
	}
	return rx, tx, lo
}

// Pressure is a /proc/pressure file's stall totals in microseconds (PSI,
// Linux 4.20+): Some, the time at least one task waited for the resource;
// Full, the time all non-idle tasks did (the cpu file has no full line
// before 5.13, and it means nothing there).
type Pressure struct {
	Some, Full uint64
	HasFull    bool
}

// ParsePressure reads /proc/pressure/cpu, io or memory:
//
//	some avg10=0.00 avg60=3.16 avg300=8.84 total=3493427609
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func ParsePressure(b []byte) (Pressure, error) {
	var p Pressure
	seen := false
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 || (f[0] != "some" && f[0] != "full") {
			continue
		}
		var total uint64
		found := false
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return p, fmt.Errorf("pressure: %s total: %w", f[0], err)
				}
				total, found = n, true
			}
		}
		if !found {
			return p, fmt.Errorf("pressure: no total in %q", strings.TrimSpace(string(line)))
		}
		if f[0] == "some" {
			p.Some, seen = total, true
		} else {
			p.Full, p.HasFull = total, true
		}
	}
	if !seen {
		return p, errors.New("pressure: no some line")
	}
	return p, nil
}
