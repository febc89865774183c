package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/results"
)

// envRow is one line of the environment table: a single value when every
// run had the same, else each value with the runs that had it.
type envRow struct {
	Name    string
	Values  []envVal
	Differs bool
}

type envVal struct{ Value, Runs string }

type envField struct {
	name string
	get  func(*envinfo.Snapshot) string
}

// envSame are, for the rows whose values vary from run to run without a
// change of configuration, what must be equal between runs for the row to
// be the same configuration: the round trip is measured before every run
// and moves by microseconds (where the server is is what counts), and
// GOMAXPROCS follows the clients (threads) of each run.
var envSame = map[string]func(*envinfo.Snapshot) string{
	"Server": func(s *envinfo.Snapshot) string { return s.Server.Where() },
	"Driver": func(s *envinfo.Snapshot) string { return driverLine(s, false) },
}

var envFields = []envField{
	{"Host", func(s *envinfo.Snapshot) string { return s.Host.Hostname }},
	{"Operating system", func(s *envinfo.Snapshot) string {
		return joinNonEmpty(" ", s.Host.Distro, paren(joinNonEmpty("/", s.Host.OS, s.Host.Arch)))
	}},
	{"Kernel", func(s *envinfo.Snapshot) string { return joinNonEmpty(" ", s.Host.Kernel, s.Host.KernelVersion) }},
	{"CPU", func(s *envinfo.Snapshot) string {
		h := s.Host
		var parts []string
		if h.CPUs > 0 {
			parts = append(parts, plural(h.CPUs, "logical CPU"))
		}
		if h.CPUCores > 0 {
			parts = append(parts, plural(h.CPUCores, "core"))
		}
		if h.CPUSockets > 0 {
			parts = append(parts, plural(h.CPUSockets, "socket"))
		}
		if h.Hypervisor {
			parts = append(parts, "virtual machine")
		}
		return joinNonEmpty(", ", h.CPUModel, strings.Join(parts, ", "))
	}},
	{"CPU governor, clock source", func(s *envinfo.Snapshot) string {
		return joinNonEmpty(", ", s.Host.CPUGovernor, s.Host.Clocksource)
	}},
	{"Memory", func(s *envinfo.Snapshot) string {
		h := s.Host
		if h.MemTotalBytes == 0 {
			return ""
		}
		v := humanBytes(h.MemTotalBytes)
		if h.SwapTotalBytes > 0 {
			v += ", swap " + humanBytes(h.SwapTotalBytes)
		} else {
			v += ", no swap"
		}
		if h.HugePagesTotal > 0 {
			v += fmt.Sprintf(", %d huge pages of %s", h.HugePagesTotal, humanBytes(h.HugePageSizeBytes))
		}
		if h.TransparentHuge != "" {
			v += ", transparent huge pages " + h.TransparentHuge
		}
		return v
	}},
	{"Data directory", func(s *envinfo.Snapshot) string {
		if s.DataDir == nil {
			return ""
		}
		return s.DataDir.Path
	}},
	{"Storage layout", func(s *envinfo.Snapshot) string { return s.Layout.Line() }},
	{"Hardware envelope", func(s *envinfo.Snapshot) string { return s.Envelope.Line() }},
	{"Kernel settings", func(s *envinfo.Snapshot) string { return s.KernelLine() }},
	{"Filesystem", func(s *envinfo.Snapshot) string {
		f := s.DataDir
		if f == nil {
			return ""
		}
		v := f.FSType
		if f.Source != "" {
			v += " on " + f.Source
		}
		if f.MountPoint != "" {
			v += " mounted at " + f.MountPoint
		}
		return v
	}},
	{"Mount options", func(s *envinfo.Snapshot) string {
		f := s.DataDir
		if f == nil {
			return ""
		}
		return joinNonEmpty("; filesystem: ", f.Options, f.SuperOptions)
	}},
	// What lies beneath the data directory's filesystem (snapshot version
	// 2; older runs have none of these rows' values).
	{"Device", func(s *envinfo.Snapshot) string { return dataBlock(s).DeviceLine() }},
	{"Scheduler, readahead", func(s *envinfo.Snapshot) string { return dataBlock(s).SchedulerLine() }},
	{"Queue", func(s *envinfo.Snapshot) string { return dataBlock(s).QueueLine() }},
	{"Filesystem features", func(s *envinfo.Snapshot) string {
		if s.DataDir == nil {
			return ""
		}
		return s.DataDir.Features.Line()
	}},
	{"WAL filesystem", func(s *envinfo.Snapshot) string { return s.WALLine() }},
	{"Database server", func(s *envinfo.Snapshot) string { return s.DatabaseLine() }},
	{"Server", func(s *envinfo.Snapshot) string { return s.Server.Line() }},
	{"Driver", func(s *envinfo.Snapshot) string { return driverLine(s, true) }},
	{"Driver shards", shardsLine},
}

// shardsLine says on which machines a merged run's shards ran (the table
// above is shard 0's); "" for a run that was not split.
func shardsLine(s *envinfo.Snapshot) string {
	if len(s.Shards) == 0 {
		return ""
	}
	n := len(s.Shards) + 1
	parts := []string{fmt.Sprintf("0/%d on %s", n, s.Host.Hostname)}
	if s.Shard0Missing {
		parts[0] = fmt.Sprintf("0/%d missing (the rows above are the first present shard's)", n)
	}
	for i, o := range s.Shards {
		switch {
		case o == nil:
			parts = append(parts, fmt.Sprintf("%d/%d missing", i+1, n))
		default:
			parts = append(parts, fmt.Sprintf("%d/%d on %s", i+1, n, o.Host.Hostname))
		}
	}
	return fmt.Sprintf("%d, merged (the rows above are shard 0's): %s", n, strings.Join(parts, ", "))
}

// driverLine is tunebench's and Go's versions, with GOMAXPROCS.
func driverLine(s *envinfo.Snapshot, procs bool) string {
	d := s.Driver
	if d.GoVersion == "" && d.TunebenchVersion == "" {
		return ""
	}
	v := joinNonEmpty(" ", "tunebench", d.TunebenchVersion)
	v = joinNonEmpty(", ", v, d.GoVersion)
	if procs && d.GOMAXPROCS > 0 {
		v += ", GOMAXPROCS " + strconv.Itoa(d.GOMAXPROCS)
	}
	return v
}

// dataBlock is the block device under the data directory, nil when not
// recorded.
func dataBlock(s *envinfo.Snapshot) *envinfo.Block {
	if s.DataDir == nil {
		return nil
	}
	return s.DataDir.Block
}

// environment builds the environment and settings tables over the runs.
func environment(d *dataset) (env []envRow, settings []settingsView, note string) {
	var with []*runData
	var without []int64
	for _, rd := range d.Runs {
		if rd.Env != nil {
			with = append(with, rd)
		} else {
			without = append(without, rd.Run.ID)
		}
	}
	if len(without) > 0 {
		note = "No environment snapshot stored for runs " + idList(without) + "."
	}
	if len(with) == 0 {
		return nil, nil, note
	}
	for _, f := range envFields {
		vals := make([]string, len(with))
		var same []string
		for i, rd := range with {
			vals[i] = redact.Patterns(f.get(rd.Env))
			if f := envSame[f.name]; f != nil {
				same = append(same, f(rd.Env))
			}
		}
		if row, ok := envRowOf(f.name, vals, with); ok {
			if same != nil && row.Differs && !distinct(same) {
				row.Differs = false // varies from run to run, not by configuration
			}
			env = append(env, row)
		}
	}

	// One table per database product: a setting of one engine is not
	// "at its default" on another.
	var products []string
	byProduct := map[string][]*runData{}
	for _, rd := range with {
		p := productOf(rd)
		if _, ok := byProduct[p]; !ok {
			products = append(products, p)
		}
		byProduct[p] = append(byProduct[p], rd)
	}
	for _, p := range products {
		if rows := settingRows(byProduct[p]); len(rows) > 0 {
			settings = append(settings, settingsView{Of: p, Rows: rows})
		}
	}
	return env, settings, note
}

// settingsView is the table of one database product's settings that are
// not at their defaults, over the runs on it.
type settingsView struct {
	Of   string
	Rows []envRow
}

// settingRows are the settings of runs of one database product, those
// that differ between runs first (they are what was varied).
func settingRows(with []*runData) []envRow {
	var settings []envRow
	names := map[string]bool{}
	for _, rd := range with {
		for k := range rd.Env.DatabaseSettings() {
			names[k] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals := make([]string, len(with))
		for i, rd := range with {
			v := "(default)"
			if rd.Env.DatabaseSettings() == nil {
				v = "(unknown)"
			} else if s, ok := rd.Env.DatabaseSettings()[k]; ok {
				v = redact.SettingValue(k, s)
			}
			vals[i] = v
		}
		if row, ok := envRowOf(k, vals, with); ok {
			settings = append(settings, row)
		}
	}
	sort.SliceStable(settings, func(i, j int) bool { return settings[i].Differs && !settings[j].Differs })
	return settings
}

// distinct reports whether vs holds more than one value.
func distinct(vs []string) bool {
	for _, v := range vs[1:] {
		if v != vs[0] {
			return true
		}
	}
	return false
}

// envRowOf groups equal values; false when no run has a value.
func envRowOf(name string, vals []string, runs []*runData) (envRow, bool) {
	byVal := map[string][]int64{}
	var order []string
	any := false
	for i, v := range vals {
		if v != "" {
			any = true
		}
		if _, ok := byVal[v]; !ok {
			order = append(order, v)
		}
		byVal[v] = append(byVal[v], runs[i].Run.ID)
	}
	if !any {
		return envRow{}, false
	}
	row := envRow{Name: name, Differs: len(order) > 1}
	for _, v := range order {
		shown := v
		if shown == "" {
			shown = "(not recorded)"
		}
		ev := envVal{Value: shown}
		if len(order) > 1 {
			ev.Runs = idList(byVal[v])
		}
		row.Values = append(row.Values, ev)
	}
	return row, true
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func joinNonEmpty(sep string, parts ...string) string { return results.JoinNonEmpty(sep, parts...) }

func paren(s string) string { return results.Paren(s) }

// humanBytes formats a byte count in binary units.
func humanBytes(n int64) string { return human.Bytes(n) }
