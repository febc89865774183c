package system

import (
	"context"
	"errors"
	gonet "net"
	"runtime"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

// LocalHost is the sampler of this machine's CPU, memory and network, and
// how it reads them: Linux's /proc (with pressure stalls), elsewhere
// (macOS, Windows) the system's own interfaces through gopsutil.
func LocalHost() (sampler.Sampler, string) {
	if runtime.GOOS == "linux" {
		return &Host{Src: Local{}}, Local{}.Describe()
	}
	return &Portable{}, PortableSource
}

// PortableSource names the Portable sampler's source.
var PortableSource = "gopsutil on " + runtime.GOOS

// Portable samples a machine without /proc through gopsutil: the CPU time
// split (percent of all CPUs; iowait and steal where the system counts
// them), memory in use (total less available) and the page cache where
// the system reports it, and the network (loopback apart), as the /proc
// sampler names them.
type Portable struct {
	clock     clock
	prevCPU   cpu.TimesStat
	prevCPUAt time.Time
	prevNet   netTotals
	prevNetAt time.Time
	// Test hooks (nil: gopsutil).
	times   func(context.Context) (cpu.TimesStat, error)
	memory  func(context.Context) (*mem.VirtualMemoryStat, error)
	network func(context.Context) ([]net.IOCountersStat, error)
}

type netTotals struct{ rx, tx, lo uint64 }

func (*Portable) Name() string { return "host" }

func (s *Portable) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	times, memory, network := s.times, s.memory, s.network
	if times == nil {
		times = func(ctx context.Context) (cpu.TimesStat, error) {
			ts, err := cpu.TimesWithContext(ctx, false)
			if err != nil || len(ts) == 0 {
				return cpu.TimesStat{}, err
			}
			return ts[0], nil
		}
		memory = mem.VirtualMemoryWithContext
		network = func(ctx context.Context) ([]net.IOCountersStat, error) { return net.IOCountersWithContext(ctx, true) }
	}
	// Memory, the CPU split and the network are read apart: one that
	// fails (an adapter gone between listing and reading) leaves the
	// others' points.
	var pts []sampler.Point
	var errs []error
	if vm, err := memory(ctx); err != nil {
		errs = append(errs, err)
	} else {
		pts = append(pts, sampler.Point{Series: MemUsed, V: float64(vm.Total - min(vm.Total, vm.Available))})
		if vm.Cached > 0 {
			pts = append(pts, sampler.Point{Series: PageCache, V: float64(vm.Cached)})
		}
	}
	at := s.clock.now()
	if ct, err := times(ctx); err != nil {
		errs = append(errs, err)
	} else {
		pts = append(pts, s.cpuPoints(ct, at)...)
	}
	if ifs, err := network(ctx); err != nil {
		errs = append(errs, err)
	} else {
		pts = append(pts, s.netPoints(ifs, at)...)
	}
	return pts, errors.Join(errs...)
}

// cpuPoints split the CPU time since the previous reading. An interval in
// which a counter went back is skipped (no points), as the /proc sampler
// does, not turned into zeros.
func (s *Portable) cpuPoints(ct cpu.TimesStat, at time.Time) []sampler.Point {
	prev, prevAt := s.prevCPU, s.prevCPUAt
	s.prevCPU, s.prevCPUAt = ct, at
	if prevAt.IsZero() || !at.After(prevAt) {
		return nil
	}
	// On Windows gopsutil's System is kernel time less idle, interrupt
	// and DPC time already in it: Irq is not added again.
	irq, prevIrq := ct.Irq, prev.Irq
	if runtime.GOOS == "windows" {
		irq, prevIrq = 0, 0
	}
	parts := [][2]float64{{ct.User + ct.Nice, prev.User + prev.Nice}, {ct.System + irq + ct.Softirq, prev.System + prevIrq + prev.Softirq},
		{ct.Iowait, prev.Iowait}, {ct.Steal, prev.Steal}, {ct.Idle, prev.Idle}}
	var d [5]float64
	total := 0.0
	for i, p := range parts {
		if p[0] < p[1] {
			return nil
		}
		d[i] = p[0] - p[1]
		total += d[i]
	}
	if total <= 0 {
		return nil
	}
	pct := func(v float64) float64 { return 100 * v / total }
	return []sampler.Point{{Series: CPUUser, V: pct(d[0])}, {Series: CPUSystem, V: pct(d[1])},
		{Series: CPUIOWait, V: pct(d[2])}, {Series: CPUSteal, V: pct(d[3])}, {Series: CPUIdle, V: pct(d[4])}}
}

// netPoints are the network's rates since the previous reading, loopback
// apart (not given on Windows, whose loopback pseudo-interface counts
// nothing); an interval in which a total went back (an adapter gone) is
// skipped.
func (s *Portable) netPoints(ifs []net.IOCountersStat, at time.Time) []sampler.Point {
	var nt netTotals
	for _, i := range ifs {
		if loopback(i.Name) {
			nt.lo += i.BytesRecv
		} else {
			nt.rx += i.BytesRecv
			nt.tx += i.BytesSent
		}
	}
	prev, prevAt := s.prevNet, s.prevNetAt
	s.prevNet, s.prevNetAt = nt, at
	secs := at.Sub(prevAt).Seconds()
	if prevAt.IsZero() || secs <= 0 || nt.rx < prev.rx || nt.tx < prev.tx || nt.lo < prev.lo {
		return nil
	}
	pts := []sampler.Point{{Series: NetRx, V: float64(nt.rx-prev.rx) / secs}, {Series: NetTx, V: float64(nt.tx-prev.tx) / secs}}
	if runtime.GOOS != "windows" {
		pts = append(pts, sampler.Point{Series: NetLo, V: float64(nt.lo-prev.lo) / secs})
	}
	return pts
}

// loopback reports whether an interface is the loopback: lo (Linux), lo0
// (macOS), "Loopback Pseudo-Interface 1" (Windows), and any other name
// Go's interface list flags as loopback (not adapters that merely have
// "loopback" in their names, as Npcap's).
func loopback(name string) bool {
	if name == "lo" || name == "lo0" || strings.HasPrefix(name, "Loopback Pseudo-Interface") {
		return true
	}
	i, err := gonet.InterfaceByName(name)
	return err == nil && i.Flags&gonet.FlagLoopback != 0
}
