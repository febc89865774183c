package results

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tunebench/tunebench/internal/human"
)

// The machines whose figures a run measures (Host.Role).
const (
	HostDriver    = "driver"    // where tunebench runs: sys.*, net.*, driver.*
	HostServer    = "server"    // the database server's host: server.sys.*, server.net.*, disk.*, pg.proc_*
	HostContainer = "container" // the server's container: container.*
)

// Host is one machine (or container) a run measured: where its figures came
// from, which series it gave, each series' mean over the measured window,
// and how much of the window its source left without a sample.
type Host struct {
	Role   string `json:"role"`
	Source string `json:"source"`
	// SameMachine: the server runs on the driver's machine, whose CPU,
	// memory and network series (sys.*, net.*) are then the server
	// host's too.
	SameMachine bool `json:"same_machine,omitempty"`
	// Series are the stored series' names (or, where they share one, a
	// prefix ending in "."), sorted.
	Series []string           `json:"series,omitempty"`
	Means  map[string]float64 `json:"means,omitempty"`
	// MissingPct is the share of the measured window (percent) without a
	// sample from the source: a source that failed or timed out leaves a
	// gap, never a failed run.
	MissingPct float64 `json:"missing_pct,omitempty"`
	// Error is the source's first error, and Failures how many samples
	// failed.
	Error    string `json:"error,omitempty"`
	Failures int    `json:"failures,omitempty"`
}

// HostOf is the host record of role, nil when the run has none.
func (s *Summary) HostOf(role string) *Host {
	for i := range s.Hosts {
		if s.Hosts[i].Role == role {
			return &s.Hosts[i]
		}
	}
	return nil
}

// hostRow is one line of the host table: a label, the series per prefix
// ("" for the driver's, "server." for the server host's) and how to show
// a mean.
type hostRow struct {
	label  string
	series string // without the host's prefix
	show   func(float64) string
}

func pct(v float64) string    { return fmt.Sprintf("%.1f%%", v) }
func bytesS(v float64) string { return human.Bytes(int64(v)) + "/s" }
func bytesV(v float64) string { return human.Bytes(int64(v)) }
func ms(v float64) string     { return fmt.Sprintf("%.2f ms", v) }

var hostRows = []hostRow{
	{"CPU user", "sys.cpu_user_pct", pct},
	{"CPU system", "sys.cpu_system_pct", pct},
	{"CPU iowait", "sys.cpu_iowait_pct", pct},
	{"CPU steal", "sys.cpu_steal_pct", pct},
	{"memory used", "sys.mem_used_bytes", bytesV},
	{"page cache", "sys.page_cache_bytes", bytesV},
	{"network received", "net.rx_bytes_s", bytesS},
	{"network sent", "net.tx_bytes_s", bytesS},
	{"CPU pressure (some)", "sys.pressure_cpu_pct", pct},
	{"I/O pressure (some)", "sys.pressure_io_pct", pct},
	{"memory pressure (some)", "sys.pressure_mem_pct", pct},
}

// diskRows are the server's disk and processes (no host prefix).
var diskRows = []hostRow{
	{"disk busy", "disk.util_pct", pct},
	{"disk read", "disk.read_bytes_s", bytesS},
	{"disk written", "disk.write_bytes_s", bytesS},
	{"disk await", "disk.await_ms", ms},
}

// procRows are the database server's processes, whatever the database:
// their series are DB.proc_NAME (pg.proc_cpu_pct, mariadb.proc_cpu_pct),
// named by the suffix here.
var procRows = []hostRow{
	{"database server processes CPU", ".proc_cpu_pct", func(v float64) string { return fmt.Sprintf("%.0f%% of a CPU", v) }},
	{"database server processes memory", ".proc_rss_bytes", bytesV},
}

// bySuffix is the mean of the series of means whose name ends with suffix
// after one dotted prefix.
func bySuffix(means map[string]float64, suffix string) (float64, bool) {
	for k, v := range means {
		if i := strings.Index(k, suffix); i > 0 && i+len(suffix) == len(k) && !strings.Contains(k[:i], ".") {
			return v, true
		}
	}
	return 0, false
}

var containerRows = []hostRow{
	{"container CPU", "container.cpu_pct", func(v float64) string { return fmt.Sprintf("%.0f%% of a CPU", v) }},
	{"container throttled", "container.cpu_throttled_pct", pct},
	{"container working set", "container.mem_working_set_bytes", bytesV},
	{"container read", "container.read_bytes_s", bytesS},
	{"container written", "container.write_bytes_s", bytesS},
	{"container received", "container.net_rx_bytes_s", bytesS},
	{"container sent", "container.net_tx_bytes_s", bytesS},
}

// HostBlocks are a run's host figures for the terminal: one column per
// measured machine (the driver's, the server host's, the server's
// container), each headed by its source, the means over the measured
// window, and what was missing; then what was not measured and why.
func HostBlocks(s *Summary) []Block {
	if len(s.Hosts) == 0 {
		return notMeasuredLines(s)
	}
	type col struct {
		head   string
		prefix string
		h      *Host
	}
	var cols []col
	sv := s.HostOf(HostServer)
	if d := s.HostOf(HostDriver); d != nil {
		head := "driver (" + d.Source + ")"
		if sv != nil && sv.SameMachine {
			// One machine: the server's disk and processes in the
			// driver's column.
			head = "driver and server (" + d.Source + ")"
			merged := *d
			merged.Means = map[string]float64{}
			for k, v := range d.Means {
				merged.Means[k] = v
			}
			for k, v := range sv.Means {
				merged.Means[k] = v
			}
			d = &merged
		}
		cols = append(cols, col{head, "", d})
	}
	if sv != nil && !sv.SameMachine {
		cols = append(cols, col{"server (" + sv.Source + ")", "server.", sv})
	}
	if c := s.HostOf(HostContainer); c != nil {
		cols = append(cols, col{"container (" + c.Source + ")", "", c})
	}
	t := &Table{Name: "host metrics", Columns: []string{"means over the measured window"}, Left: 1}
	for _, c := range cols {
		t.Columns = append(t.Columns, c.head)
	}
	add := func(rows []hostRow, prefixed bool) {
		for _, r := range rows {
			cells := []string{r.label}
			seen := false
			for _, c := range cols {
				name := r.series
				if prefixed {
					name = c.prefix + r.series
				}
				v, ok := c.h.Means[name]
				if strings.HasPrefix(name, ".") {
					v, ok = bySuffix(c.h.Means, name)
				}
				if ok {
					cells = append(cells, r.show(v))
					seen = true
				} else {
					cells = append(cells, "-")
				}
			}
			if seen {
				t.Rows = append(t.Rows, cells)
			}
		}
	}
	add(hostRows, true)
	add(diskRows, false)
	add(procRows, false)
	add(containerRows, false)
	var out []Block
	if len(t.Rows) > 0 {
		out = append(out, Line("host metrics:"), TableBlock(t))
	}
	for _, c := range cols {
		if c.h.MissingPct >= 1 || c.h.Error != "" {
			line := fmt.Sprintf("%s: no sample for %.0f%% of the measured window", c.head, c.h.MissingPct)
			if c.h.Error != "" {
				line += fmt.Sprintf(" (%d failed samples; first: %s)", c.h.Failures, c.h.Error)
			}
			out = append(out, Line(line))
		}
	}
	return append(out, notMeasuredLines(s)...)
}

func notMeasuredLines(s *Summary) []Block {
	var keys []string
	for k := range s.NotMeasured {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Block
	for _, k := range keys {
		out = append(out, Line(strings.ReplaceAll(k, "_", " ")+": "+s.NotMeasured[k]))
	}
	return out
}

// HostSeriesLabel says whose and from where a stored series is, for a
// chart's title: "database server host, sql (pg_read_file on the server)".
func HostSeriesLabel(s *Summary, series string) string {
	for _, h := range s.Hosts {
		if !slices.ContainsFunc(h.Series, func(p string) bool {
			return p == series || strings.HasSuffix(p, ".") && strings.HasPrefix(series, p)
		}) {
			continue
		}
		switch {
		case h.Role == HostDriver && s.HostOf(HostServer) != nil && s.HostOf(HostServer).SameMachine:
			return "driver and server machine, " + h.Source
		case h.Role == HostDriver:
			return "driver's machine, " + h.Source
		case h.Role == HostServer:
			return "database server host, " + h.Source
		default:
			return "server's container, " + h.Source
		}
	}
	return ""
}
