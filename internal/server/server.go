// Package server manages a PostgreSQL server that tunebench runs itself (the
// "managed server"): it finds the binaries, runs initdb, starts and stops the
// server on a loopback port as an unprivileged OS user, and changes settings
// with ALTER SYSTEM (validated, verified, and restored afterwards). Apply and
// Restore also work for servers tunebench does not manage.
//
// A server dir D holds:
//
//	D/data                 PGDATA
//	D/server.json          state: port, binaries, run-as user, pid, applied settings (0600)
//	D/pgpass               libpq password file for the postgres superuser (0600)
//	D/log/postgresql.log   server log
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/redact"
)

// ReadyTimeout bounds how long Start and Restart wait for the server to accept connections.
const ReadyTimeout = 60 * time.Second

// Superuser is the database superuser initdb creates.
const Superuser = "postgres"

// Options configures Start.
type Options struct {
	Dir      string    // server dir; required
	Port     int       // 0 = the port recorded for the dir if free, else a free loopback port
	PGBin    string    // explicit bin dir (initdb, pg_ctl, postgres)
	RunAs    string    // OS user to run PostgreSQL as when tunebench runs as root
	Password string    // superuser password for a new dir; "" = 24 random URL-safe characters
	Settings []Setting // applied with ALTER SYSTEM after start (see Apply) and restored by Stop
	// Config holds base settings written to the dir's tunebench.conf before the
	// server starts (no restart needed, not restored by Stop). Nil keeps the
	// base settings recorded for the dir; an empty non-nil slice clears them.
	Config []Setting
	NoSync bool // initdb --no-sync (faster; for tests and throw-away servers)
	// Wrap prepares every PostgreSQL command before it starts (initdb,
	// pg_ctl start and restart): an envelope's Command, so that the
	// server's processes run inside its cgroup. Nil: none.
	Wrap func(*exec.Cmd) error
	// WALDir puts pg_wal in this directory (initdb --waldir) when the data
	// directory is made: an absolute path, absent or empty (a storage
	// layout's WAL device). Ignored for an existing data directory.
	WALDir string
	// Listen is an IP address of this machine (or of the network
	// namespace Wrap starts the server in) that the server also listens
	// on, for clients on other machines of its networks (pg_hba.conf:
	// samenet, scram-sha-256); DSN then names it. "" keeps the recorded
	// one (none: 127.0.0.1 only).
	Listen string
	Log    io.Writer // progress lines; may be nil
}

// Status describes a server dir's server.
type Status struct {
	Running bool   // a postmaster process for the data dir is alive
	Ready   bool   // it accepts connections
	PID     int    // postmaster pid when running
	Port    int    // TCP port on 127.0.0.1
	Version string // PostgreSQL version of the binaries
	DataDir string
	DSN     string // password-free conninfo
}

// Server is a managed PostgreSQL server in a server dir.
type Server struct {
	dir      string
	bins     Binaries
	user     runUser
	password string

	mu  sync.Mutex // guards st and log
	st  state
	log io.Writer
	// wrap prepares the commands that start PostgreSQL (Options.Wrap).
	wrap func(*exec.Cmd) error
}

// Start prepares the server dir (initdb on first use), starts PostgreSQL,
// waits until it accepts connections and applies o.Settings. Starting a dir
// whose server is already running is an error.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Dir) == "" {
		return nil, errs.Usage("give the server directory with --dir", "no server directory given")
	}
	if o.Listen != "" && net.ParseIP(o.Listen) == nil {
		return nil, errs.Usage("give an IP address of this machine, e.g. --listen 10.0.0.5", "bad listen address %q", o.Listen)
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, errs.Usage("use a port between 1024 and 65535, or omit --port to pick a free one", "bad port %d", o.Port)
	}
	for _, s := range o.Settings {
		if !ValidName(s.Name) {
			return nil, errs.Usage("setting names are lower-case letters, digits and underscores", "bad setting name %q", s.Name)
		}
	}
	if err := checkConfig(o.Config); err != nil {
		return nil, err
	}
	if strings.ContainsAny(o.Password, "\x00\n\r") {
		return nil, errs.Usage("use a password without newlines", "bad password: contains a newline or NUL")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "", "bad --dir %q", o.Dir)
	}
	if fileExists(filepath.Join(dir, "PG_VERSION")) {
		return nil, errs.Usage("give a new or empty directory; tunebench keeps the data directory in DIR/data",
			"%s is a PostgreSQL data directory itself, not a tunebench server dir", dir)
	}
	dataDir := filepath.Join(dir, dataSubdir)
	initialized := fileExists(filepath.Join(dataDir, "PG_VERSION"))

	prev, err := readState(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}

	// The OS user: an existing data dir's owner, else --run-as / postgres.
	var u runUser
	if initialized && os.Geteuid() == 0 {
		st, err := os.Stat(dataDir)
		if err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "inspecting %s", dataDir)
		}
		owner := fileOwner(st)
		if owner == 0 {
			return nil, errs.New(errs.KindEnvironment, "chown -R it to an unprivileged user (e.g. postgres)",
				"data directory %s is owned by root; PostgreSQL cannot run as root", dataDir)
		}
		if u, err = runUserByID(owner); err != nil {
			return nil, err
		}
		if o.RunAs != "" && o.RunAs != u.Name {
			return nil, errs.Usage("drop --run-as, or chown -R the data directory to that user",
				"data directory %s belongs to %s, not --run-as %s", dataDir, u.Name, o.RunAs)
		}
	} else if u, err = resolveRunUser(o.RunAs); err != nil {
		return nil, err
	}
	if u.Switch && o.Port != 0 && o.Port < 1024 {
		return nil, errs.Usage("use a port of 1024 or above", "PostgreSQL runs as %s and cannot listen on privileged port %d", u.Name, o.Port)
	}

	// Binaries: explicit, else those recorded for the dir, else search.
	pgBin := o.PGBin
	if pgBin == "" && prev.BinDir != "" && len(missingIn(prev.BinDir)) == 0 {
		pgBin = prev.BinDir
	}
	bins, err := FindBinaries(pgBin)
	if err != nil {
		return nil, err
	}
	if err := u.checkTraversable(bins.Dir, "PostgreSQL bin dir", "choose another --pg-bin"); err != nil {
		return nil, err
	}
	if err := u.checkTraversable(dir, "server dir", "choose another --dir that "+u.Name+" can reach (e.g. under /tmp or /var/lib)"); err != nil {
		return nil, err
	}
	if initialized {
		if err := checkDataVersion(dataDir, bins); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "choose another --dir", "cannot create server dir %s", dir)
	}

	s := &Server{dir: dir, bins: bins, user: u, log: o.Log, wrap: o.Wrap}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Re-read under the lock: another process may have changed it.
	if prev, err = readState(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	s.st = prev
	s.st.BinDir, s.st.Version, s.st.RunAs = bins.Dir, bins.Version, u.Name
	if o.Listen != "" {
		s.st.Listen = o.Listen
	}
	if o.Config != nil {
		s.st.Config = append([]Setting{}, o.Config...)
	}

	if err := s.handlePidFile(); err != nil {
		return nil, err
	}

	// Port: explicit, else the recorded one when free, else a new free one.
	port := o.Port
	if port == 0 && prev.Port > 0 {
		if CheckPortFree(prev.Port) == nil {
			port = prev.Port
		} else {
			s.logf("port %d recorded for %s is taken; picking another", prev.Port, dir)
		}
	}
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	} else if err := CheckPortFree(port); err != nil {
		return nil, err
	}
	s.st.Port = port

	if !initialized {
		s.st.Applied, s.st.PID = nil, 0 // nothing of an earlier cluster applies to a new one
		if err := s.initdb(ctx, o.Password, o.NoSync, o.WALDir); err != nil {
			return nil, err
		}
	} else if err := s.loadPassword(o.Password); err != nil {
		return nil, err
	}

	if len(s.st.Applied) > 0 {
		s.logf("restoring %d setting(s) left changed by an earlier run: %s", len(s.st.Applied), appliedNames(s.st.Applied))
		if err := s.offlineRestore(s.st.Applied); err != nil {
			return nil, err
		}
		s.st.Applied = nil
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	if err := s.startLocked(ctx); err != nil {
		if o.Config != nil {
			// Do not keep a base configuration the server did not start with.
			s.mu.Lock()
			s.st.Config = prev.Config
			s.mu.Unlock()
			err = errors.Join(err, s.writeBaseConfig(), s.save())
		}
		return nil, err
	}
	if len(o.Settings) > 0 {
		if _, err := s.applyLocked(ctx, o.Settings, nil); err != nil {
			s.logf("stopping the server because its settings could not be applied")
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReadyTimeout)
			defer cancel()
			if serr := s.stopLocked(sctx, "fast"); serr != nil {
				return nil, errors.Join(err, serr)
			}
			return nil, err
		}
	}
	return s, nil
}

// Open attaches to an existing server dir, running or not.
func Open(dir string) (*Server, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "", "bad --dir %q", dir)
	}
	st, err := readState(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errs.Usage(fmt.Sprintf("create one with `tunebench server start --dir %s`, or give the dir used with server start", abs),
			"%s is not a tunebench server dir (no %s)", abs, StateFile)
	}
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(abs, dataSubdir)
	if !fileExists(filepath.Join(dataDir, "PG_VERSION")) {
		return nil, errs.Usage(fmt.Sprintf("start it again with `tunebench server start --dir %s`", abs),
			"server dir %s has no initialised data directory", abs)
	}
	bins, err := FindBinaries(st.BinDir)
	if err != nil {
		if bins, err = FindBinaries(""); err != nil {
			return nil, err
		}
	}
	if err := checkDataVersion(dataDir, bins); err != nil {
		return nil, err
	}
	var u runUser
	if os.Geteuid() == 0 {
		fi, err := os.Stat(dataDir)
		if err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "inspecting %s", dataDir)
		}
		if u, err = runUserByID(fileOwner(fi)); err != nil {
			return nil, err
		}
	} else if u, err = resolveRunUser(""); err != nil {
		return nil, err
	}
	s := &Server{dir: abs, bins: bins, user: u, st: st}
	if err := s.loadPassword(""); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the server of an opened dir again, with its recorded port and
// base configuration. Starting a running server is an error.
func (s *Server) Start(ctx context.Context) error {
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.handlePidFile(); err != nil {
		return err
	}
	port := s.Port()
	if err := CheckPortFree(port); err != nil {
		return err
	}
	if applied := s.applied(); len(applied) > 0 {
		s.logf("restoring %d setting(s) left changed by an earlier run: %s", len(applied), appliedNames(applied))
		if err := s.offlineRestore(applied); err != nil {
			return err
		}
		s.mu.Lock()
		s.st.Applied = nil
		s.mu.Unlock()
		if err := s.save(); err != nil {
			return err
		}
	}
	return s.startLocked(ctx)
}

// SetLog sets the writer for progress lines (nil discards them).
func (s *Server) SetLog(w io.Writer) {
	s.mu.Lock()
	s.log = w
	s.mu.Unlock()
}

// Dir is the server dir.
func (s *Server) Dir() string { return s.dir }

// DataDir is PGDATA.
func (s *Server) DataDir() string { return filepath.Join(s.dir, dataSubdir) }

// LogPath is the server log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, logSubdir, logFileName) }

// PassFile is the libpq password file for the superuser.
func (s *Server) PassFile() string { return filepath.Join(s.dir, pgpassFile) }

// Binaries are the PostgreSQL binaries that run the server.
func (s *Server) Binaries() Binaries { return s.bins }

// RunAs is the OS user the server processes run as.
func (s *Server) RunAs() string { return s.user.Name }

// Password is the superuser password, for registering with the redactor. Never print it.
func (s *Server) Password() string { return s.password }

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Port
}

// AppliedSettings lists the settings tunebench has changed and not yet restored.
func (s *Server) AppliedSettings() []Applied { return s.applied() }

func (s *Server) applied() []Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Applied(nil), s.st.Applied...)
}

// DSN is a password-free conninfo for the postgres database; the password comes from PassFile.
func (s *Server) DSN() string { return s.DSNFor("postgres") }

// DSNFor is DSN for another database.
func (s *Server) DSNFor(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable passfile=%s",
		s.host(), s.Port(), Superuser, conninfoQuote(dbname), conninfoQuote(s.PassFile()))
}

// host is the address clients connect to: Listen, else 127.0.0.1.
func (s *Server) host() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Listen != "" {
		return s.st.Listen
	}
	return "127.0.0.1"
}

// Env is the libpq environment for psql, pgbench and other clients.
func (s *Server) Env() []string {
	return []string{
		"PGHOST=" + s.host(),
		"PGPORT=" + strconv.Itoa(s.Port()),
		"PGUSER=" + Superuser,
		"PGDATABASE=postgres",
		"PGPASSFILE=" + s.PassFile(),
		"PGSSLMODE=disable",
	}
}

// Connect opens a superuser connection to the postgres database.
func (s *Server) Connect(ctx context.Context) (*pgx.Conn, error) {
	return s.ConnectDB(ctx, "postgres")
}

// ConnectDB opens a superuser connection to a database.
func (s *Server) ConnectDB(ctx context.Context, dbname string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.DSNFor(dbname))
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "building the connection config")
	}
	cfg.Password = s.password
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 10*time.Second {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, errs.Wrap(errs.KindConnect, err,
			fmt.Sprintf("check `tunebench server status --dir %s` and the log %s", s.dir, s.LogPath()),
			"cannot connect to the managed server on 127.0.0.1:%d", s.Port())
	}
	return conn, nil
}

// Status reports whether the server runs and where.
func (s *Server) Status(ctx context.Context) (Status, error) {
	st := Status{Port: s.Port(), Version: s.bins.Version, DataDir: s.DataDir(), DSN: s.DSN()}
	pf, ok, err := readPidFile(s.DataDir())
	if err != nil {
		return st, errs.Wrap(errs.KindEnvironment, err, "", "reading postmaster.pid")
	}
	if ok && proc.Exists(pf.PID) && isPostgres(pf.PID) {
		st.Running, st.PID = true, pf.PID
		if pf.Port > 0 {
			st.Port = pf.Port
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if conn, err := s.Connect(cctx); err == nil {
			st.Ready = true
			_ = conn.Close(cctx)
		}
	}
	return st, nil
}

// Stop stops the server ("smart", "fast" or "immediate"). Except in immediate
// mode it first restores the settings tunebench applied; after an immediate
// stop they stay recorded and the next start restores them.
func (s *Server) Stop(ctx context.Context, mode string) error {
	if err := checkMode(mode); err != nil {
		return err
	}
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.stopLocked(ctx, mode)
}

// Restart restarts the server with pg_ctl restart, keeping its port, and waits until it is ready.
func (s *Server) Restart(ctx context.Context, mode string) error {
	if err := checkMode(mode); err != nil {
		return err
	}
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.restartLocked(ctx, mode)
}

// Apply changes settings like the package-level Apply, restarting the server
// when needed, and checks the shared memory they need against the
// machine's. Each change is journaled in server.json before it is made,
// held by this process: Release restores it; if the process dies first,
// the next stop, start, run or experiment on the server restores it
// (RestoreLeftovers). Settings tunebench manages (port, listen_addresses,
// unix_socket_directories) are refused, and so is a setting another live
// process holds.
func (s *Server) Apply(ctx context.Context, settings []Setting) ([]Applied, error) {
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.applyLocked(ctx, settings, self())
}

// Check validates settings as Apply would, against the server's
// pg_settings and the machine's memory, changing nothing.
func (s *Server) Check(ctx context.Context, settings []Setting) error {
	for _, set := range settings {
		if managedSetting(set.Name) {
			return errs.Usage("use --port and --dir to place the managed server", "setting %s is managed by tunebench and cannot be changed", set.Name)
		}
	}
	return Check(ctx, s.Connect, s, settings, MachineMemory())
}

// Release restores the settings this process applied (those of applied;
// all of them when applied is nil) and removes them from the journal.
func (s *Server) Release(ctx context.Context, applied []Applied) error {
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	me := self()
	var mine []Applied
	for _, a := range s.applied() {
		if !a.Holder.Same(me) {
			continue
		}
		keep := applied == nil
		for _, b := range applied {
			keep = keep || b.Name == a.Name
		}
		if keep {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	if err := s.restoreLocked(ctx, mine); err != nil {
		return err
	}
	s.logf("restored %s", appliedNames(mine))
	return nil
}

// RestoreLeftovers restores the settings left changed by processes that
// ended without restoring them (killed runs and experiments) and says so;
// it returns what it restored.
func (s *Server) RestoreLeftovers(ctx context.Context) ([]Applied, error) {
	if len(leftovers(s.applied())) == 0 {
		return nil, nil // a cheap look first: this runs before every run
	}
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	left := leftovers(s.applied())
	if len(left) == 0 {
		return nil, nil
	}
	s.logf("restoring %s, left changed by a tunebench process that ended without restoring them (%s)", appliedNames(left), holders(left))
	if err := s.restoreLocked(ctx, left); err != nil {
		return nil, err
	}
	return left, nil
}

// restoreLocked restores entries of the journal (over SQL when the server
// runs, restarting it when one needs it; in postgresql.auto.conf when it
// does not run or does not come back) and removes them from the journal.
func (s *Server) restoreLocked(ctx context.Context, entries []Applied) error {
	if s.running() {
		err := restore(ctx, s.Connect, lockedRestarter{s}, entries, true)
		if err != nil && s.running() {
			return errs.Wrap(errs.KindConnect, err, "check the server log "+s.LogPath()+"; `tunebench server stop --dir "+s.dir+"` restores them",
				"restoring settings %s", appliedNames(entries))
		}
		if err != nil {
			s.logf("the server is down after restoring over SQL failed (%v); undoing %s in postgresql.auto.conf", err, appliedNames(entries))
			if err := s.offlineRestore(entries); err != nil {
				return err
			}
		}
	} else if err := s.offlineRestore(entries); err != nil {
		return err
	}
	s.mu.Lock()
	s.st.Applied = without(s.st.Applied, entries)
	s.mu.Unlock()
	return s.save()
}

// Restore restores every setting recorded as applied.
func (s *Server) Restore(ctx context.Context) error {
	unlock, err := s.lockFresh(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	applied := s.applied()
	if len(applied) == 0 {
		return nil
	}
	if !s.running() {
		if err := s.offlineRestore(applied); err != nil {
			return err
		}
		s.logf("restored %s in postgresql.auto.conf (the server is not running)", appliedNames(applied))
	} else {
		if err := restore(ctx, s.Connect, lockedRestarter{s}, applied, true); err != nil {
			return errs.Wrap(errs.KindConnect, err, "check the server log "+s.LogPath(), "restoring settings %s", appliedNames(applied))
		}
		s.logf("restored %s", appliedNames(applied))
	}
	s.mu.Lock()
	s.st.Applied = nil
	s.mu.Unlock()
	return s.save()
}

// lockedRestarter restarts while the caller already holds the dir lock.
type lockedRestarter struct{ s *Server }

func (r lockedRestarter) Restart(ctx context.Context, mode string) error {
	return r.s.restartLocked(ctx, mode)
}

// managedSetting names settings a managed server's base config owns.
func managedSetting(name string) bool {
	switch name {
	case "port", "listen_addresses", "unix_socket_directories", "data_directory", "config_file", "hba_file", "ident_file":
		return true
	}
	return false
}

func (s *Server) applyLocked(ctx context.Context, settings []Setting, holder *Holder) ([]Applied, error) {
	for _, set := range settings {
		if managedSetting(set.Name) {
			return nil, errs.Usage("use --port and --dir to place the managed server", "setting %s is managed by tunebench and cannot be changed", set.Name)
		}
	}
	old := s.applied()
	for _, set := range settings {
		for _, a := range old {
			if a.Name == set.Name && a.Holder != nil && !a.Holder.Same(holder) && a.Holder.Alive() {
				return nil, errs.New(errs.KindConnect, "wait for it to end (it restores the setting), then run again",
					"setting %s of the server in %s is held by another tunebench process (%s) until it ends", set.Name, s.dir, a.Holder)
			}
		}
	}
	record := func(done []Applied) error {
		s.mu.Lock()
		s.st.Applied = mergeApplied(old, done)
		s.mu.Unlock()
		return s.save()
	}
	res, err := apply(ctx, s.Connect, lockedRestarter{s}, settings, applyOpts{record: record, mem: MachineMemory(), holder: holder})
	if err == nil {
		for _, a := range res {
			how := "reload"
			if a.NeededRestart {
				how = "restart"
			}
			s.logf("set %s = %s (was %s; %s)", a.Name, redact.SettingValue(a.Name, a.Effective), redact.SettingValue(a.Name, a.Previous), how)
		}
		return res, nil
	}
	if res == nil { // nothing changed, or the changes were rolled back
		s.mu.Lock()
		s.st.Applied = old
		s.mu.Unlock()
		return nil, errors.Join(err, s.save())
	}
	// The rollback failed. If a restart left the server down (e.g. a bad
	// shared_preload_libraries), undo the changes in the files and start again.
	if s.running() {
		return nil, err
	}
	s.logf("the server did not come back; undoing %s in postgresql.auto.conf and starting it again", appliedNames(res))
	if oerr := s.offlineRestore(res); oerr != nil {
		return nil, errors.Join(err, oerr)
	}
	s.mu.Lock()
	s.st.Applied = old
	s.mu.Unlock()
	if serr := s.save(); serr != nil {
		return nil, errors.Join(err, serr)
	}
	if serr := s.startLocked(ctx); serr != nil {
		return nil, errors.Join(err, serr)
	}
	var sf *startFailure
	logLines := ""
	if errors.As(err, &sf) && sf.Tail != "" {
		logLines = "\nlast lines of " + sf.LogPath + ":\n" + sf.Tail
	}
	list := make([]string, len(settings))
	for i, set := range settings {
		list[i] = set.Name + "=" + redact.SettingValue(set.Name, set.Value)
	}
	return nil, errs.New(errs.KindUsage, "change the values; the server log lines name the problem",
		"PostgreSQL did not start with %s, so tunebench undid the change and started it again with the earlier settings%s",
		strings.Join(list, ", "), logLines)
}

// mergeApplied adds done to old; a setting applied again by the same holder
// keeps its original previous values. A setting another holder changed
// before (the server's lifetime, under a run's) is a new entry above it.
func mergeApplied(old, done []Applied) []Applied {
	out := append([]Applied(nil), old...)
	for _, d := range done {
		found := false
		for i := range out {
			if out[i].Name == d.Name && out[i].Holder.Same(d.Holder) {
				d.Previous, d.HadAuto, d.AutoPrevious = out[i].Previous, out[i].HadAuto, out[i].AutoPrevious
				out[i] = d
				found = true
				break
			}
		}
		if !found {
			out = append(out, d)
		}
	}
	return out
}

func appliedNames(applied []Applied) string {
	names := make([]string, len(applied))
	for i, a := range applied {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

func checkMode(mode string) error {
	switch mode {
	case "smart", "fast", "immediate":
		return nil
	}
	return errs.Usage("use smart, fast or immediate", "bad shutdown mode %q", mode)
}

func checkConfig(cfg []Setting) error {
	for _, c := range cfg {
		if !ValidName(c.Name) {
			return errs.Usage("setting names are lower-case letters, digits and underscores", "bad setting name %q", c.Name)
		}
		if managedSetting(c.Name) {
			return errs.Usage("use --port and --dir to place the managed server", "setting %s is managed by tunebench", c.Name)
		}
		if strings.ContainsAny(c.Value, "\x00\n\r") {
			return errs.Usage("remove the control character", "bad value for setting %s: contains a newline or NUL", c.Name)
		}
	}
	return nil
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	w := s.log
	s.mu.Unlock()
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func (s *Server) save() error {
	s.mu.Lock()
	st := s.st
	st.Applied = append([]Applied(nil), s.st.Applied...)
	s.mu.Unlock()
	return writeState(s.dir, st)
}

// refresh re-reads server.json (another process may have changed it).
func (s *Server) refresh() error {
	st, err := readState(s.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errs.Usage("", "%s is not a tunebench server dir (no %s)", s.dir, StateFile)
		}
		return err
	}
	s.mu.Lock()
	s.st = st
	s.mu.Unlock()
	return nil
}

// lock takes the server dir's lock (flock on server.lock), waiting while
// another tunebench process or goroutine holds it.
func (s *Server) lock(ctx context.Context) (func(), error) {
	path := filepath.Join(s.dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "cannot open lock file %s", path)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		busy, err := tryLock(f)
		if err == nil {
			return func() {
				unlockFile(f)
				_ = f.Close()
			}, nil
		}
		if !busy {
			f.Close()
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "cannot lock %s", path)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errs.New(errs.KindConnect, "wait for the other tunebench command to finish",
				"another tunebench process is managing %s", s.dir)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lockFresh takes the dir lock (lock) and re-reads server.json under it
// (refresh): what every change of a server's state starts with.
func (s *Server) lockFresh(ctx context.Context) (func(), error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.refresh(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// running reports whether a live postmaster owns the data dir.
func (s *Server) running() bool {
	pf, ok, err := readPidFile(s.DataDir())
	return err == nil && ok && proc.Exists(pf.PID) && isPostgres(pf.PID)
}

// handlePidFile refuses to start a running server and removes a stale postmaster.pid.
func (s *Server) handlePidFile() error {
	dataDir := s.DataDir()
	pf, ok, err := readPidFile(dataDir)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "reading %s", filepath.Join(dataDir, "postmaster.pid"))
	}
	if !ok {
		return nil
	}
	pidPath := filepath.Join(dataDir, "postmaster.pid")
	if proc.Exists(pf.PID) {
		if isPostgres(pf.PID) {
			port := pf.Port
			if port == 0 {
				port = s.Port()
			}
			return errs.New(errs.KindConnect, fmt.Sprintf("use `tunebench server stop --dir %s` first", s.dir),
				"the server in %s is already running on port %d (pid %d)", s.dir, port, pf.PID)
		}
		return errs.New(errs.KindConnect,
			fmt.Sprintf("if no PostgreSQL server uses %s, remove %s and start again", dataDir, pidPath),
			"%s names pid %d, which is alive but is %q, not postgres; the pid file is probably stale from a crash",
			pidPath, pf.PID, processName(pf.PID))
	}
	s.logf("removing stale %s (pid %d is not running)", pidPath, pf.PID)
	if err := os.Remove(pidPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return errs.Wrap(errs.KindEnvironment, err, "remove it by hand", "cannot remove stale %s", pidPath)
	}
	return nil
}
