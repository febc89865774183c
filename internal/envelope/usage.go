package envelope

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Usage is what the group has used so far. A part is nil when the group
// does not join the controller that counts it.
type Usage struct {
	Memory *MemoryUsage `json:"memory,omitempty"`
	CPU    *CPUUsage    `json:"cpu,omitempty"`
	IO     []IOUsage    `json:"io,omitempty"`
}

// MemoryUsage counts the group's memory, page cache included.
type MemoryUsage struct {
	Bytes     int64 `json:"bytes"`      // now: anonymous + page cache + kernel
	PeakBytes int64 `json:"peak_bytes"` // the highest Bytes since the group was made
	FileBytes int64 `json:"file_bytes"` // page cache
	AnonBytes int64 `json:"anon_bytes"`
	LimitHits int64 `json:"limit_hits"` // times usage hit the limit and was reclaimed
	OOMKills  int64 `json:"oom_kills"`
}

// CPUUsage is the group's CPU time and its throttling by the quota.
type CPUUsage struct {
	Time            time.Duration `json:"time_ns"`
	Periods         int64         `json:"periods,omitempty"`
	ThrottledPeriod int64         `json:"throttled_periods,omitempty"`
	Throttled       time.Duration `json:"throttled_ns,omitempty"`
}

// IOUsage is the group's I/O on one device, as the throttling counts it.
type IOUsage struct {
	Dev        string `json:"device"`
	ReadIOs    int64  `json:"read_ios"`
	WriteIOs   int64  `json:"write_ios"`
	ReadBytes  int64  `json:"read_bytes"`
	WriteBytes int64  `json:"write_bytes"`
}

// Usage reads the group's counters.
func (g *Group) Usage() (Usage, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var u Usage
	if g.closed {
		return u, fmt.Errorf("envelope %q: Usage after Close", g.env.Name)
	}
	var firstErr error
	read := func(d *groupDir, file string) string {
		b, err := os.ReadFile(filepath.Join(d.path, file))
		if err != nil && firstErr == nil && !os.IsNotExist(err) {
			firstErr = err
		}
		return string(b)
	}
	for _, d := range g.dirs {
		has := func(c string) bool { return slices.Contains(d.controllers, c) }
		if g.version == 1 {
			if has("memory") {
				st := keyed(read(d, "memory.stat"))
				u.Memory = &MemoryUsage{
					Bytes:     num(read(d, "memory.usage_in_bytes")),
					PeakBytes: num(read(d, "memory.max_usage_in_bytes")),
					FileBytes: st["cache"],
					AnonBytes: st["rss"],
					LimitHits: num(read(d, "memory.failcnt")),
					OOMKills:  keyed(read(d, "memory.oom_control"))["oom_kill"],
				}
			}
			if has("cpuacct") {
				if u.CPU == nil {
					u.CPU = &CPUUsage{}
				}
				u.CPU.Time = time.Duration(num(read(d, "cpuacct.usage")))
			}
			if has("cpu") {
				if u.CPU == nil {
					u.CPU = &CPUUsage{}
				}
				st := keyed(read(d, "cpu.stat"))
				u.CPU.Periods, u.CPU.ThrottledPeriod = st["nr_periods"], st["nr_throttled"]
				u.CPU.Throttled = time.Duration(st["throttled_time"])
			}
			if has("blkio") {
				u.IO = blkioUsage(read(d, "blkio.throttle.io_serviced"), read(d, "blkio.throttle.io_service_bytes"))
			}
			continue
		}
		st := keyed(read(d, "cpu.stat"))
		u.CPU = &CPUUsage{
			Time:            time.Duration(st["usage_usec"]) * time.Microsecond,
			Periods:         st["nr_periods"],
			ThrottledPeriod: st["nr_throttled"],
			Throttled:       time.Duration(st["throttled_usec"]) * time.Microsecond,
		}
		if has("memory") {
			ms, ev := keyed(read(d, "memory.stat")), keyed(read(d, "memory.events"))
			u.Memory = &MemoryUsage{
				Bytes:     num(read(d, "memory.current")),
				PeakBytes: num(read(d, "memory.peak")),
				FileBytes: ms["file"],
				AnonBytes: ms["anon"],
				LimitHits: ev["max"],
				OOMKills:  ev["oom_kill"],
			}
		}
		if has("io") {
			u.IO = ioStat(read(d, "io.stat"))
		}
	}
	return u, firstErr
}

func num(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}

// keyed reads "key value" lines (memory.stat, cpu.stat, memory.events).
func keyed(s string) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[k] = num(v)
		}
	}
	return out
}

// blkioUsage reads v1's "8:16 Read 601" lines.
func blkioUsage(ios, bytes string) []IOUsage {
	byDev := map[string]*IOUsage{}
	var order []string
	add := func(s string, read, write func(*IOUsage) *int64) {
		for line := range strings.SplitSeq(s, "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || !strings.Contains(f[0], ":") {
				continue
			}
			u := byDev[f[0]]
			if u == nil {
				u = &IOUsage{Dev: f[0]}
				byDev[f[0]] = u
				order = append(order, f[0])
			}
			switch f[1] {
			case "Read":
				*read(u) = num(f[2])
			case "Write":
				*write(u) = num(f[2])
			}
		}
	}
	add(ios, func(u *IOUsage) *int64 { return &u.ReadIOs }, func(u *IOUsage) *int64 { return &u.WriteIOs })
	add(bytes, func(u *IOUsage) *int64 { return &u.ReadBytes }, func(u *IOUsage) *int64 { return &u.WriteBytes })
	out := make([]IOUsage, 0, len(order))
	for _, d := range order {
		out = append(out, *byDev[d])
	}
	return out
}

// ioStat reads v2's "8:16 rbytes=1 wbytes=2 rios=3 wios=4 ..." lines.
func ioStat(s string) []IOUsage {
	var out []IOUsage
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		u := IOUsage{Dev: f[0]}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "rbytes":
				u.ReadBytes = num(v)
			case "wbytes":
				u.WriteBytes = num(v)
			case "rios":
				u.ReadIOs = num(v)
			case "wios":
				u.WriteIOs = num(v)
			}
		}
		out = append(out, u)
	}
	return out
}
