// Package pg is the PostgreSQL target: a server reached by connection
// string, or a managed server (internal/server) that tunebench starts
// itself. It implements target.Target; workloads' PostgreSQL-specific code
// (COPY loaders, checks in SQL) reaches it through From, the escape hatch,
// for connections of its own.
package pg

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"

	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/target"
)

// Dialect is the dialect PostgreSQL targets speak.
const Dialect = "postgres"

// EnvDSN is the environment variable that may hold a whole connection
// string, password included.
const EnvDSN = pgdrv.EnvDSN

// Driver opens PostgreSQL targets.
type Driver struct{}

// Name is the driver's name.
func (Driver) Name() string { return Dialect }

// Accepts takes every spec: PostgreSQL is the default target.
func (Driver) Accepts(target.Spec) bool { return true }

// Target is a PostgreSQL server and one database on it.
type Target struct {
	conn *pgdrv.Target // connection configuration (its database is the target's)
	srv  *server.Server
	// owned: opened for an experiment (Spec.Managed or base settings):
	// settings are journaled on a managed server, accumulated otherwise,
	// and Close restores them.
	owned   bool
	started bool   // tunebench started srv; Close stops it
	tempDir string // removed by Close
	pending []server.Applied
	version int // server_version_num (0 until read)
	// restarter restarts a server given by connection string with the
	// user's --restart-command (nil: none given).
	restarter server.Restarter
}

// From returns the PostgreSQL target behind t, or a usage error naming the
// workload's need.
func From(t target.Target) (*Target, error) {
	if p, ok := t.(*Target); ok {
		return p, nil
	}
	return nil, errs.Usage("run this workload on a PostgreSQL target (--dsn or --server-dir)",
		"this workload speaks PostgreSQL; the target %s is %s", t.Describe(), t.Dialect())
}

// Dialect is "postgres".
func (t *Target) Dialect() string { return Dialect }

// Describe is user@host:port/db.
func (t *Target) Describe() string { return t.conn.Describe() }

// Database is the target's database.
func (t *Target) Database() string { return t.conn.Config.Database }

// WithDatabase is the same server with another database; it shares the
// server and owns nothing.
func (t *Target) WithDatabase(name string) target.Target { return t.withDatabase(name) }

func (t *Target) withDatabase(name string) *Target {
	return &Target{conn: t.conn.WithDatabase(name), srv: t.srv, version: t.version, restarter: t.restarter}
}

// Remote reports whether the server is on another machine (never for a
// managed server).
func (t *Target) Remote() bool { return t.srv == nil && t.conn.Remote() }

// restart is the server's Restarter: the managed server, else the user's
// restart command (nil: none).
func (t *Target) restart() server.Restarter {
	if t.srv != nil {
		return t.srv
	}
	return t.restarter
}

// Conn is the connection target (pgx configuration), for connections of a
// workload's own.
func (t *Target) Conn() *pgdrv.Target { return t.conn }

// Connect opens a connection for load generation (blocking system calls on
// its socket; see driver/pg).
func (t *Target) Connect(ctx context.Context) (*pgx.Conn, error) { return t.conn.Connect(ctx) }

// ConnectStd opens a connection with Go's standard network I/O.
func (t *Target) ConnectStd(ctx context.Context) (*pgx.Conn, error) { return t.conn.ConnectStd(ctx) }

// Server is the managed server, nil for a server given by connection string.
func (t *Target) Server() *server.Server { return t.srv }

// ScratchDir is a directory next to a managed server's data.
func (t *Target) ScratchDir(name string) (string, bool) {
	if t.srv == nil {
		return "", false
	}
	return filepath.Join(t.srv.Dir(), name), true
}

// Env snapshots the host, the filesystem of the data directory when it is
// on this machine (LocalDataDir) and the server (version, non-default
// settings, address and round trip).
func (t *Target) Env(ctx context.Context, version string) *envinfo.Snapshot {
	o := envinfo.Options{Version: version}
	conn, err := t.conn.ConnectStd(ctx)
	if err == nil {
		defer conn.Close(context.WithoutCancel(ctx))
		o.Conn = conn
	}
	if t.srv != nil || err == nil {
		o.DataDir, _ = t.LocalDataDir(ctx, conn)
	}
	o.Remote = t.Remote()
	s := envinfo.Take(ctx, o)
	if err != nil {
		s.Warnings = append(s.Warnings, "postgres: "+err.Error())
	}
	return s
}

// serverVersion reads server_version_num once.
func (t *Target) serverVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	if t.version == 0 {
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&t.version); err != nil {
			return 0, errs.Wrap(errs.KindConnect, err, "", "reading the server version")
		}
	}
	return t.version, nil
}

// Close restores the settings applied through an owned target and stops a
// server it started; a temporary directory it made is removed (kept when a
// server it started could not be stopped).
func (t *Target) Close(ctx context.Context) error {
	var err error
	switch {
	case t.srv != nil && t.started:
		err = t.srv.Stop(ctx, "fast") // restores what Apply changed
	case t.srv != nil && t.owned:
		err = t.srv.Release(ctx, nil)
	case len(t.pending) > 0:
		err = server.Restore(ctx, t.conn.Connect, t.restarter, t.pending)
		if err == nil {
			t.pending = nil
		}
	}
	if t.tempDir != "" && (!t.started || err == nil) {
		os.RemoveAll(t.tempDir)
		t.tempDir = ""
	}
	return err
}

// ClientEnv is what psql, pg_dump and pg_restore need to reach the
// target's database (PGHOST, PGPORT, PGUSER, PGDATABASE; for a managed
// server PGPASSFILE, its password file), and for a managed server its
// directories and binaries (TUNEBENCH_SERVER_DIR,
// TUNEBENCH_DATA_DIR, TUNEBENCH_PG_BIN).
func (t *Target) ClientEnv() map[string]string {
	c := t.conn.Config
	out := map[string]string{"PGHOST": c.Host, "PGPORT": strconv.Itoa(int(c.Port)), "PGUSER": c.User, "PGDATABASE": c.Database}
	if t.srv != nil {
		out["TUNEBENCH_SERVER_DIR"] = t.srv.Dir()
		out["TUNEBENCH_DATA_DIR"] = t.srv.DataDir()
		out["TUNEBENCH_PG_BIN"] = t.srv.Binaries().Dir
		out["PGPASSFILE"] = t.srv.PassFile()
	}
	return out
}
