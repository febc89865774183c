package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/target"
)

// Dialect is the SQL dialect of MariaDB targets (workloads list it in
// Meta().Dialects).
const Dialect = "mariadb"

// PasswordEnv is where a DSN target's password comes from, as the
// mariadb client reads it (never from the command line); without it, the
// password of ~/.my.cnf's client sections.
const PasswordEnv = "MYSQL_PWD"

// Driver opens MariaDB targets: a mariadb:// or mysql:// connection
// string, or the directory of a managed MariaDB (--server-dir).
type Driver struct{}

// Name is the driver's name.
func (Driver) Name() string { return Dialect }

// Accepts takes mariadb:// and mysql:// connection strings and managed
// MariaDB directories.
func (Driver) Accepts(s target.Spec) bool {
	if isURL(s.DSN) {
		return true
	}
	if s.Managed != nil && s.DSN == "" {
		if s.Managed.Dir != "" {
			if _, err := os.Stat(filepath.Join(s.Managed.Dir, optionFile)); err == nil {
				return true
			}
		}
		return s.Managed.Engine == Dialect
	}
	if s.ServerDir != "" && s.DSN == "" {
		_, err := os.Stat(filepath.Join(s.ServerDir, optionFile))
		return err == nil
	}
	return false
}

func isURL(dsn string) bool {
	return strings.HasPrefix(dsn, "mariadb://") || strings.HasPrefix(dsn, "mysql://")
}

// Check validates a connection string without connecting: its syntax,
// and no password in it.
func (Driver) Check(s target.Spec) error {
	if !isURL(s.DSN) {
		return nil
	}
	_, err := parseURL(s.DSN, nil)
	return err
}

// parseURL reads mariadb://user@host:port/db (port 3306 by default); the
// password comes from $MYSQL_PWD.
func parseURL(dsn string, getenv func(string) string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, errs.Usage("write it as mariadb://USER@HOST:PORT/DATABASE", "bad MariaDB connection string: %v", err)
	}
	if _, has := u.User.Password(); has {
		return nil, errs.Usage("put the password in $"+PasswordEnv+" or in ~/.my.cnf's [client] section (password=), not in the connection string (it would show in ps and shell history)",
			"the MariaDB connection string holds a password")
	}
	c := mysql.NewConfig()
	c.User = u.User.Username()
	if c.User == "" {
		c.User = "root"
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	c.Net, c.Addr = "tcp", net.JoinHostPort(host, port)
	c.DBName = strings.TrimPrefix(u.Path, "/")
	if getenv != nil {
		c.Passwd = getenv(PasswordEnv)
		if c.Passwd == "" && getenv("HOME") != "" {
			c.Passwd = optionFilePassword(filepath.Join(getenv("HOME"), ".my.cnf"))
		}
	}
	c.AllowNativePasswords = true
	c.ParseTime = true
	return c, nil
}

// Open opens the target (no connection is made yet).
func (Driver) Open(ctx context.Context, s target.Spec) (target.Target, error) {
	t := &Target{owned: s.Own}
	if isURL(s.DSN) {
		cfg, err := parseURL(s.DSN, s.Getenv)
		if err != nil {
			return nil, err
		}
		t.cfg = cfg
	} else {
		srv, err := t.openServer(ctx, s)
		if err != nil {
			return nil, err
		}
		t.srv, t.cfg = srv, srv.Config(DefaultDatabase)
		if s.Redactor != nil {
			s.Redactor.AddSecret(srv.password)
		}
	}
	if s.Database != "" {
		t.cfg.DBName = s.Database
	}
	// The driver would log a connection the server dropped (a restart
	// during a run) to stderr, in the middle of the progress lines; the
	// error itself reaches whoever used the connection.
	t.cfg.Logger = &mysql.NopLogger{}
	for _, a := range s.Avoid {
		if t.cfg.DBName == a {
			return nil, errs.Usage("name another database in the connection (the experiment makes and drops "+a+")",
				"the connection names database %s, which the experiment recreates", a)
		}
	}
	if len(s.Base) > 0 && !s.Own {
		return nil, errs.New(errs.KindInternal, "", "base settings need an owned target (nothing would restore them)")
	}
	if s.Redactor != nil && t.cfg.Passwd != "" {
		s.Redactor.AddSecret(t.cfg.Passwd)
	}
	if len(s.Base) > 0 {
		if _, err := t.Settings().Apply(ctx, s.Base); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// openServer attaches to the running managed server of --server-dir, or
// for an experiment (Spec.Managed) starts it, in a temporary directory
// when it names none; Close then stops what it started.
func (t *Target) openServer(ctx context.Context, s target.Spec) (*Server, error) {
	if s.Managed == nil {
		srv, err := Attach(s.ServerDir)
		if err != nil {
			return nil, err
		}
		if _, running := srv.Running(); !running {
			return nil, errs.New(errs.KindConnect, "start it with `tunebench server start --dir "+s.ServerDir+"`", "the managed MariaDB in %s is not running", s.ServerDir)
		}
		srv.Restored, err = srv.RestoreLeftovers(ctx)
		return srv, err
	}
	m := s.Managed
	if m.WALDir != "" || m.Wrap != nil {
		return nil, errs.Usage("leave the storage layout's WAL device and the hardware envelope out for MariaDB (not supported yet)", "a managed MariaDB has no separate log device or envelope")
	}
	dir := m.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("/var/tmp", "tunebench-mariadb-")
		if err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "making a directory for the managed MariaDB")
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return nil, err
		}
		dir, t.tempDir = tmp, tmp
	}
	var running bool
	if prev, err := Attach(dir); err == nil {
		_, running = prev.Running()
	}
	srv, err := Start(ctx, Options{Dir: dir, Port: m.Port, RunAs: m.RunAs})
	if err != nil {
		if t.tempDir != "" {
			_ = os.RemoveAll(t.tempDir)
		}
		return nil, err
	}
	t.started = !running
	return srv, nil
}

// Target is a MariaDB server and one database on it.
type Target struct {
	cfg *mysql.Config
	srv *Server // a managed server; nil for a connection string
	// started: Open started srv, Close stops it; tempDir is removed then.
	started bool
	tempDir string
	owned   bool
	// kept are the settings an owned target applied, restored by Close.
	mu   *sync.Mutex
	kept *[]Applied
}

func (t *Target) init() {
	if t.mu == nil {
		t.mu, t.kept = &sync.Mutex{}, &[]Applied{}
	}
}

// Dialect is "mariadb".
func (t *Target) Dialect() string { return Dialect }

// Describe names the target without its password.
func (t *Target) Describe() string {
	return "mariadb://" + t.cfg.User + "@" + t.cfg.Addr + "/" + t.cfg.DBName
}

// Database is the target's database.
func (t *Target) Database() string { return t.cfg.DBName }

// WithDatabase is the same server with another database.
func (t *Target) WithDatabase(name string) target.Target {
	// The copy shares the server and owns nothing: its Close neither
	// restores the settings nor stops the server.
	c := &Target{cfg: t.cfg.Clone(), srv: t.srv}
	c.cfg.DBName = name
	return c
}

// Open is a connection pool to database db on the target's server.
func (t *Target) Open(db string) (*sql.DB, error) {
	c := t.cfg.Clone()
	c.DBName = db
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "", "MariaDB connection")
	}
	return sql.OpenDB(conn), nil
}

// Remote reports a server on another machine.
func (t *Target) Remote() bool {
	if t.srv != nil {
		return false
	}
	host, _, _ := net.SplitHostPort(t.cfg.Addr)
	ip := net.ParseIP(host)
	return !(host == "localhost" || (ip != nil && ip.IsLoopback()))
}

// ScratchDir is a directory next to a managed server's data.
func (t *Target) ScratchDir(name string) (string, bool) {
	if t.srv == nil {
		return "", false
	}
	return filepath.Join(t.srv.Dir(), name), true
}

// Databases makes and copies the experiment's databases.
func (t *Target) Databases() target.Databases { return Databases{Open: t.Open} }

// Env snapshots this machine (for a local server) and the server's
// version.
func (t *Target) Env(ctx context.Context, version string) *envinfo.Snapshot {
	o := envinfo.Options{Version: version, Remote: t.Remote()}
	if t.srv != nil {
		o.DataDir = filepath.Join(t.srv.Dir(), dataSubdir)
	}
	snap := envinfo.Take(ctx, o)
	db, err := envDatabase(ctx, t)
	if err != nil {
		snap.Warnings = append(snap.Warnings, "MariaDB's version and settings: "+err.Error())
	} else {
		snap.Database = db
	}
	return snap
}

// envDatabase reads the server's version and the variables not at their
// compiled default (set by an option file, the command line or SQL).
func envDatabase(ctx context.Context, t *Target) (*envinfo.Database, error) {
	pool, err := t.Open(t.cfg.DBName)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	d := &envinfo.Database{Product: "MariaDB", Database: t.cfg.DBName, Settings: map[string]string{}}
	if err := pool.QueryRowContext(ctx, "SELECT VERSION()").Scan(&d.Version); err != nil {
		return nil, connError(err, "reading the server's version")
	}
	rows, err := pool.QueryContext(ctx, "SELECT LOWER(VARIABLE_NAME), COALESCE(GLOBAL_VALUE, '') FROM information_schema.SYSTEM_VARIABLES WHERE GLOBAL_VALUE_ORIGIN <> 'COMPILE-TIME' ORDER BY 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		d.Settings[k] = redact.SettingValue(k, v)
	}
	return d, rows.Err()
}

// Close restores the settings an owned target kept.
func (t *Target) Close(ctx context.Context) error {
	t.init()
	t.mu.Lock()
	kept := *t.kept
	*t.kept = nil
	t.mu.Unlock()
	var err error
	if len(kept) > 0 {
		err = t.restore(ctx, kept)
	}
	if t.started && t.srv != nil {
		err = errors.Join(err, t.srv.Stop(ctx))
		t.started = false
		if t.tempDir != "" {
			err = errors.Join(err, os.RemoveAll(t.tempDir))
		}
	}
	return err
}

func (t *Target) restore(ctx context.Context, as []Applied) error {
	if t.srv != nil {
		return t.srv.Restore(ctx, as)
	}
	db, err := t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	cat, err := Catalog(ctx, db)
	if err != nil {
		return err
	}
	var back []Applied
	for i := len(as) - 1; i >= 0; i-- {
		a := as[i]
		a.Value = a.Previous
		back = append(back, a)
	}
	return setGlobalsOn(ctx, db, cat, back)
}

// Settings changes the server's variables (SET GLOBAL; read-only ones
// through a managed server's settings file and a restart).
func (t *Target) Settings() target.Settings { return settings{t} }

type settings struct{ t *Target }

func (settings) Parse(kv string) (target.Setting, error) {
	name, value, ok := strings.Cut(kv, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	if !ok || name == "" {
		return target.Setting{}, errs.Usage("write settings as name=value, e.g. innodb_io_capacity=2000", "bad setting %q", kv)
	}
	return target.Setting{Name: name, Value: strings.TrimSpace(value)}, nil
}

func toMap(list []target.Setting) map[string]string {
	m := map[string]string{}
	for _, s := range list {
		m[s.Name] = s.Value
	}
	return m
}

// Check validates against the server's catalogue without changing
// anything.
func (s settings) Check(ctx context.Context, list []target.Setting) error {
	db, err := s.t.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	as, _, err := resolve(ctx, db, toMap(list), nil)
	if err != nil {
		return err
	}
	return s.t.refuseRestart(as)
}

// refuseRestart refuses read-only variables on a server tunebench cannot
// restart.
func (t *Target) refuseRestart(as []Applied) error {
	if t.srv != nil {
		return nil
	}
	for _, a := range as {
		if a.Restart {
			return errs.Usage("set it in the server's option file and restart it yourself, or use a managed MariaDB (--server-dir)",
				"%s is read-only while MariaDB runs (it needs a restart), which tunebench cannot do for this server", a.Name)
		}
	}
	return nil
}

// Apply applies, journals (on a managed server) and verifies the settings.
func (s settings) Apply(ctx context.Context, list []target.Setting) (target.Change, error) {
	t := s.t
	t.init()
	holder := Holder("tunebench")
	var done []Applied
	if t.srv != nil {
		var err error
		if done, err = t.srv.Apply(ctx, toMap(list), holder); err != nil {
			return nil, err
		}
	} else {
		db, err := t.Open("")
		if err != nil {
			return nil, err
		}
		defer db.Close()
		as, cat, err := resolve(ctx, db, toMap(list), holder)
		if err != nil {
			return nil, err
		}
		if err := t.refuseRestart(as); err != nil {
			return nil, err
		}
		if err := setGlobalsOn(ctx, db, cat, as); err != nil {
			return nil, err
		}
		if err := verifyOn(ctx, db, as); err != nil {
			return nil, err
		}
		done = as
	}
	if t.owned {
		t.mu.Lock()
		*t.kept = append(*t.kept, done...)
		t.mu.Unlock()
	}
	return &change{t: t, done: done}, nil
}

type change struct {
	t    *Target
	done []Applied
}

func (c *change) Values() map[string]string {
	m := map[string]string{}
	for _, a := range c.done {
		m[a.Name] = a.Value
	}
	return m
}

func (c *change) Restarted() bool {
	for _, a := range c.done {
		if a.Restart {
			return true
		}
	}
	return false
}

// Restore puts the values before back (an owned target does it at Close).
func (c *change) Restore(ctx context.Context) error {
	if c.t.owned || len(c.done) == 0 {
		return nil
	}
	return c.t.restore(ctx, c.done)
}

// connError says why the server could not be reached, with the fix: a
// refused login, an unknown database, nothing listening.
func connError(err error, what string) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045:
			return errs.Wrap(errs.KindConnect, err, "check the user in the connection string and the password in $"+PasswordEnv+" (or password= in ~/.my.cnf's [client] section)", "MariaDB refused the login (%s)", what)
		case 1049:
			return errs.Wrap(errs.KindConnect, err, "create the database, or name another in the connection string", "no such database (%s)", what)
		}
		return errs.Wrap(errs.KindConnect, err, "", "%s", what)
	}
	var ne net.Error
	if errors.As(err, &ne) || strings.Contains(err.Error(), "connection refused") {
		return errs.Wrap(errs.KindConnect, err, "is the server running, and are the host and port right?", "cannot reach MariaDB (%s)", what)
	}
	return errs.Wrap(errs.KindConnect, err, "", "%s", what)
}

// RestoreSettings puts back every setting an owned target kept (as Close
// does) and leaves the server running (target.SettingsRestorer).
func (t *Target) RestoreSettings(ctx context.Context) (bool, error) {
	t.init()
	t.mu.Lock()
	kept := *t.kept
	*t.kept = nil
	t.mu.Unlock()
	if len(kept) == 0 {
		return false, nil
	}
	restarted := false
	for _, a := range kept {
		restarted = restarted || a.Restart
	}
	if err := t.restore(ctx, kept); err != nil {
		t.mu.Lock()
		*t.kept = append(kept, *t.kept...)
		t.mu.Unlock()
		return false, err
	}
	return restarted, nil
}

// Notes say what MariaDB's figures mean where other databases' differ
// (target.Noter).
func (t *Target) Notes() []envinfo.Note {
	return []envinfo.Note{
		{Topic: envinfo.NoteIsolation, Text: "repeatable read by default (InnoDB; transaction_isolation), unless the workload or the settings choose another level"},
		{Topic: envinfo.NoteTransactions, Text: "Com_commit + Com_rollback of the whole server (SHOW GLOBAL STATUS): COMMIT and ROLLBACK statements of every database, autocommitted statements not counted"},
	}
}

// LocalDataDir is the server's data directory on this machine
// (target.DataDirer): a managed server's, or @@datadir of a server on
// this host when this process can see it.
func (t *Target) LocalDataDir(ctx context.Context) (string, string) {
	if t.srv != nil {
		return filepath.Join(t.srv.Dir(), dataSubdir), ""
	}
	if t.Remote() {
		return "", "the server runs on another machine"
	}
	pool, err := t.Open(t.cfg.DBName)
	if err != nil {
		return "", err.Error()
	}
	defer pool.Close()
	var dir string
	if err := pool.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dir); err != nil {
		return "", "reading @@datadir: " + err.Error()
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "the server's data directory " + dir + " is not visible here (a container?)"
	}
	return dir, ""
}
