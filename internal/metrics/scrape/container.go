package scrape

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

// The container series (docs/metrics.md).
const (
	ContainerCPU       = "container.cpu_pct"           // percent of one CPU
	ContainerThrottled = "container.cpu_throttled_pct" // CFS periods in which it was throttled, percent
	ContainerMem       = "container.mem_working_set_bytes"
	ContainerRead      = "container.read_bytes_s"
	ContainerWrite     = "container.write_bytes_s"
	ContainerRx        = "container.net_rx_bytes_s"
	ContainerTx        = "container.net_tx_bytes_s"
)

// Container samples one container through cAdvisor's /metrics, or a
// kubelet's /metrics/cadvisor: its CPU (percent of one CPU), CFS
// throttling, working-set memory, storage I/O and network, the series of
// `docker stats`. Name matches the container's name label (cAdvisor's
// name, the kubelet's container label) or its id (the last element of the id
// label, or a prefix of it: a short docker id), given as ID.
type Container struct {
	URL string
	// ID is the container's name or id.
	ID string

	client *http.Client
	cs     counters
}

func (c *Container) Name() string { return "container " + c.ID + " at " + Redact(c.URL) }

// matches reports whether a sample is the container's.
func (c *Container) matches(m *dto.Metric) bool {
	if n := label(m, "name"); n != "" && n == c.ID {
		return true
	}
	if n := label(m, "container"); n != "" && n == c.ID {
		return true
	}
	if id := label(m, "id"); id != "" {
		last := path.Base(strings.TrimSuffix(strings.TrimSuffix(id, ".scope"), "/"))
		last = strings.TrimPrefix(last, "docker-")
		last = strings.TrimPrefix(last, "libpod-")
		if last == c.ID || len(c.ID) >= 12 && strings.HasPrefix(last, c.ID) {
			return true
		}
	}
	return false
}

// sum adds the container's samples of a family (several CPUs, devices or
// interfaces), and returns when they were taken; ok is false when it has
// none.
func (c *Container) sum(f families, name string, keep func(*dto.Metric) bool) (float64, time.Time, bool) {
	fam := f.m[name]
	if fam == nil {
		return 0, time.Time{}, false
	}
	var v float64
	var at time.Time
	ok := false
	for _, m := range fam.Metric {
		if !c.matches(m) || keep != nil && !keep(m) {
			continue
		}
		v += value(m)
		if t := stamp(m, f.at); t.After(at) {
			at = t
		}
		ok = true
	}
	return v, at, ok
}

func (c *Container) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	if c.client == nil {
		c.client, c.cs = newClient(), counters{}
	}
	f, err := fetch(ctx, c.client, c.URL)
	if err != nil {
		return nil, err
	}
	// Old cAdvisors give the total next to each CPU's share.
	notPerCPU := func(m *dto.Metric) bool { cpu := label(m, "cpu"); return cpu == "" || cpu == "total" }
	cpu, cpuAt, found := c.sum(f, "container_cpu_usage_seconds_total", notPerCPU)
	if !found {
		return nil, c.notFound(f)
	}
	if err := c.oneContainer(f); err != nil {
		return nil, err
	}
	var pts []sampler.Point
	if r, ok := c.cs.get("cpu").rate(cpu, cpuAt); ok {
		pts = append(pts, sampler.Point{Series: ContainerCPU, V: 100 * r})
	}
	if thr, at, ok := c.sum(f, "container_cpu_cfs_throttled_periods_total", nil); ok {
		per, pat, ok2 := c.sum(f, "container_cpu_cfs_periods_total", nil)
		di, _, ok3 := c.cs.get("throttled").increase(thr, at)
		dp, _, ok4 := c.cs.get("periods").increase(per, pat)
		if ok2 && ok3 && ok4 && dp > 0 {
			pts = append(pts, sampler.Point{Series: ContainerThrottled, V: min(100, 100*di/dp)})
		}
	}
	if mem, _, ok := c.sum(f, "container_memory_working_set_bytes", nil); ok {
		pts = append(pts, sampler.Point{Series: ContainerMem, V: mem})
	}
	for _, io := range []struct{ metric, op, series string }{
		{"container_fs_reads_bytes_total", "", ContainerRead},
		{"container_fs_writes_bytes_total", "", ContainerWrite},
	} {
		v, at, ok := c.sum(f, io.metric, nil)
		if !ok {
			// Without the fs counters (a kubelet, cgroup v2): the
			// block I/O of the container's cgroup.
			op := map[string]string{ContainerRead: "Read", ContainerWrite: "Write"}[io.series]
			v, at, ok = c.sum(f, "container_blkio_device_usage_total", func(m *dto.Metric) bool { return label(m, "operation") == op })
		}
		if !ok {
			continue
		}
		if r, good := c.cs.get(io.series).rate(v, at); good {
			pts = append(pts, sampler.Point{Series: io.series, V: r})
		}
	}
	for _, nw := range []struct{ metric, series string }{
		{"container_network_receive_bytes_total", ContainerRx},
		{"container_network_transmit_bytes_total", ContainerTx},
	} {
		if v, at, ok := c.sum(f, nw.metric, nil); ok {
			if r, good := c.cs.get(nw.series).rate(v, at); good {
				pts = append(pts, sampler.Point{Series: nw.series, V: r})
			}
		}
	}
	return pts, nil
}

// oneContainer refuses a name that matches several containers (a kubelet
// with two pods whose containers are both named postgres): their figures
// would be added up as one.
func (c *Container) oneContainer(f families) error {
	ids := map[string]bool{}
	for _, m := range f.m["container_cpu_usage_seconds_total"].Metric {
		if c.matches(m) {
			ids[label(m, "id")] = true
		}
	}
	if len(ids) <= 1 {
		return nil
	}
	var list []string
	for id := range ids {
		list = append(list, path.Base(id))
	}
	sort.Strings(list)
	return fmt.Errorf("%q names %d containers at %s (%s): give --container one of their ids", c.ID, len(ids), Redact(c.URL), strings.Join(list, ", "))
}

// notFound says the container is not at the URL, naming the ones that
// are.
func (c *Container) notFound(f families) error {
	fam := f.m["container_cpu_usage_seconds_total"]
	if fam == nil {
		return fmt.Errorf("%s serves no container_cpu_usage_seconds_total: is it cAdvisor's /metrics (or a kubelet's /metrics/cadvisor)?", Redact(c.URL))
	}
	seen := map[string]bool{}
	for _, m := range fam.Metric {
		for _, l := range []string{"name", "container"} {
			if v := label(m, l); v != "" {
				seen[v] = true
			}
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	return fmt.Errorf("no container %q at %s (give its name or id; containers there: %s)", c.ID, Redact(c.URL), strings.Join(names, ", "))
}
