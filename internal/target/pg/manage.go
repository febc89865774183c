package pg

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/target"
)

// The managed PostgreSQL of `tunebench server` (target.ServerManager).

// Product is "PostgreSQL".
func (Driver) Product() string { return "PostgreSQL" }

// OwnsServerDir: a directory with the managed server's state file.
func (Driver) OwnsServerDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, server.StateFile))
	return err == nil
}

// StartServer makes the server (initdb) when needed and starts it.
func (Driver) StartServer(ctx context.Context, o target.ServerOptions) (target.ServerInfo, error) {
	so := server.Options{Dir: o.Dir, Port: o.Port, Listen: o.Listen, PGBin: o.Bin, RunAs: o.RunAs, Log: o.Log}
	for _, kv := range o.Settings {
		st, err := server.ParseSetting(kv)
		if err != nil {
			return target.ServerInfo{}, err
		}
		so.Settings = append(so.Settings, st)
	}
	srv, err := server.Start(ctx, so)
	if err != nil {
		return target.ServerInfo{}, err
	}
	return target.ServerInfo{Running: true, Port: srv.Port(), Version: srv.Binaries().Version, Dir: srv.Dir(), DSN: srv.DSN(), Secret: srv.Password()}, nil
}

// StopServer stops it, restoring the settings tunebench applied.
func (Driver) StopServer(ctx context.Context, dir, mode string) (string, error) {
	if mode != "smart" && mode != "fast" && mode != "immediate" {
		return "", errs.Usage("--mode is smart, fast or immediate", "invalid mode %q", mode)
	}
	srv, err := server.Open(dir)
	if err != nil {
		return "", err
	}
	held := srv.AppliedSettings()
	if err := srv.Stop(ctx, mode); err != nil {
		return "", err
	}
	if mode != "immediate" && len(held) > 0 {
		return server.Describe(held), nil
	}
	return "", nil
}

// ServerStatus reads the server's state.
func (Driver) ServerStatus(ctx context.Context, dir string) (target.ServerInfo, error) {
	srv, err := server.Open(dir)
	if err != nil {
		return target.ServerInfo{}, err
	}
	st, err := srv.Status(ctx)
	if err != nil {
		return target.ServerInfo{}, err
	}
	return target.ServerInfo{Running: st.Running, PID: st.PID, Port: st.Port, Version: st.Version, Dir: st.DataDir, DSN: st.DSN}, nil
}

// ServerEnv: PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSFILE.
func (Driver) ServerEnv(dir string) ([]string, error) {
	srv, err := server.Open(dir)
	if err != nil {
		return nil, err
	}
	return srv.Env(), nil
}
