package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/target"
)

// Dialect is the SQL dialect of MariaDB targets (workloads list it in
// Meta().Dialects).
const Dialect = "mariadb"

// PasswordEnv is where a DSN target's password comes from, as the
// mariadb client reads it (never from the command line).
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
		return nil, errs.Usage("put the password in $"+PasswordEnv+", not in the connection string (it would show in ps and shell history)",
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
		srv, err := Start(ctx, Options{Dir: s.ServerDir})
		if err != nil {
			return nil, err
		}
		t.srv, t.cfg = srv, srv.Config("")
		if s.Redactor != nil {
			s.Redactor.AddSecret(srv.password)
		}
	}
	if s.Database != "" {
		t.cfg.DBName = s.Database
	}
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

// Target is a MariaDB server and one database on it.
type Target struct {
	cfg   *mysql.Config
	srv   *Server // a managed server; nil for a connection string
	owned bool
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
	t.init()
	c := *t
	c.cfg = t.cfg.Clone()
	c.cfg.DBName = name
	return &c
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
	return envinfo.Take(ctx, o)
}

// Close restores the settings an owned target kept.
func (t *Target) Close(ctx context.Context) error {
	t.init()
	t.mu.Lock()
	kept := *t.kept
	*t.kept = nil
	t.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	return t.restore(ctx, kept)
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

// Samplers: the server's counters from SHOW GLOBAL STATUS, as rates.
func (t *Target) Samplers(context.Context, target.HostMetrics, func(string, ...any)) ([]sampler.Spec, error) {
	return []sampler.Spec{{Sampler: &statusSampler{t: t}}}, nil
}

// statusCounters are the SHOW GLOBAL STATUS counters sampled, by series.
var statusCounters = map[string]string{
	"Com_commit": "mariadb.commits", "Com_rollback": "mariadb.rollbacks",
	"Innodb_rows_read": "mariadb.rows_read", "Innodb_rows_inserted": "mariadb.rows_inserted",
	"Innodb_rows_updated": "mariadb.rows_updated", "Innodb_rows_deleted": "mariadb.rows_deleted",
	"Innodb_buffer_pool_read_requests": "mariadb.buffer_pool_read_requests", "Innodb_buffer_pool_reads": "mariadb.buffer_pool_reads",
	"Innodb_log_writes": "mariadb.log_writes", "Innodb_os_log_fsyncs": "mariadb.log_fsyncs",
	"Innodb_row_lock_waits": "mariadb.row_lock_waits", "Innodb_deadlocks": "mariadb.deadlocks",
}

type statusSampler struct {
	t    *Target
	db   *sql.DB
	prev map[string]float64
	at   time.Time
}

func (*statusSampler) Name() string { return "mariadb status" }

// Sample reads the counters and returns their rates per second since the
// last sample (nothing on the first).
func (s *statusSampler) Sample(ctx context.Context, now time.Time) ([]sampler.Point, error) {
	if s.db == nil {
		db, err := s.t.Open("")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		s.db = db
	}
	rows, err := s.db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cur := map[string]float64{}
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			return nil, err
		}
		if series, ok := statusCounters[name]; ok {
			if f, err := strconv.ParseFloat(val, 64); err == nil {
				cur[series] = f
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []sampler.Point
	if s.prev != nil {
		dt := now.Sub(s.at).Seconds()
		if dt > 0 {
			for k, v := range cur {
				out = append(out, sampler.Point{Series: k, V: (v - s.prev[k]) / dt})
			}
		}
	}
	s.prev, s.at = cur, now
	return out, nil
}

// connError says why the server could not be reached, with the fix: a
// refused login, an unknown database, nothing listening.
func connError(err error, what string) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045:
			return errs.Wrap(errs.KindConnect, err, "check the user in the connection string and the password in $"+PasswordEnv, "MariaDB refused the login (%s)", what)
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
