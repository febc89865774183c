package server

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	gopsmem "github.com/shirou/gopsutil/v4/mem"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/option"
)

// The catalogue of a server's settings as pg_settings describes them:
// names, types, units, bounds and enum values, and the checks a value
// passes before anything changes (the machine's memory included).

// settingInfo is one pg_settings row.
type settingInfo struct {
	Name, Setting, Unit, Vartype, Context string
	EnumVals                              []string
	MinVal, MaxVal                        *string
	PendingRestart                        bool
}

func loadSettings(ctx context.Context, conn *pgx.Conn) (map[string]settingInfo, error) {
	rows, err := conn.Query(ctx, `SELECT name, setting, coalesce(unit, ''), vartype, context,
		coalesce(enumvals, '{}'::text[]), min_val, max_val, pending_restart FROM pg_settings`)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "reading pg_settings")
	}
	defer rows.Close()
	out := map[string]settingInfo{}
	for rows.Next() {
		var si settingInfo
		if err := rows.Scan(&si.Name, &si.Setting, &si.Unit, &si.Vartype, &si.Context, &si.EnumVals, &si.MinVal, &si.MaxVal, &si.PendingRestart); err != nil {
			return nil, errs.Wrap(errs.KindConnect, err, "", "reading pg_settings")
		}
		out[strings.ToLower(si.Name)] = si
	}
	if err := rows.Err(); err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "reading pg_settings")
	}
	return out, nil
}

// validate checks every setting against pg_settings before anything changes.
func validate(all map[string]settingInfo, settings []Setting, r Restarter) ([]settingInfo, error) {
	seen := map[string]bool{}
	infos := make([]settingInfo, 0, len(settings))
	for _, s := range settings {
		name := s.Name
		if !ValidName(name) {
			return nil, errs.Usage("setting names are lower-case letters, digits and underscores (one dot for extension settings)",
				"bad setting name %q", name)
		}
		if seen[name] {
			return nil, errs.Usage("give each setting once", "setting %s is given more than once", name)
		}
		seen[name] = true
		si, ok := all[name]
		if !ok {
			hint := "see `SELECT name FROM pg_settings` for the settings this server knows"
			if close := closeNames(name, all); len(close) > 0 {
				hint = "did you mean " + strings.Join(close, ", ") + "?"
			}
			return nil, errs.Usage(hint, "unknown setting %s", name)
		}
		if si.Context == "internal" {
			return nil, errs.Usage("internal settings are fixed when PostgreSQL is built or initdb runs",
				"setting %s cannot be changed (context internal)", name)
		}
		if err := checkValue(si, s.Value); err != nil {
			return nil, err
		}
		if si.Context == "postmaster" && r == nil {
			return nil, errs.Usage("give the command that restarts this server with --restart-command (restart_command: in an experiment's target), e.g. 'ssh db1 sudo systemctl restart postgresql'; or set it in the server's configuration and restart it yourself",
				"setting %s needs a server restart (context postmaster), which tunebench cannot do for this target", name)
		}
		infos = append(infos, si)
	}
	return infos, nil
}

// checkValue validates a value against the setting's type, enum values and range.
func checkValue(si settingInfo, value string) error {
	name := strings.ToLower(si.Name)
	if strings.ContainsAny(value, "\x00\n\r") {
		return errs.Usage("remove the control character from the value", "bad value for setting %s: contains a NUL or newline", name)
	}
	switch si.Vartype {
	case "bool":
		if _, ok := parseBool(value); !ok {
			return errs.Usage("use on or off (also true/false, yes/no, 1/0)", "invalid value %q for setting %s: expected a boolean", value, name)
		}
	case "enum":
		for _, ev := range si.EnumVals {
			if strings.EqualFold(ev, value) {
				return nil
			}
		}
		if hasFold(si.EnumVals, "on") && hasFold(si.EnumVals, "off") {
			if _, ok := parseBool(value); ok {
				return nil
			}
		}
		return errs.Usage("use one of: "+strings.Join(si.EnumVals, ", "), "invalid value %q for setting %s", value, name)
	case "integer", "real":
		return checkNumber(si, value)
	}
	return nil
}

func hasFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// parseBool follows PostgreSQL's parse_bool: on/off, true/false, yes/no, 1/0
// and unique prefixes, case-insensitively.
func parseBool(v string) (bool, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return false, false
	}
	prefix := func(word string, min int) bool { return len(v) >= min && strings.HasPrefix(word, v) }
	switch {
	case prefix("true", 1), prefix("yes", 1), prefix("on", 2), v == "1":
		return true, true
	case prefix("false", 1), prefix("no", 1), prefix("off", 2), v == "0":
		return false, true
	}
	return false, false
}

var numberRe = regexp.MustCompile(`^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$`)

// memory units in bytes and time units in microseconds, as PostgreSQL spells them.
func unitScale(unit string) (scale float64, kind string, ok bool) {
	switch unit {
	case "B":
		return 1, "memory", true
	case "kB":
		return 1 << 10, "memory", true
	case "MB":
		return 1 << 20, "memory", true
	case "GB":
		return 1 << 30, "memory", true
	case "TB":
		return 1 << 40, "memory", true
	case "us":
		return 1, "time", true
	case "ms":
		return 1e3, "time", true
	case "s":
		return 1e6, "time", true
	case "min":
		return 60e6, "time", true
	case "h":
		return 3600e6, "time", true
	case "d":
		return 86400e6, "time", true
	}
	return 0, "", false
}

// baseUnit reads a pg_settings unit such as "8kB" or "ms".
func baseUnit(unit string) (scale float64, kind string, ok bool) {
	i := 0
	for i < len(unit) && unit[i] >= '0' && unit[i] <= '9' {
		i++
	}
	mult := 1.0
	if i > 0 {
		n, err := strconv.Atoi(unit[:i])
		if err != nil {
			return 0, "", false
		}
		mult = float64(n)
	}
	s, k, ok := unitScale(unit[i:])
	return s * mult, k, ok
}

func unitsOf(kind string) string {
	if kind == "memory" {
		return "B, kB, MB, GB, TB"
	}
	return "us, ms, s, min, h, d"
}

func checkNumber(si settingInfo, value string) error {
	name := strings.ToLower(si.Name)
	lv := strings.ToLower(strings.TrimSpace(value))
	if si.Vartype == "integer" && (strings.HasPrefix(lv, "0x") || strings.HasPrefix(lv, "-0x")) {
		return nil // hexadecimal: PostgreSQL accepts it; ALTER SYSTEM checks the range
	}
	bScale, bKind, hasBase := baseUnit(si.Unit)
	expect := "a number"
	if hasBase {
		expect = "a number with an optional unit (" + unitsOf(bKind) + ")"
	}
	m := numberRe.FindStringSubmatch(value)
	if m == nil {
		return errs.Usage("use "+expect, "invalid value %q for setting %s", value, name)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return errs.Usage("use "+expect, "invalid value %q for setting %s", value, name)
	}
	if u := m[2]; u != "" {
		if !hasBase {
			return errs.Usage("give a plain number", "invalid value %q for setting %s: it takes no unit", value, name)
		}
		vScale, vKind, ok := unitScale(u)
		if !ok || vKind != bKind {
			hint := "valid units are " + unitsOf(bKind)
			for _, cand := range strings.Split(unitsOf(bKind), ", ") {
				if strings.EqualFold(cand, u) {
					hint += " (units are case-sensitive: write " + cand + ")"
				}
			}
			return errs.Usage(hint, "invalid unit %q in value %q for setting %s", u, value, name)
		}
		n = n * vScale / bScale
	}
	if si.Vartype == "integer" {
		n = math.Round(n)
	}
	lo, hi := parseBound(si.MinVal), parseBound(si.MaxVal)
	if (lo != nil && n < *lo-1e-9*math.Abs(*lo)) || (hi != nil && n > *hi+1e-9*math.Abs(*hi)) {
		unit := ""
		if si.Unit != "" {
			unit = " " + si.Unit
		}
		return errs.Usage(fmt.Sprintf("use a value between %s and %s (in units of%s)", deref(si.MinVal), deref(si.MaxVal), orNone(unit)),
			"value %q for setting %s is out of range", value, name)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return " one"
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return "?"
	}
	return *p
}

func parseBound(p *string) *float64 {
	if p == nil {
		return nil
	}
	f, err := strconv.ParseFloat(*p, 64)
	if err != nil {
		return nil
	}
	return &f
}

// closeNames returns up to 3 known setting names close to name.
func closeNames(name string, all map[string]settingInfo) []string {
	type cand struct {
		name string
		dist int
	}
	limit := len(name) / 3
	if limit < 2 {
		limit = 2
	}
	var cands []cand
	for n := range all {
		d := option.EditDistance(name, n)
		if d <= limit || (len(name) >= 4 && (strings.Contains(n, name) || strings.HasPrefix(name, n))) {
			cands = append(cands, cand{n, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for i := 0; i < len(cands) && i < 3; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

// settingBytes is a memory setting's value in bytes; value "" means the
// server's current value. ok is false for settings that are not memory sizes.
func settingBytes(si settingInfo, value string) (float64, bool) {
	bScale, kind, ok := baseUnit(si.Unit)
	if !ok || kind != "memory" {
		return 0, false
	}
	if value == "" {
		n, err := strconv.ParseFloat(si.Setting, 64)
		return n * bScale, err == nil
	}
	m := numberRe.FindStringSubmatch(value)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	if u := m[2]; u != "" {
		vScale, vKind, ok := unitScale(u)
		if !ok || vKind != "memory" {
			return 0, false
		}
		return n * vScale, true
	}
	return n * bScale, true
}

// sharedMemorySettings are the settings that size the server's shared memory.
var sharedMemorySettings = []string{"shared_buffers", "wal_buffers", "min_dynamic_shared_memory"}

// checkMemory refuses settings whose shared memory (shared_buffers,
// wal_buffers, min_dynamic_shared_memory, with the server's current values
// for those not given) exceeds mem bytes, the machine's memory (0: unknown).
// Such a server cannot start, or starts and swaps.
func checkMemory(all map[string]settingInfo, settings []Setting, mem int64) error {
	if mem <= 0 {
		return nil
	}
	given := map[string]string{}
	touched := false
	for _, s := range settings {
		given[s.Name] = s.Value
		for _, n := range sharedMemorySettings {
			touched = touched || s.Name == n
		}
	}
	if !touched {
		return nil
	}
	size := map[string]float64{}
	for _, n := range sharedMemorySettings {
		si, ok := all[n]
		if !ok {
			continue
		}
		if b, ok := settingBytes(si, given[n]); ok {
			size[n] = b
		}
	}
	if size["wal_buffers"] < 0 { // -1: 1/32 of shared_buffers, 64 kB to 16 MB
		size["wal_buffers"] = math.Min(math.Max(size["shared_buffers"]/32, 64<<10), 16<<20)
	}
	total := size["shared_buffers"] + size["wal_buffers"] + size["min_dynamic_shared_memory"]
	if total < float64(mem) {
		return nil
	}
	var parts []string
	for _, s := range settings {
		if _, ok := size[s.Name]; ok {
			parts = append(parts, s.Name+"="+s.Value)
		}
	}
	// total is a sum of the values given: capped to print one that
	// overflows int64.
	return errs.Usage(fmt.Sprintf("use a smaller value: the machine has %s of memory, and shared_buffers is usually a quarter of it (%s)",
		human.Bytes(mem), human.Bytes(mem/4)),
		"%s needs %s of shared memory (shared_buffers, wal_buffers and min_dynamic_shared_memory together), more than this machine's %s of memory",
		strings.Join(parts, ", "), human.Bytes(int64(min(total, 1<<62))), human.Bytes(mem))
}

// MachineMemory is the memory a server on this machine can use, in bytes:
// MemTotal from /proc/meminfo, or the memory limit of this process's cgroup
// (v2) when lower (a managed server is its child and shares it); 0 when
// unknown.
func MachineMemory() int64 {
	var mem int64
	if runtime.GOOS != "linux" {
		// No /proc (macOS): the system's own figure.
		if vm, err := gopsmem.VirtualMemory(); err == nil {
			return int64(vm.Total)
		}
		return 0
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					mem = kb << 10
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok {
				if v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", rest, "memory.max")); err == nil {
					if lim, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64); err == nil && lim > 0 && (mem == 0 || lim < mem) {
						mem = lim
					}
				}
			}
		}
	}
	return mem
}
