package scrape

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/metrics/system"
)

// exporter serves the text it is given, changed between scrapes.
type exporter struct {
	mu   sync.Mutex
	text string
	code int
}

func (e *exporter) set(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.text, e.code = text, http.StatusOK
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.code != http.StatusOK {
		w.WriteHeader(e.code)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprint(w, e.text)
}

func serve(t *testing.T) (*exporter, string) {
	e := &exporter{code: http.StatusOK}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL + "/metrics"
}

func values(pts []sampler.Point) map[string]float64 {
	m := map[string]float64{}
	for _, p := range pts {
		m[p.Series] = p.V
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// nodeText is node_exporter's exposition of a 2-CPU host with a disk, a
// device-mapper volume on it and two interfaces; k scales every counter
// (k = 0 and 1 are two scrapes).
func nodeText(user, idle, diskBytes, rx float64, busy float64) string {
	return fmt.Sprintf(`# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="user"} %[1]g
node_cpu_seconds_total{cpu="0",mode="idle"} %[2]g
node_cpu_seconds_total{cpu="0",mode="system"} 10
node_cpu_seconds_total{cpu="1",mode="user"} %[1]g
node_cpu_seconds_total{cpu="1",mode="idle"} %[2]g
node_cpu_seconds_total{cpu="1",mode="system"} 10
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 8e+09
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes 6e+09
# TYPE node_memory_Cached_bytes gauge
node_memory_Cached_bytes 2e+09
# TYPE node_memory_Buffers_bytes gauge
node_memory_Buffers_bytes 1e+08
# TYPE node_memory_Shmem_bytes gauge
node_memory_Shmem_bytes 5e+08
# TYPE node_network_receive_bytes_total counter
node_network_receive_bytes_total{device="eth0"} %[4]g
node_network_receive_bytes_total{device="lo"} %[4]g
# TYPE node_network_transmit_bytes_total counter
node_network_transmit_bytes_total{device="eth0"} 100
node_network_transmit_bytes_total{device="lo"} %[4]g
# TYPE node_disk_written_bytes_total counter
node_disk_written_bytes_total{device="sda"} %[3]g
node_disk_written_bytes_total{device="dm-0"} %[3]g
# TYPE node_disk_writes_completed_total counter
node_disk_writes_completed_total{device="sda"} %[3]g
node_disk_writes_completed_total{device="dm-0"} %[3]g
# TYPE node_disk_io_time_seconds_total counter
node_disk_io_time_seconds_total{device="sda"} %[5]g
node_disk_io_time_seconds_total{device="dm-0"} %[5]g
# TYPE node_pressure_io_waiting_seconds_total counter
node_pressure_io_waiting_seconds_total %[5]g
`, user, idle, diskBytes, rx, busy)
}

// TestNodeRates: two scrapes apart (the scrape times, without sample
// timestamps): the CPU split, memory, network and disk (device-mapper left
// out: it counts its disk's I/O again) and pressure, as the /proc samplers
// name them; after a counter reset the increase is the new value.
func TestNodeRates(t *testing.T) {
	e, url := serve(t)
	n := &Node{URL: url, Prefix: system.ServerPrefix}
	e.set(nodeText(100, 100, 1000, 1000, 1))
	pts, err := n.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// Gauges come at once, rates from the second scrape.
	if v := values(pts); len(v) != 4 || v[system.ServerPrefix+system.MemUsed] != 2e9 || v[system.ServerPrefix+system.PageCache] != 1.6e9 {
		t.Fatalf("first scrape %v", v)
	}
	time.Sleep(200 * time.Millisecond)
	// +3 s user and +1 s idle on each CPU: user 75%.
	e.set(nodeText(103, 101, 1000+4096, 1000+500, 1.1))
	pts, err = n.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := values(pts)
	if !near(v[system.ServerPrefix+system.CPUUser], 75) || !near(v[system.ServerPrefix+system.CPUIdle], 25) || v[system.ServerPrefix+system.CPUSystem] != 0 {
		t.Errorf("cpu %v", v)
	}
	secs := 4096 / v[system.DiskWriteBps] // the interval the rates used
	if secs < 0.2 || secs > 5 || !near(v[system.DiskWrIOPS], 4096/secs) || !near(v[system.DiskUtil], 100*0.1/secs) ||
		!near(v[system.ServerPrefix+system.NetRx], 500/secs) || !near(v[system.ServerPrefix+system.NetLo], 500/secs) ||
		v[system.ServerPrefix+system.NetTx] != 0 || !near(v[system.ServerPrefix+system.PSIIO], 100*0.1/secs) {
		t.Errorf("rates over %.3f s: %v", secs, v)
	}
	// A reboot: the counters start again from small values.
	time.Sleep(50 * time.Millisecond)
	e.set(nodeText(2, 2, 100, 10, 0.01))
	pts, err = n.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if v := values(pts); v[system.DiskWriteBps] <= 0 || v[system.ServerPrefix+system.NetRx] <= 0 || !near(v[system.ServerPrefix+system.CPUUser], 50) {
		t.Errorf("after a reset: %v", v)
	}
	// One disk named: only its series.
	n2 := &Node{URL: url, Disk: "nvme9"}
	if _, err := n2.Sample(context.Background(), time.Time{}); err == nil || !strings.Contains(err.Error(), "no disk nvme9") {
		t.Errorf("a disk it does not report: %v", err)
	}
}

// TestNodeDown: an exporter that fails or does not answer in time is an
// error of that sample (a gap), reported with the URL.
func TestNodeDown(t *testing.T) {
	e, url := serve(t)
	e.mu.Lock()
	e.code = http.StatusInternalServerError
	e.mu.Unlock()
	n := &Node{URL: url}
	if _, err := n.Sample(context.Background(), time.Time{}); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("a failing exporter: %v", err)
	}
	e.set("some_metric 1\n")
	if _, err := n.Sample(context.Background(), time.Time{}); err == nil || !strings.Contains(err.Error(), "node_cpu_seconds_total") {
		t.Errorf("not node_exporter: %v", err)
	}
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	start := time.Now()
	if _, err := (&Node{URL: slow.URL}).Sample(context.Background(), time.Time{}); err == nil || time.Since(start) > Timeout+time.Second {
		t.Errorf("a hanging exporter: %v after %v", err, time.Since(start))
	}
}

// cadvisorText is cAdvisor's exposition of two containers, its samples
// stamped (ms); cpu seconds, throttled and all periods, bytes.
func cadvisorText(ts int64, cpu, thr, periods, rd, rx float64) string {
	return fmt.Sprintf(`# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{cpu="total",id="/docker/3f2a9c81d0e1aa55",name="pg"} %[2]g %[1]d
container_cpu_usage_seconds_total{cpu="total",id="/docker/77777777777777",name="other"} 999 %[1]d
# TYPE container_cpu_cfs_throttled_periods_total counter
container_cpu_cfs_throttled_periods_total{id="/docker/3f2a9c81d0e1aa55",name="pg"} %[3]g %[1]d
# TYPE container_cpu_cfs_periods_total counter
container_cpu_cfs_periods_total{id="/docker/3f2a9c81d0e1aa55",name="pg"} %[4]g %[1]d
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{id="/docker/3f2a9c81d0e1aa55",name="pg"} 1.5e+09 %[1]d
# TYPE container_fs_reads_bytes_total counter
container_fs_reads_bytes_total{device="/dev/sda",id="/docker/3f2a9c81d0e1aa55",name="pg"} %[5]g %[1]d
container_fs_reads_bytes_total{device="/dev/sdb",id="/docker/3f2a9c81d0e1aa55",name="pg"} %[5]g %[1]d
# TYPE container_network_receive_bytes_total counter
container_network_receive_bytes_total{id="/docker/3f2a9c81d0e1aa55",interface="eth0",name="pg"} %[6]g %[1]d
`, ts, cpu, thr, periods, rd, rx)
}

// TestContainerRates: the container's series over the samples' own
// timestamps (2 s apart here, whatever the scrapes' times), found by name
// or by a short id; another name is an error naming the ones there.
func TestContainerRates(t *testing.T) {
	e, url := serve(t)
	for _, id := range []string{"pg", "3f2a9c81d0e1"} {
		c := &Container{URL: url, ID: id}
		e.set(cadvisorText(1_700_000_000_000, 10, 5, 100, 1000, 0))
		if _, err := c.Sample(context.Background(), time.Time{}); err != nil {
			t.Fatal(err)
		}
		// 2 s later by the samples' stamps: 1.5 CPU-seconds (75% of one
		// CPU), 10 of 20 periods throttled, 4 KiB read on each device.
		e.set(cadvisorText(1_700_000_002_000, 11.5, 15, 120, 1000+4096, 2000))
		pts, err := c.Sample(context.Background(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		v := values(pts)
		if !near(v[ContainerCPU], 75) || !near(v[ContainerThrottled], 50) || v[ContainerMem] != 1.5e9 ||
			!near(v[ContainerRead], 4096) || !near(v[ContainerRx], 1000) {
			t.Errorf("%s: %v", id, v)
		}
	}
	c := &Container{URL: url, ID: "nosuch"}
	if _, err := c.Sample(context.Background(), time.Time{}); err == nil || !strings.Contains(err.Error(), "containers there: other, pg") {
		t.Errorf("an unknown container: %v", err)
	}
}

// TestCounter: Prometheus' rate over two samples, a reset counted as the
// new value.
func TestCounter(t *testing.T) {
	var c counter
	t0 := time.Unix(100, 0)
	if _, ok := c.rate(10, t0); ok {
		t.Error("a rate from one sample")
	}
	if r, ok := c.rate(30, t0.Add(2*time.Second)); !ok || r != 10 {
		t.Errorf("rate %v %v", r, ok)
	}
	if r, ok := c.rate(4, t0.Add(4*time.Second)); !ok || r != 2 {
		t.Errorf("after a reset %v %v, want 2", r, ok)
	}
	if _, ok := c.rate(5, t0.Add(4*time.Second)); ok {
		t.Error("a rate over no time")
	}
}

// TestNodeIOWaitBack: an iowait counter that steps back a little while the
// other modes grow is 0 for that interval, not a reset giving iowait the
// whole interval.
func TestNodeIOWaitBack(t *testing.T) {
	e, url := serve(t)
	n := &Node{URL: url, NoDisk: true}
	text := func(user, idle, iowait float64) string {
		return fmt.Sprintf(`# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="user"} %g
node_cpu_seconds_total{cpu="0",mode="idle"} %g
node_cpu_seconds_total{cpu="0",mode="iowait"} %g
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 8e+09
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes 6e+09
`, user, idle, iowait)
	}
	e.set(text(100, 100, 50))
	if _, err := n.Sample(context.Background(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	e.set(text(100.5, 100.5, 49.99))
	pts, err := n.Sample(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := values(pts)
	if !near(v[system.CPUIOWait], 0) || !near(v[system.CPUUser], 50) || !near(v[system.CPUIdle], 50) {
		t.Errorf("iowait stepping back by 10 ms: %v", v)
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("http://mon:s3cret@db:9100/metrics"); strings.Contains(got, "s3cret") || !strings.Contains(got, "db:9100") {
		t.Errorf("Redact: %s", got)
	}
	n := &Node{URL: "http://mon:s3cret@db:9100/metrics"}
	if strings.Contains(n.Name(), "s3cret") {
		t.Errorf("Name: %s", n.Name())
	}
}

// TestContainerAmbiguous: a container name two pods share is refused with
// their ids, not added up as one container.
func TestContainerAmbiguous(t *testing.T) {
	e, url := serve(t)
	e.set(`# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="postgres",id="/kubepods/pod1/aaa111",pod="db-0"} 10
container_cpu_usage_seconds_total{container="postgres",id="/kubepods/pod2/bbb222",pod="db-1"} 20
`)
	_, err := (&Container{URL: url, ID: "postgres"}).Sample(context.Background(), time.Time{})
	if err == nil || !strings.Contains(err.Error(), "aaa111, bbb222") {
		t.Errorf("an ambiguous name: %v", err)
	}
	if _, err := (&Container{URL: url, ID: "aaa111"}).Sample(context.Background(), time.Time{}); err != nil {
		t.Errorf("by id: %v", err)
	}
}
