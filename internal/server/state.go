package server

import (
	"github.com/jackc/pgpassfile"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// File names inside the server dir.
const (
	StateFile   = "server.json"
	pgpassFile  = "pgpass"
	lockFile    = "server.lock"
	dataSubdir  = "data"
	logSubdir   = "log"
	logFileName = "postgresql.log"
	confInclude = "tunebench.conf" // inside the data dir, included from postgresql.conf
)

const stateFormat = 1

// state is server.json: what tunebench knows about a server dir.
type state struct {
	Format    int       `json:"format"`
	Port      int       `json:"port"`
	BinDir    string    `json:"bin_dir"`
	Version   string    `json:"version"`
	RunAs     string    `json:"run_as,omitempty"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	StoppedAt time.Time `json:"stopped_at,omitzero"`
	// Applied lists settings tunebench changed with ALTER SYSTEM and their
	// earlier values, so that Stop (or a later process) can restore them.
	Applied []Applied `json:"applied,omitempty"`
	// Config is the base configuration written to tunebench.conf at every start.
	Config []Setting `json:"config,omitempty"`
	// Listen is an address the server listens on besides 127.0.0.1, and
	// the one clients connect to (Options.Listen).
	Listen string `json:"listen,omitempty"`
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, errs.Wrap(errs.KindUsage, err, "move the directory away or repair the file",
			"%s is corrupt", filepath.Join(dir, StateFile))
	}
	if st.Format != stateFormat {
		return st, errs.New(errs.KindUsage, "use the tunebench version that created it, or choose another --dir",
			"%s has format %d; this tunebench reads format %d", filepath.Join(dir, StateFile), st.Format, stateFormat)
	}
	return st, nil
}

// writeState replaces server.json atomically, mode 0600.
func writeState(dir string, st state) error {
	st.Format = stateFormat
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, StateFile), append(b, '\n'), 0o600)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "writing %s", path)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, path)
	}
	if werr != nil {
		_ = os.Remove(name)
		return errs.Wrap(errs.KindEnvironment, werr, "", "writing %s", path)
	}
	return nil
}

// pgpass escaping: ':' and '\' are escaped with a backslash.
func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

func pgpassLine(password string, hosts ...string) string {
	var b strings.Builder
	for _, h := range append([]string{"127.0.0.1"}, hosts...) {
		if h != "" {
			b.WriteString(pgpassEscape(h) + ":*:*:postgres:" + pgpassEscape(password) + "\n")
		}
	}
	return b.String()
}

// pgpassHas reports whether the pgpass file has a line for host.
func pgpassHas(path, host string) bool {
	pf, err := pgpassfile.ReadPassfile(path)
	if err != nil {
		return false
	}
	for _, e := range pf.Entries {
		if e.Hostname == host {
			return true
		}
	}
	return false
}

// readPgpass returns the password of our entry in a pgpass file (the
// superuser's on 127.0.0.1).
func readPgpass(path string) (string, error) {
	pf, err := pgpassfile.ReadPassfile(path)
	if err != nil {
		return "", err
	}
	for _, e := range pf.Entries {
		if e.Hostname == "127.0.0.1" && e.Username == "postgres" {
			return e.Password, nil
		}
	}
	return "", fmt.Errorf("no entry for 127.0.0.1 user postgres in %s", path)
}

// pidFile is the content of postmaster.pid.
type pidFile struct {
	PID    int
	Port   int
	Status string // "ready", "starting", "stopping" (PostgreSQL 10+)
}

func readPidFile(dataDir string) (pidFile, bool, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return pidFile{}, false, nil
	}
	if err != nil {
		return pidFile{}, false, err
	}
	lines := strings.Split(string(b), "\n")
	var pf pidFile
	if len(lines) > 0 {
		pf.PID, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	}
	if len(lines) > 3 {
		pf.Port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	if len(lines) > 7 {
		pf.Status = strings.TrimSpace(lines[7])
	}
	return pf, true, nil
}

// processName returns /proc/PID/comm, or "" when unknown.
func processName(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// isPostgres reports whether a live pid looks like a PostgreSQL server process.
// When /proc cannot tell, it assumes yes (the safe answer: do not remove its pid file).
func isPostgres(pid int) bool {
	name := processName(pid)
	return name == "" || name == "postgres" || name == "postmaster" || strings.HasPrefix(name, "postgres")
}

// tailFile returns the last n lines of a file ("" if unreadable).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && len(buf) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // first line is probably cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
