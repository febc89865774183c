package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/server"
)

// Variable is one row of information_schema.SYSTEM_VARIABLES: the
// catalogue settings are checked against before anything changes.
type Variable struct {
	Name     string
	Type     string // BIGINT UNSIGNED, INT, DOUBLE, BOOLEAN, ENUM, SET, VARCHAR ...
	Min, Max *float64
	// MinText and MaxText are the bounds as the catalogue writes them
	// (exact for 64-bit integers, which a float64 rounds).
	MinText, MaxText string
	Block            float64  // NUMERIC_BLOCK_SIZE: a value is a multiple of it
	Enum             []string // ENUM and SET members, BOOLEAN's OFF,ON
	ReadOnly         bool     // set at start only: through the settings file and a restart
	Global           bool     // has a global value (scope GLOBAL or SESSION)
	Value            string   // GLOBAL_VALUE
	HasDefault       bool
}

// Catalog reads the server's variables.
func Catalog(ctx context.Context, db *sql.DB) (map[string]Variable, error) {
	rows, err := db.QueryContext(ctx, `SELECT VARIABLE_NAME, VARIABLE_TYPE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE,
		NUMERIC_BLOCK_SIZE, ENUM_VALUE_LIST, READ_ONLY, VARIABLE_SCOPE, GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES`)
	if err != nil {
		return nil, connError(err, "reading information_schema.SYSTEM_VARIABLES")
	}
	defer rows.Close()
	out := map[string]Variable{}
	for rows.Next() {
		var name, typ, ro, scope string
		var minV, maxV, block, enum, val sql.NullString
		if err := rows.Scan(&name, &typ, &minV, &maxV, &block, &enum, &ro, &scope, &val); err != nil {
			return nil, errs.Wrap(errs.KindConnect, err, "", "reading information_schema.SYSTEM_VARIABLES")
		}
		v := Variable{Name: strings.ToLower(name), Type: strings.ToUpper(typ), ReadOnly: ro == "YES", Global: scope != "SESSION ONLY", Value: val.String}
		v.Min, v.Max = num(minV), num(maxV)
		v.MinText, v.MaxText = minV.String, maxV.String
		if b := num(block); b != nil {
			v.Block = *b
		}
		if enum.Valid && enum.String != "" {
			v.Enum = strings.Split(enum.String, ",")
		}
		out[v.Name] = v
	}
	return out, rows.Err()
}

func num(s sql.NullString) *float64 {
	if !s.Valid {
		return nil
	}
	f, err := strconv.ParseFloat(s.String, 64)
	if err != nil {
		return nil
	}
	return &f
}

var sizeRe = regexp.MustCompile(`^(?i)\s*(-?\d+)\s*([KMGT]?)\s*$`)

// canonical checks value against v and returns it as it is given to SET
// GLOBAL and compared with what the server reads back: integers in
// bytes (K, M, G and T suffixes taken, as in option files), booleans ON or
// OFF, enum members in the catalogue's spelling.
func canonical(v Variable, value string) (string, error) {
	value = strings.TrimSpace(value)
	if strings.ContainsAny(value, "\x00\n\r") {
		return "", errs.Usage("one line", "bad value for %s", v.Name)
	}
	switch {
	case strings.Contains(v.Type, "INT"):
		m := sizeRe.FindStringSubmatch(value)
		if m == nil {
			return "", errs.Usage(fmt.Sprintf("%s takes an integer (K, M, G, T suffixes allowed)", v.Name), "invalid value %q for %s", value, v.Name)
		}
		// Exact integers: BIGINT UNSIGNED reaches 2^64-1, past float64.
		n, ok := new(big.Int).SetString(m[1], 10)
		if !ok {
			return "", errs.Usage(v.Name+" takes an integer", "invalid value %q for %s", value, v.Name)
		}
		n.Mul(n, big.NewInt(map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[strings.ToUpper(m[2])]))
		lo, hasLo := new(big.Int).SetString(v.MinText, 10)
		hi, hasHi := new(big.Int).SetString(v.MaxText, 10)
		if (hasLo && n.Cmp(lo) < 0) || (hasHi && n.Cmp(hi) > 0) {
			return "", errs.Usage(fmt.Sprintf("%s is between %s and %s (MariaDB would clamp it, with only a warning)", v.Name, v.MinText, v.MaxText),
				"value %s for %s is out of range", n, v.Name)
		}
		if v.Block > 1 {
			b := big.NewInt(int64(v.Block))
			if r := new(big.Int).Mod(n, b); r.Sign() != 0 {
				return "", errs.Usage(fmt.Sprintf("use a multiple of %s (MariaDB would round it down to %s)", b, new(big.Int).Sub(n, r)),
					"value %s for %s is not a multiple of its block size %s", value, v.Name, b)
			}
		}
		return n.String(), nil
	case v.Type == "DOUBLE":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return "", errs.Usage(v.Name+" takes a number", "invalid value %q for %s", value, v.Name)
		}
		if err := inRange(v, f); err != nil {
			return "", err
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	case v.Type == "BOOLEAN":
		switch strings.ToUpper(value) {
		case "ON", "1", "TRUE", "YES":
			return "ON", nil
		case "OFF", "0", "FALSE", "NO":
			return "OFF", nil
		}
		return "", errs.Usage("use ON or OFF", "invalid value %q for %s", value, v.Name)
	case v.Type == "ENUM":
		for _, e := range v.Enum {
			if strings.EqualFold(e, value) {
				return e, nil
			}
		}
		return "", errs.Usage("use one of: "+strings.Join(v.Enum, ", "), "invalid value %q for %s", value, v.Name)
	case v.Type == "SET" || v.Type == "FLAGSET":
		var out []string
		for _, part := range strings.Split(value, ",") {
			part = strings.TrimSpace(part)
			found := false
			for _, e := range v.Enum {
				if strings.EqualFold(e, part) || (v.Type == "FLAGSET" && strings.HasPrefix(strings.ToLower(part), strings.ToLower(e)+"=")) {
					out, found = append(out, part), true
				}
			}
			if !found && part != "" {
				return "", errs.Usage("use members of: "+strings.Join(v.Enum, ", "), "invalid member %q of %s", part, v.Name)
			}
		}
		return strings.Join(out, ","), nil
	}
	return value, nil
}

func inRange(v Variable, n float64) error {
	if (v.Min != nil && n < *v.Min) || (v.Max != nil && n > *v.Max) {
		return errs.Usage(fmt.Sprintf("%s is between %s and %s (MariaDB would clamp it, with only a warning)", v.Name, bound(v.Min), bound(v.Max)),
			"value %s for %s is out of range", strconv.FormatFloat(n, 'f', -1, 64), v.Name)
	}
	return nil
}

func bound(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// same reports whether the server's read-back value is the value set: a
// SET as the same members in any order; a FLAGSET (optimizer_switch) as
// every flag given at its value among all the flags it prints.
func same(v Variable, want, got string) bool {
	if strings.EqualFold(strings.TrimSpace(want), strings.TrimSpace(got)) {
		return true
	}
	if v.Type == "SET" || v.Type == "FLAGSET" {
		have := map[string]bool{}
		for _, m := range strings.Split(strings.ToLower(got), ",") {
			have[strings.TrimSpace(m)] = true
		}
		members := strings.Split(strings.ToLower(want), ",")
		for _, m := range members {
			if m = strings.TrimSpace(m); m != "" && m != "default" && !have[m] {
				return false
			}
		}
		return v.Type == "FLAGSET" || len(members) == len(have)
	}
	a, errA := strconv.ParseFloat(want, 64)
	b, errB := strconv.ParseFloat(got, 64)
	return errA == nil && errB == nil && math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a))
}

// Applied is a setting changed, as the journal keeps it.
type Applied struct {
	Name     string         `json:"name"`
	Value    string         `json:"value"`
	Previous string         `json:"previous"`
	Restart  bool           `json:"restart"` // set in the settings file (read-only variable)
	Holder   *server.Holder `json:"holder"`
}

// journal is the settings the server has from tunebench, in its state file.
type journal struct {
	Applied []Applied `json:"applied"`
}

func (s *Server) journalPath() string { return filepath.Join(s.dir, "settings.json") }

func (s *Server) readJournal() ([]Applied, error) {
	b, err := os.ReadFile(s.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "%s is damaged", s.journalPath())
	}
	return j.Applied, nil
}

func (s *Server) writeJournal(as []Applied) error {
	if len(as) == 0 {
		if err := os.Remove(s.journalPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(journal{Applied: as}, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.journalPath() + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.journalPath())
}

// lockJournal holds the journal for one Apply or Restore (another
// tunebench process waits), until the returned function is called.
func (s *Server) lockJournal() (func(), error) {
	f, err := os.OpenFile(s.journalPath()+".lock", os.O_CREATE|os.O_RDWR|syscallNoFollow, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "locking %s", s.journalPath())
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "locking %s", s.journalPath())
	}
	return func() { f.Close() }, nil
}

// Holder is this process as the holder of settings it applies.
func Holder(what string) *server.Holder {
	return &server.Holder{PID: os.Getpid(), Start: proc.Start(os.Getpid()), What: what}
}

// Apply checks every setting against the catalogue (a name it lacks, a
// value out of range or off its block size, refused before anything
// changes), journals each with its previous value and holder, sets the
// dynamic ones with SET GLOBAL and the read-only ones in the settings
// file with one restart, and reads every value back (MariaDB clamps and
// rounds with only a warning). On failure what it changed is restored.
func (s *Server) Apply(ctx context.Context, settings map[string]string, holder *server.Holder) ([]Applied, error) {
	unlock, err := s.lockJournal()
	if err != nil {
		return nil, err
	}
	done, err := s.apply(ctx, settings, holder)
	unlock()
	if err != nil && done != nil {
		// Undo what was made (the lock is free again for Restore).
		return nil, errors.Join(err, s.Restore(context.WithoutCancel(ctx), done))
	}
	return done, err
}

// apply is Apply under the journal's lock; on an error after changes it
// returns what to restore with the error.
func (s *Server) apply(ctx context.Context, settings map[string]string, holder *server.Holder) ([]Applied, error) {
	db, err := s.Open("")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	todo, _, err := resolve(ctx, db, settings, holder)
	if err != nil {
		return nil, err
	}
	prev, err := s.readJournal()
	if err != nil {
		return nil, err
	}
	for _, a := range todo {
		for _, p := range prev {
			if p.Name == a.Name && p.Holder.Alive() && !p.Holder.Same(holder) {
				return nil, errs.Usage("wait for it to end", "%s is held by another tunebench process (%s)", a.Name, p.Holder)
			}
		}
	}
	// Journal first: a process killed next leaves what to restore.
	if err := s.writeJournal(append(prev, todo...)); err != nil {
		return nil, err
	}
	// Read-only ones first: a restart loses every SET GLOBAL, so the
	// dynamic values in force (the journal's) are set again after it.
	var restart []Applied
	for _, a := range todo {
		if a.Restart {
			restart = append(restart, a)
		}
	}
	if len(restart) > 0 {
		if err := s.writeSettingsFile(restart, nil); err != nil {
			return todo, err
		}
		if err := s.restart(ctx); err != nil {
			return todo, err
		}
		if err := s.setGlobals(ctx, prev); err != nil {
			return todo, err
		}
	}
	if err := s.setGlobals(ctx, todo); err != nil {
		return todo, err
	}
	if err := s.verify(ctx, todo); err != nil {
		return todo, err
	}
	return todo, nil
}

// setGlobals sets the dynamic values of as with SET GLOBAL (the last one
// of a name wins).
func (s *Server) setGlobals(ctx context.Context, as []Applied) error {
	if len(as) == 0 {
		return nil
	}
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	cat, err := Catalog(ctx, db)
	if err != nil {
		return err
	}
	return setGlobalsOn(ctx, db, cat, as)
}

// resolve checks settings against the server's catalogue before anything
// changes and returns them as they are applied, with their values before.
func resolve(ctx context.Context, db *sql.DB, settings map[string]string, holder *server.Holder) ([]Applied, map[string]Variable, error) {
	cat, err := Catalog(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(settings))
	for n := range settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var todo []Applied
	for _, n := range names {
		name := strings.ToLower(strings.TrimSpace(n))
		v, ok := cat[name]
		if !ok || !v.Global {
			hint := "see SELECT VARIABLE_NAME FROM information_schema.SYSTEM_VARIABLES"
			known := make([]string, 0, len(cat))
			for k := range cat {
				known = append(known, k)
			}
			if sg := option.Suggest(name, known); sg != "" {
				hint = "did you mean " + sg + "?"
			}
			return nil, nil, errs.Usage(hint, "unknown MariaDB variable %s", name)
		}
		val, err := canonical(v, settings[n])
		if err != nil {
			return nil, nil, err
		}
		todo = append(todo, Applied{Name: name, Value: val, Previous: v.Value, Restart: v.ReadOnly, Holder: holder})
	}
	return todo, cat, nil
}

// setGlobalsOn sets the dynamic values of as on db.
func setGlobalsOn(ctx context.Context, db *sql.DB, cat map[string]Variable, as []Applied) error {
	for _, a := range as {
		if a.Restart {
			continue
		}
		if _, err := db.ExecContext(ctx, "SET GLOBAL "+a.Name+" = "+sqlValue(cat[a.Name], a.Value)); err != nil {
			return errs.Wrap(errs.KindUsage, err, "", "SET GLOBAL %s = %s", a.Name, a.Value)
		}
	}
	return nil
}

// verifyOn reads the values of as back from db.
func verifyOn(ctx context.Context, db *sql.DB, as []Applied) error {
	cat, err := Catalog(ctx, db)
	if err != nil {
		return err
	}
	for _, a := range as {
		v := cat[a.Name]
		if !same(v, a.Value, v.Value) {
			return errs.Usage(fmt.Sprintf("MariaDB adjusted it (range %s..%s, block size %.0f); give a value it keeps", bound(v.Min), bound(v.Max), v.Block),
				"%s was set to %s, the server has %s", a.Name, a.Value, v.Value)
		}
	}
	return nil
}

// sqlValue is a value as SET GLOBAL takes it: numbers and ON/OFF bare,
// the rest quoted.
func sqlValue(v Variable, val string) string {
	if strings.Contains(v.Type, "INT") || v.Type == "DOUBLE" || v.Type == "BOOLEAN" {
		return val
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(val, `\`, `\\`), "'", "''") + "'"
}

// verify reads the values back.
func (s *Server) verify(ctx context.Context, as []Applied) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	return verifyOn(ctx, db, as)
}

// writeSettingsFile puts set in the settings file and takes drop out.
func (s *Server) writeSettingsFile(set, drop []Applied) error {
	path := filepath.Join(s.dir, settingsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, a := range append(append([]Applied{}, set...), drop...) {
		names[a.Name] = true
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		k, _, _ := strings.Cut(l, "=")
		if names[strings.TrimSpace(k)] {
			continue
		}
		out = append(out, l)
	}
	for _, a := range set {
		out = append(out, a.Name+"="+a.Value)
	}
	return os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// restart stops and starts the server.
func (s *Server) restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	if err := s.launch(); err != nil {
		return err
	}
	return s.waitReady(ctx, 60*time.Second)
}

// Restore puts the previous values back, newest first (SET GLOBAL x =
// DEFAULT would be the compiled default, not the value before), takes
// the read-only ones out of the settings file with one restart, and drops
// them from the journal.
func (s *Server) Restore(ctx context.Context, as []Applied) error {
	unlock, err := s.lockJournal()
	if err != nil {
		return err
	}
	defer unlock()
	prev, err := s.readJournal()
	if err != nil {
		return err
	}
	var left []Applied
	for _, p := range prev {
		gone := false
		for _, a := range as {
			gone = gone || (a.Name == p.Name && a.Holder.Same(p.Holder))
		}
		if !gone {
			left = append(left, p)
		}
	}
	var problems []error
	var restart []Applied
	for _, a := range as {
		if a.Restart {
			restart = append(restart, a)
		}
	}
	// The read-only ones first: the restart loses every SET GLOBAL, so
	// what others hold is set again after it, then the values before.
	if len(restart) > 0 {
		if err := s.writeSettingsFile(nil, restart); err != nil {
			problems = append(problems, err)
		} else if err := s.restart(ctx); err != nil {
			problems = append(problems, err)
		} else if err := s.setGlobals(ctx, left); err != nil {
			problems = append(problems, err)
		}
	}
	var back []Applied
	for i := len(as) - 1; i >= 0; i-- {
		if a := as[i]; !a.Restart {
			a.Value = a.Previous
			back = append(back, a)
		}
	}
	if err := s.setGlobals(ctx, back); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return errs.Wrap(errs.KindEnvironment, errors.Join(problems...), "the journal keeps them: the next start restores them", "restoring MariaDB settings")
	}
	return s.writeJournal(left)
}

// RestoreLeftovers restores the settings whose holder ended (a killed
// run), and returns them.
func (s *Server) RestoreLeftovers(ctx context.Context) ([]Applied, error) {
	prev, err := s.readJournal()
	if err != nil || len(prev) == 0 {
		return nil, err
	}
	var dead []Applied
	for _, p := range prev {
		if !p.Holder.Alive() {
			dead = append(dead, p)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	return dead, s.Restore(ctx, dead)
}
