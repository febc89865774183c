package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	gopsmem "github.com/shirou/gopsutil/v4/mem"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/redact"
)

// Setting is one server parameter to set, as name=value.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s Setting) String() string { return s.Name + "=" + s.Value }

var settingNameRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// ValidName reports whether name is an acceptable setting name: lower case
// letters, digits and underscores, with at most one dot (extension settings).
func ValidName(name string) bool { return settingNameRe.MatchString(name) }

// ParseSetting parses "name=value". Setting names are case-insensitive in
// PostgreSQL, so the name is lowered; surrounding spaces are trimmed.
func ParseSetting(s string) (Setting, error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	value = strings.TrimSpace(value)
	if !ok || name == "" {
		return Setting{}, errs.Usage("write settings as name=value, e.g. work_mem=64MB",
			"bad setting %q: expected name=value", s)
	}
	if !ValidName(name) {
		return Setting{}, errs.Usage("setting names are letters, digits and underscores (one dot for extension settings), e.g. shared_buffers",
			"bad setting name %q", name)
	}
	if strings.ContainsAny(value, "\x00\n\r") {
		return Setting{}, errs.Usage("remove the control character from the value", "bad value for setting %s: contains a NUL or newline", name)
	}
	return Setting{Name: name, Value: value}, nil
}

// Restarter restarts a server, waiting until it accepts connections again.
type Restarter interface {
	Restart(ctx context.Context, mode string) error
}

// Connector opens a new superuser connection to the target.
type Connector func(ctx context.Context) (*pgx.Conn, error)

// Applied records one setting changed with ALTER SYSTEM and how to undo it.
type Applied struct {
	Name          string `json:"name"`
	Previous      string `json:"previous"`                // current_setting() before the change
	Value         string `json:"value"`                   // the value asked for
	Effective     string `json:"effective"`               // current_setting() after the change
	Context       string `json:"context"`                 // pg_settings.context
	NeededRestart bool   `json:"needed_restart"`          // a restart was needed to make it effective
	HadAuto       bool   `json:"had_auto"`                // postgresql.auto.conf held a value before
	AutoPrevious  string `json:"auto_previous,omitempty"` // that value, restored instead of RESET
	// Holder is the process that restores it when it ends; nil: the
	// server's lifetime (restored when the server stops).
	Holder *Holder `json:"holder,omitempty"`
}

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

// listQuoted names the settings whose values are lists of quoted items; a
// comma-separated value for them is passed as several literals.
func listQuoted(name string) bool {
	switch name {
	case "search_path", "temp_tablespaces", "shared_preload_libraries", "local_preload_libraries",
		"session_preload_libraries", "unix_socket_directories":
		return true
	}
	return false
}

// dequoteIdent removes SQL identifier quotes ("a""b" -> a"b): list elements
// are written as SHOW prints them, and PostgreSQL quotes them again itself.
func dequoteIdent(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
	}
	return v
}

// alterSystemSQL builds ALTER SYSTEM SET with server-side quoting: it returns
// the statement text produced by format() with %I for identifiers and %L for values.
func alterSystemSQL(ctx context.Context, conn *pgx.Conn, name, value string) (string, error) {
	var args []any
	var f strings.Builder
	f.WriteString("ALTER SYSTEM SET ")
	first, second, dotted := strings.Cut(name, ".")
	if dotted {
		f.WriteString("%I.%I")
		args = append(args, first, second)
	} else {
		f.WriteString("%I")
		args = append(args, name)
	}
	f.WriteString(" TO ")
	values := []string{value}
	if listQuoted(name) && strings.Contains(value, ",") {
		values = values[:0]
		for _, v := range strings.Split(value, ",") {
			if v = strings.TrimSpace(v); v != "" {
				values = append(values, dequoteIdent(v))
			}
		}
	}
	for i, v := range values {
		if i > 0 {
			f.WriteString(", ")
		}
		f.WriteString("%L")
		args = append(args, v)
	}
	return formatSQL(ctx, conn, f.String(), args...)
}

// resetSQL builds ALTER SYSTEM RESET for name.
func resetSQL(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	if first, second, dotted := strings.Cut(name, "."); dotted {
		return formatSQL(ctx, conn, "ALTER SYSTEM RESET %I.%I", first, second)
	}
	return formatSQL(ctx, conn, "ALTER SYSTEM RESET %I", name)
}

func formatSQL(ctx context.Context, conn *pgx.Conn, format string, args ...any) (string, error) {
	ph := make([]string, 0, len(args)+1)
	params := make([]any, 0, len(args)+1)
	params = append(params, format)
	ph = append(ph, "$1::text")
	for i, a := range args {
		ph = append(ph, fmt.Sprintf("$%d::text", i+2))
		params = append(params, a)
	}
	var stmt string
	if err := conn.QueryRow(ctx, "SELECT format("+strings.Join(ph, ", ")+")", params...).Scan(&stmt); err != nil {
		return "", errs.Wrap(errs.KindConnect, err, "", "building the ALTER SYSTEM statement")
	}
	return stmt, nil
}

// scrub masks value inside msg when the setting may hold a secret.
func scrub(name, value, msg string) string {
	if masked := redact.SettingValue(name, value); masked != value && len(value) > 0 {
		return strings.ReplaceAll(msg, value, masked)
	}
	return msg
}

// pgMessage renders a server error compactly: message, detail and hint.
func pgMessage(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += " (" + pe.Detail + ")"
	}
	if pe.Hint != "" {
		msg += "; " + pe.Hint
	}
	return msg
}

// autoValue reads the value postgresql.auto.conf holds for name, if any.
func autoValue(ctx context.Context, conn *pgx.Conn, name string) (string, bool, error) {
	var v string
	err := conn.QueryRow(ctx, `SELECT setting FROM pg_file_settings
		WHERE lower(name) = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, errs.Wrap(errs.KindConnect, err, "reading pg_file_settings needs a superuser connection", "reading pg_file_settings for %s", name)
	}
	return v, true, nil
}

// reload calls pg_reload_conf() and waits until this session has re-read the
// configuration (pg_conf_load_time moves), so later reads see the new values.
func reload(ctx context.Context, conn *pgx.Conn) error {
	var before time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&before); err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "reading pg_conf_load_time()")
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_reload_conf()").Scan(&ok); err != nil || !ok {
		if err == nil {
			err = errors.New("pg_reload_conf() returned false")
		}
		return errs.Wrap(errs.KindConnect, err, "", "reloading the server configuration")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var now time.Time
		if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&now); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "reading pg_conf_load_time()")
		}
		if now.After(before) {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.New(errs.KindConnect, "check the server log", "the server did not reload its configuration within 15s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pendingRestart lists which of names have pending_restart set.
func pendingRestart(ctx context.Context, conn *pgx.Conn, names []string) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT lower(name) FROM pg_settings WHERE lower(name) = ANY($1) AND pending_restart ORDER BY 1`, names)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err, "", "reading pg_settings.pending_restart")
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Apply changes server settings with ALTER SYSTEM: it validates all settings
// first (name, type, enum, range, context), then sets each, reloads, restarts
// through r if any needs it, and verifies each one took effect. If anything
// fails midway it restores what it already changed. r may be nil when the
// target cannot be restarted; settings that need a restart are then refused.
func Apply(ctx context.Context, connect Connector, r Restarter, settings []Setting) ([]Applied, error) {
	return apply(ctx, connect, r, settings, applyOpts{})
}

// Check validates settings as Apply does before it changes anything (name,
// type, unit, range, enum, context) and, when mem > 0, the shared memory
// they need against mem bytes (the machine's memory). It changes nothing.
func Check(ctx context.Context, connect Connector, r Restarter, settings []Setting, mem int64) error {
	if len(settings) == 0 {
		return nil
	}
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	all, err := loadSettings(ctx, conn)
	if err != nil {
		return err
	}
	if _, err := validate(all, settings, r); err != nil {
		return err
	}
	return checkMemory(all, settings, mem)
}

// applyOpts are apply's options beyond the settings.
type applyOpts struct {
	// record is called with the changes so far before each one is made
	// and after all are verified, so that a caller can journal them
	// durably before anything else can fail.
	record func([]Applied) error
	mem    int64   // the machine's memory in bytes for checkMemory (0: unknown)
	holder *Holder // recorded in each Applied
}

// apply is Apply with options.
func apply(ctx context.Context, connect Connector, r Restarter, settings []Setting, o applyOpts) ([]Applied, error) {
	if len(settings) == 0 {
		return nil, nil
	}
	record := o.record
	conn, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	closeConn := func() {
		if conn != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Close(cctx)
			cancel()
			conn = nil
		}
	}
	defer closeConn()

	all, err := loadSettings(ctx, conn)
	if err != nil {
		return nil, err
	}
	infos, err := validate(all, settings, r)
	if err != nil {
		return nil, err
	}
	if err := checkMemory(all, settings, o.mem); err != nil {
		return nil, err
	}

	var done []Applied
	fail := func(cause error) ([]Applied, error) {
		closeConn()
		if len(done) == 0 {
			return nil, cause
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if rerr := Restore(rctx, connect, r, done); rerr != nil {
			return done, errors.Join(cause, errs.Wrap(errs.KindConnect, rerr,
				"check postgresql.auto.conf in the data directory", "restoring the settings already changed also failed"))
		}
		return nil, cause
	}

	for i, s := range settings {
		si := infos[i]
		a := Applied{Name: s.Name, Value: s.Value, Context: si.Context, Holder: o.holder}
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", s.Name).Scan(&a.Previous); err != nil {
			return fail(errs.Wrap(errs.KindConnect, err, "", "reading %s", s.Name))
		}
		if a.AutoPrevious, a.HadAuto, err = autoValue(ctx, conn, s.Name); err != nil {
			return fail(err)
		}
		stmt, err := alterSystemSQL(ctx, conn, s.Name, s.Value)
		if err != nil {
			return fail(err)
		}
		// Journal the change before making it: a process killed right
		// after the ALTER SYSTEM leaves a record to restore from (restoring
		// a change that was not made is harmless: it writes what is there).
		done = append(done, a)
		if record != nil {
			if err := record(done); err != nil {
				return fail(err)
			}
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return fail(errs.New(errs.KindUsage, "check the value against the PostgreSQL documentation for "+s.Name,
					"cannot set %s to %q: %s", s.Name, redact.SettingValue(s.Name, s.Value), scrub(s.Name, s.Value, pgMessage(err))))
			}
			return fail(errs.Wrap(errs.KindConnect, err, "", "ALTER SYSTEM SET %s", s.Name))
		}
	}

	if err := reload(ctx, conn); err != nil {
		return fail(err)
	}
	names := make([]string, len(settings))
	for i, s := range settings {
		names[i] = s.Name
	}
	pending, err := pendingRestart(ctx, conn, names)
	if err != nil {
		return fail(err)
	}
	needRestart := len(pending) > 0
	for _, si := range infos {
		if si.Context == "postmaster" {
			needRestart = true
		}
	}
	if needRestart {
		if r == nil {
			return fail(errs.Usage("give the command that restarts this server with --restart-command (restart_command: in an experiment's target), or restart it yourself",
				"settings %s need a server restart, which tunebench cannot do for this target", strings.Join(pending, ", ")))
		}
		pendingSet := map[string]bool{}
		for _, p := range pending {
			pendingSet[p] = true
		}
		for i := range done {
			if pendingSet[done[i].Name] || done[i].Context == "postmaster" {
				done[i].NeededRestart = true
			}
		}
		closeConn()
		if err := r.Restart(ctx, "fast"); err != nil {
			return fail(errs.Wrap(errs.KindConnect, err, "check the server log", "restarting the server to apply %s", strings.Join(names, ", ")))
		}
	}

	// Verify on a new session: backend-context settings only show there.
	closeConn()
	if conn, err = connect(ctx); err != nil {
		return fail(err)
	}
	if err := verify(ctx, conn, done); err != nil {
		return fail(err)
	}
	if record != nil {
		if err := record(done); err != nil {
			return fail(err)
		}
	}
	return done, nil
}

// verify checks that each applied setting is in effect: its postgresql.auto.conf
// entry is applied without error, no restart is pending, and it records the
// effective value in Effective.
func verify(ctx context.Context, conn *pgx.Conn, done []Applied) error {
	for i := range done {
		a := &done[i]
		var applied bool
		var fileErr *string
		err := conn.QueryRow(ctx, `SELECT applied, error FROM pg_file_settings
			WHERE lower(name) = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, a.Name).Scan(&applied, &fileErr)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.KindConnect, "check that nothing else rewrites postgresql.auto.conf",
				"setting %s is missing from postgresql.auto.conf after ALTER SYSTEM", a.Name)
		}
		if err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "verifying %s", a.Name)
		}
		var pending bool
		if err := conn.QueryRow(ctx, `SELECT current_setting($1), pending_restart FROM pg_settings WHERE lower(name) = $1`, a.Name).Scan(&a.Effective, &pending); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "verifying %s", a.Name)
		}
		if fileErr != nil {
			return errs.New(errs.KindUsage, "check the value", "setting %s=%s was not applied: %s", a.Name, a.Value, *fileErr)
		}
		if pending {
			return errs.New(errs.KindConnect, "restart the server", "setting %s=%s still waits for a server restart", a.Name, a.Value)
		}
		if !applied {
			return errs.New(errs.KindUsage, "a command-line option (-c) or another source may override postgresql.auto.conf",
				"setting %s=%s is written but not in effect (current value %s)", a.Name, a.Value, a.Effective)
		}
	}
	return nil
}

// Restore undoes applied settings: each goes back to its earlier
// postgresql.auto.conf value, or is RESET when there was none. It reloads and,
// when a restored setting needs it, restarts through r.
func Restore(ctx context.Context, connect Connector, r Restarter, applied []Applied) error {
	return restore(ctx, connect, r, applied, true)
}

// restore is Restore; with restart false it only rewrites and reloads
// (used right before stopping the server, which makes everything effective).
func restore(ctx context.Context, connect Connector, r Restarter, applied []Applied, restart bool) error {
	if len(applied) == 0 {
		return nil
	}
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	var problems []error
	names := make([]string, 0, len(applied))
	for i := len(applied) - 1; i >= 0; i-- {
		a := applied[i]
		names = append(names, a.Name)
		var stmt string
		if a.HadAuto {
			stmt, err = alterSystemSQL(ctx, conn, a.Name, a.AutoPrevious)
		} else {
			stmt, err = resetSQL(ctx, conn, a.Name)
		}
		if err == nil {
			_, err = conn.Exec(ctx, stmt)
		}
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %s", a.Name, pgMessage(err)))
		}
	}
	if err := reload(ctx, conn); err != nil {
		return errors.Join(append(problems, err)...)
	}
	if !restart {
		return errors.Join(problems...)
	}
	pending, err := pendingRestart(ctx, conn, names)
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	if len(pending) > 0 {
		if r == nil {
			return errors.Join(append(problems, errs.Usage("restart the server yourself",
				"restoring %s needs a server restart, which tunebench cannot do for this target", strings.Join(pending, ", ")))...)
		}
		_ = conn.Close(ctx)
		conn = nil
		if err := r.Restart(ctx, "fast"); err != nil {
			return errors.Join(append(problems, errs.Wrap(errs.KindConnect, err, "check the server log", "restarting to restore %s", strings.Join(pending, ", ")))...)
		}
		if conn, err = connect(ctx); err != nil {
			return errors.Join(append(problems, err)...)
		}
		if pending, err = pendingRestart(ctx, conn, names); err != nil {
			return errors.Join(append(problems, err)...)
		}
		if len(pending) > 0 {
			problems = append(problems, errs.New(errs.KindConnect, "check the server log", "%s still wait for a restart after restoring", strings.Join(pending, ", ")))
		}
	}
	return errors.Join(problems...)
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
