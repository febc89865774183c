package system

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// TestPortable: the gopsutil sampler (macOS, Windows) splits the CPU time
// and rates the network as the /proc sampler does, loopback apart, with
// memory at once and rates from the second sample.
func TestPortable(t *testing.T) {
	at := time.Unix(1000, 0)
	ct := cpu.TimesStat{User: 10, System: 5, Idle: 100, Irq: 1}
	ifs := []net.IOCountersStat{{Name: "Ethernet", BytesRecv: 1000, BytesSent: 500}, {Name: "Loopback Pseudo-Interface 1", BytesRecv: 70}}
	s := &Portable{clock: func() time.Time { return at },
		times: func(context.Context) (cpu.TimesStat, error) { return ct, nil },
		memory: func(context.Context) (*mem.VirtualMemoryStat, error) {
			return &mem.VirtualMemoryStat{Total: 8e9, Available: 6e9}, nil
		},
		network: func(context.Context) ([]net.IOCountersStat, error) { return ifs, nil }}
	pts, err := s.Sample(context.Background(), at)
	if err != nil || len(pts) != 1 || pts[0].Series != MemUsed || pts[0].V != 2e9 {
		t.Fatalf("first sample %v %v", pts, err)
	}
	at = at.Add(2 * time.Second)
	ct = cpu.TimesStat{User: 13, System: 5.5, Idle: 101, Irq: 1.5} // +3 user, +1 system, +1 idle
	ifs[0].BytesRecv, ifs[0].BytesSent, ifs[1].BytesRecv = 5000, 700, 270
	pts, err = s.Sample(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]float64{}
	for _, p := range pts {
		v[p.Series] = p.V
	}
	want := map[string]float64{CPUUser: 60, CPUSystem: 20, CPUIdle: 20, CPUIOWait: 0, NetRx: 2000, NetTx: 100, NetLo: 100, MemUsed: 2e9}
	for k, w := range want {
		if math.Abs(v[k]-w) > 1e-9 {
			t.Errorf("%s = %v, want %v (%v)", k, v[k], w, v)
		}
	}
	// A CPU counter that went back (a suspend, a wrapped counter) and an
	// adapter gone: those intervals are skipped, not zeros; memory stays.
	at = at.Add(time.Second)
	ct.User = 1
	ifs = ifs[1:]
	pts, err = s.Sample(context.Background(), at)
	if err != nil || len(pts) != 1 || pts[0].Series != MemUsed {
		t.Errorf("after counters went back: %v %v, want memory only", pts, err)
	}
}

// TestPortableHere: through gopsutil on this machine, the same series as
// the /proc sampler, in range.
func TestPortableHere(t *testing.T) {
	s := &Portable{}
	if _, err := s.Sample(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	// The network series of an interval whose counters went back are left
	// out (TestPortable): another test that removes a veth pair meanwhile
	// does that, so a few intervals are tried.
	var v map[string]float64
	for try := 0; try < 5; try++ {
		time.Sleep(300 * time.Millisecond)
		pts, err := s.Sample(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		v = map[string]float64{}
		for _, p := range pts {
			v[p.Series] = p.V
		}
		if _, ok := v[NetRx]; ok {
			break
		}
	}
	sum := v[CPUUser] + v[CPUSystem] + v[CPUIOWait] + v[CPUSteal] + v[CPUIdle]
	if math.Abs(sum-100) > 0.01 || v[MemUsed] <= 0 {
		t.Errorf("cpu split sums to %v, memory %v: %v", sum, v[MemUsed], v)
	}
	for _, k := range []string{NetRx, NetTx, NetLo} {
		if _, ok := v[k]; !ok {
			t.Errorf("no %s: %v", k, v)
		}
	}
}
