package system

import (
	"context"
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
	clock   clock
	prevCPU cpu.TimesStat
	prevNet netTotals
	prevAt  time.Time
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
	var pts []sampler.Point
	vm, err := memory(ctx)
	if err != nil {
		return nil, err
	}
	pts = append(pts, sampler.Point{Series: MemUsed, V: float64(vm.Total - min(vm.Total, vm.Available))})
	if vm.Cached > 0 {
		pts = append(pts, sampler.Point{Series: PageCache, V: float64(vm.Cached)})
	}
	ct, err := times(ctx)
	if err != nil {
		return pts, err
	}
	ifs, err := network(ctx)
	if err != nil {
		return pts, err
	}
	var nt netTotals
	for _, i := range ifs {
		if loopback(i.Name) {
			nt.lo += i.BytesRecv
		} else {
			nt.rx += i.BytesRecv
			nt.tx += i.BytesSent
		}
	}
	at := s.clock.now()
	prevCPU, prevNet, prevAt := s.prevCPU, s.prevNet, s.prevAt
	s.prevCPU, s.prevNet, s.prevAt = ct, nt, at
	secs := at.Sub(prevAt).Seconds()
	if prevAt.IsZero() || secs <= 0 {
		return pts, nil
	}
	d := func(cur, prev float64) float64 { return max(0, cur-prev) }
	user := d(ct.User, prevCPU.User) + d(ct.Nice, prevCPU.Nice)
	system := d(ct.System, prevCPU.System) + d(ct.Irq, prevCPU.Irq) + d(ct.Softirq, prevCPU.Softirq)
	iowait, steal, idle := d(ct.Iowait, prevCPU.Iowait), d(ct.Steal, prevCPU.Steal), d(ct.Idle, prevCPU.Idle)
	if total := user + system + iowait + steal + idle; total > 0 {
		pct := func(v float64) float64 { return 100 * v / total }
		pts = append(pts,
			sampler.Point{Series: CPUUser, V: pct(user)}, sampler.Point{Series: CPUSystem, V: pct(system)},
			sampler.Point{Series: CPUIOWait, V: pct(iowait)}, sampler.Point{Series: CPUSteal, V: pct(steal)},
			sampler.Point{Series: CPUIdle, V: pct(idle)})
	}
	rate := func(cur, prev uint64) float64 {
		if cur < prev { // an interface went away or its counter wrapped
			return 0
		}
		return float64(cur-prev) / secs
	}
	pts = append(pts,
		sampler.Point{Series: NetRx, V: rate(nt.rx, prevNet.rx)}, sampler.Point{Series: NetTx, V: rate(nt.tx, prevNet.tx)},
		sampler.Point{Series: NetLo, V: rate(nt.lo, prevNet.lo)})
	return pts, nil
}

// loopback reports whether an interface name is the loopback's: lo
// (Linux), lo0 (macOS), "Loopback Pseudo-Interface 1" (Windows).
func loopback(name string) bool {
	return name == "lo" || name == "lo0" || strings.Contains(strings.ToLower(name), "loopback")
}
