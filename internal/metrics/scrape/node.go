package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
)

// Node samples a host through its node_exporter: the CPU split, memory,
// network and pressure stall series of the /proc samplers with Prefix
// before them (system.ServerPrefix for a database server's host), and the
// disk.* series of Disk (a device name as node_exporter labels it) or,
// without one, of every disk it reports but device-mapper, md, loop, ram
// and zram devices (which count I/O of the disks beneath them again):
// their I/O summed, await over all their requests, busy the busiest's.
type Node struct {
	URL    string
	Prefix string
	Disk   string
	// NoDisk leaves the disk series out (another sampler gives them).
	NoDisk bool

	client *http.Client
	cs     counters
}

func (n *Node) Name() string { return "node_exporter " + Redact(n.URL) }

// cpuModes are node_cpu_seconds_total's modes in /proc/stat's split
// (guest time is inside user and nice already).
var cpuModes = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

func (n *Node) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	if n.client == nil {
		n.client, n.cs = newClient(), counters{}
	}
	f, err := fetch(ctx, n.client, n.URL)
	if err != nil {
		return nil, err
	}
	if f.m["node_cpu_seconds_total"] == nil {
		return nil, fmt.Errorf("%s serves no node_cpu_seconds_total: is it node_exporter's /metrics?", Redact(n.URL))
	}
	var pts []sampler.Point
	pts = append(pts, n.cpu(f)...)
	pts = append(pts, n.memory(f)...)
	pts = append(pts, n.net(f)...)
	pts = append(pts, n.pressure(f)...)
	if !n.NoDisk {
		dp, err := n.disk(f)
		if err != nil {
			return pts, err
		}
		pts = append(pts, dp...)
	}
	return pts, nil
}

func (n *Node) series(name string) string { return n.Prefix + name }

// cpu sums each mode over the CPUs, and splits the increase as the /proc
// sampler does.
func (n *Node) cpu(f families) []sampler.Point {
	sums := map[string]float64{}
	for _, m := range f.m["node_cpu_seconds_total"].Metric {
		sums[label(m, "mode")] += value(m)
	}
	// The modes' raw changes. node_exporter restarted (a reset) when their
	// sum went down: a mode that went down then counts its new value, as
	// Prometheus' rate() would. A mode that alone went down while the sum
	// grew is iowait's estimate stepping back (as /proc/stat's can): 0,
	// not a reset that would give it the whole interval.
	inc := map[string]float64{}
	ok, sum := true, 0.0
	for _, mode := range cpuModes {
		d, good := n.cs.get("cpu/"+mode).change(sums[mode], f.at)
		ok = ok && good
		inc[mode] = d
		sum += d
	}
	if !ok {
		return nil
	}
	total := 0.0
	for _, mode := range cpuModes {
		if inc[mode] < 0 {
			inc[mode] = 0
			if sum < 0 {
				inc[mode] = sums[mode]
			}
		}
		total += inc[mode]
	}
	if total <= 0 {
		return nil
	}
	pct := func(v float64) float64 { return 100 * v / total }
	return []sampler.Point{
		{Series: n.series(system.CPUUser), V: pct(inc["user"] + inc["nice"])},
		{Series: n.series(system.CPUSystem), V: pct(inc["system"] + inc["irq"] + inc["softirq"])},
		{Series: n.series(system.CPUIOWait), V: pct(inc["iowait"])},
		{Series: n.series(system.CPUSteal), V: pct(inc["steal"])},
		{Series: n.series(system.CPUIdle), V: pct(inc["idle"])},
	}
}

// single is the value of an unlabelled series (a gauge or a counter).
func single(f families, name string) (float64, bool) {
	fam := f.m[name]
	if fam == nil || len(fam.Metric) == 0 {
		return 0, false
	}
	return value(fam.Metric[0]), true
}

// memory computes the /proc sampler's memory figures from the meminfo
// gauges node_exporter serves.
func (n *Node) memory(f families) []sampler.Point {
	total, ok1 := single(f, "node_memory_MemTotal_bytes")
	avail, ok2 := single(f, "node_memory_MemAvailable_bytes")
	if !ok1 || !ok2 {
		return nil
	}
	cached, _ := single(f, "node_memory_Cached_bytes")
	buffers, _ := single(f, "node_memory_Buffers_bytes")
	shmem, _ := single(f, "node_memory_Shmem_bytes")
	dirty, _ := single(f, "node_memory_Dirty_bytes")
	wb, _ := single(f, "node_memory_Writeback_bytes")
	return []sampler.Point{
		{Series: n.series(system.MemUsed), V: max(0, total-avail)},
		{Series: n.series(system.PageCache), V: max(0, cached+buffers-shmem)},
		{Series: n.series(system.MemDirty), V: dirty + wb},
		{Series: n.series(system.MemShmem), V: shmem},
	}
}

// net sums the interfaces' byte rates, loopback apart.
func (n *Node) net(f families) []sampler.Point {
	var rx, tx, lo float64
	ok := false
	for _, dir := range []string{"receive", "transmit"} {
		fam := f.m["node_network_"+dir+"_bytes_total"]
		if fam == nil {
			continue
		}
		for _, m := range fam.Metric {
			dev := label(m, "device")
			r, good := n.cs.get("net/"+dir+"/"+dev).rate(value(m), f.at)
			if !good {
				continue
			}
			ok = true
			switch {
			case dev == "lo" && dir == "receive":
				lo += r
			case dev == "lo":
			case dir == "receive":
				rx += r
			default:
				tx += r
			}
		}
	}
	if !ok {
		return nil
	}
	return []sampler.Point{
		{Series: n.series(system.NetRx), V: rx}, {Series: n.series(system.NetTx), V: tx}, {Series: n.series(system.NetLo), V: lo},
	}
}

// pressure turns the stall totals (seconds) into the share of the
// interval, in percent.
func (n *Node) pressure(f families) []sampler.Point {
	var pts []sampler.Point
	for _, p := range []struct{ metric, series string }{
		{"node_pressure_cpu_waiting_seconds_total", system.PSICPU},
		{"node_pressure_io_waiting_seconds_total", system.PSIIO},
		{"node_pressure_io_stalled_seconds_total", system.PSIIOFull},
		{"node_pressure_memory_waiting_seconds_total", system.PSIMem},
		{"node_pressure_memory_stalled_seconds_total", system.PSIMemFull},
	} {
		v, ok := single(f, p.metric)
		if !ok {
			continue
		}
		if r, good := n.cs.get(p.metric).rate(v, f.at); good {
			pts = append(pts, sampler.Point{Series: n.series(p.series), V: 100 * r})
		}
	}
	return pts
}

// skipDisk are devices that count the I/O of the disks beneath them, or
// no disk at all.
func skipDisk(dev string) bool {
	for _, p := range []string{"dm-", "md", "loop", "ram", "zram", "sr", "fd"} {
		if strings.HasPrefix(dev, p) {
			return true
		}
	}
	return false
}

// disk computes the disk.* series of the chosen devices.
func (n *Node) disk(f families) ([]sampler.Point, error) {
	type devCounters struct{ reads, writes, rbytes, wbytes, rtime, wtime, iotime float64 }
	devs := map[string]*devCounters{}
	fields := map[string]func(d *devCounters, v float64){
		"node_disk_reads_completed_total":    func(d *devCounters, v float64) { d.reads = v },
		"node_disk_writes_completed_total":   func(d *devCounters, v float64) { d.writes = v },
		"node_disk_read_bytes_total":         func(d *devCounters, v float64) { d.rbytes = v },
		"node_disk_written_bytes_total":      func(d *devCounters, v float64) { d.wbytes = v },
		"node_disk_read_time_seconds_total":  func(d *devCounters, v float64) { d.rtime = v },
		"node_disk_write_time_seconds_total": func(d *devCounters, v float64) { d.wtime = v },
		"node_disk_io_time_seconds_total":    func(d *devCounters, v float64) { d.iotime = v },
	}
	for name, set := range fields {
		fam := f.m[name]
		if fam == nil {
			continue
		}
		for _, m := range fam.Metric {
			dev := label(m, "device")
			if n.Disk != "" && dev != n.Disk || n.Disk == "" && skipDisk(dev) {
				continue
			}
			if devs[dev] == nil {
				devs[dev] = &devCounters{}
			}
			set(devs[dev], value(m))
		}
	}
	if len(devs) == 0 {
		if n.Disk != "" {
			return nil, fmt.Errorf("%s reports no disk %s (give --host-disk one of its node_disk_* devices)", Redact(n.URL), n.Disk)
		}
		return nil, errors.New(Redact(n.URL) + " reports no disk")
	}
	names := make([]string, 0, len(devs))
	for d := range devs {
		names = append(names, d)
	}
	sort.Strings(names)
	var reads, writes, rbytes, wbytes, rtime, wtime, busy, secs float64
	ok := true
	for _, d := range names {
		c := devs[d]
		key := "disk/" + d + "/"
		inc := func(name string, v float64) float64 {
			x, s, good := n.cs.get(key+name).increase(v, f.at)
			ok = ok && good
			secs = s
			return x
		}
		reads += inc("reads", c.reads)
		writes += inc("writes", c.writes)
		rbytes += inc("rbytes", c.rbytes)
		wbytes += inc("wbytes", c.wbytes)
		rtime += inc("rtime", c.rtime)
		wtime += inc("wtime", c.wtime)
		busy = max(busy, inc("iotime", c.iotime))
	}
	if !ok || secs <= 0 {
		return nil, nil
	}
	await := func(t, ios float64) float64 {
		if ios <= 0 {
			return 0
		}
		return 1000 * t / ios
	}
	return []sampler.Point{
		{Series: system.DiskReadIOPS, V: reads / secs}, {Series: system.DiskWrIOPS, V: writes / secs},
		{Series: system.DiskReadBps, V: rbytes / secs}, {Series: system.DiskWriteBps, V: wbytes / secs},
		{Series: system.DiskAwait, V: await(rtime+wtime, reads+writes)},
		{Series: system.DiskRAwait, V: await(rtime, reads)}, {Series: system.DiskWAwait, V: await(wtime, writes)},
		{Series: system.DiskUtil, V: min(100, 100*busy/secs)},
	}, nil
}
