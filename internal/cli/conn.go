package cli

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"
	"github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
)

// connFlags are the connection flags shared by load, run and check.
type connFlags struct {
	dsn       string
	serverDir string
	database  string
}

func (f *connFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.dsn, "dsn", "", "connection string (key=value or postgres:// URL) without a password; default: PG* variables, $TUNEBENCH_DSN")
	fs.StringVar(&f.serverDir, "server-dir", "", "use the managed server in this directory (see `tunebench server start`)")
	fs.StringVarP(&f.database, "database", "d", "", "database name (overrides the one in --dsn / PGDATABASE)")
}

// target resolves the connection target; srv is non-nil for a managed server.
func (f *connFlags) target(s *State) (*pg.Target, *server.Server, error) {
	var srv *server.Server
	dsn := f.dsn
	if f.serverDir != "" {
		if f.dsn != "" {
			return nil, nil, errs.Usage("give either --dsn or --server-dir", "--dsn and --server-dir both given")
		}
		var err error
		srv, err = server.Open(f.serverDir)
		if err != nil {
			return nil, nil, err
		}
		s.Redactor.AddSecret(srv.Password())
		dsn = srv.DSN()
	}
	t, err := pg.ParseTarget(dsn, s.Getenv(pg.EnvDSN), s.Redactor)
	if err != nil {
		return nil, nil, err
	}
	if f.database != "" {
		t = t.WithDatabase(f.database)
	}
	return t, srv, nil
}

// connector adapts a target to the workload's Connector.
func connector(t *pg.Target) func(ctx context.Context) (*pgx.Conn, error) {
	return t.Connect
}
