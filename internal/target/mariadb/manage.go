package mariadb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// The managed MariaDB of `tunebench server --engine mariadb`
// (target.ServerManager).

// Product is "MariaDB".
func (Driver) Product() string { return "MariaDB" }

// OwnsServerDir: a directory with a managed MariaDB's option file.
func (Driver) OwnsServerDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, optionFile))
	return err == nil
}

// Attach opens the managed server in dir without starting it.
func Attach(dir string) (*Server, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "", "bad --dir %q", dir)
	}
	s := &Server{dir: abs}
	b, err := os.ReadFile(filepath.Join(abs, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errs.Usage(fmt.Sprintf("create one with `tunebench server start --engine mariadb --dir %s`", abs),
			"%s is not a managed MariaDB's directory (no %s)", abs, stateFile)
	}
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "reading %s", filepath.Join(abs, stateFile))
	}
	if err := json.Unmarshal(b, &s.st); err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "move the directory away to make a new server", "%s is damaged", filepath.Join(abs, stateFile))
	}
	pw, err := os.ReadFile(filepath.Join(abs, passFile))
	if err != nil {
		return nil, errs.Wrap(errs.KindEnvironment, err, "", "reading the password of the server in %s", abs)
	}
	s.password = strings.TrimSpace(string(pw))
	return s, nil
}

// Running reports whether the server runs, and its pid.
func (s *Server) Running() (int, bool) {
	p := s.pid()
	return p, p != 0
}

// DSN is the server's connection string (no password: the driver reads
// $MYSQL_PWD, or give --server-dir).
func (s *Server) DSN() string {
	return "mariadb://" + User + "@127.0.0.1:" + strconv.Itoa(s.st.Port) + "/" + DefaultDatabase
}

// Env are the variables the mariadb client reads for the host and port;
// its user and password come from the client option file
// (--defaults-extra-file), which no variable can name.
func (s *Server) Env() []string {
	return []string{
		"MYSQL_HOST=127.0.0.1",
		"MYSQL_TCP_PORT=" + strconv.Itoa(s.st.Port),
		"MYSQL_UNIX_PORT=" + filepath.Join(s.dir, socketFile),
	}
}

func (s *Server) info() target.ServerInfo {
	pid, running := s.Running()
	return target.ServerInfo{Running: running, PID: pid, Port: s.st.Port, Version: s.st.Version,
		Dir: filepath.Join(s.dir, dataSubdir), DSN: s.DSN(), Secret: s.password}
}

// StartServer makes the server (mariadb-install-db) when needed and
// starts it.
func (Driver) StartServer(ctx context.Context, o target.ServerOptions) (target.ServerInfo, error) {
	if o.Listen != "" {
		return target.ServerInfo{}, errs.Usage("leave --listen out: a managed MariaDB listens on 127.0.0.1 only; for drivers on other machines, run MariaDB yourself and give --dsn mariadb://USER@HOST:PORT/DB",
			"--listen is not supported for a managed MariaDB")
	}
	if len(o.Settings) > 0 {
		return target.ServerInfo{}, errs.Usage("give the settings to the commands that use the server (load/run --set, or an experiment's target.settings), which apply, verify and restore them",
			"--set is not supported by `server start --engine mariadb`")
	}
	srv, err := Start(ctx, Options{Dir: o.Dir, Port: o.Port, RunAs: o.RunAs, Bin: o.Bin})
	if err != nil {
		return target.ServerInfo{}, err
	}
	in := srv.info()
	if len(srv.Restored) > 0 {
		in.Restored = describe(srv.Restored)
	}
	return in, nil
}

func describe(as []Applied) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.Name+"="+a.Previous)
	}
	return strings.Join(parts, ", ")
}

// StopServer stops the server (SIGTERM: InnoDB's clean shutdown, the one
// mode MariaDB has). Values set with SET GLOBAL end with it; the ones a
// killed process left in the settings file are restored first.
func (Driver) StopServer(ctx context.Context, dir, mode string) (string, error) {
	if mode != "" && mode != "fast" {
		return "", errs.Usage("leave --mode out for MariaDB (it shuts down one way: InnoDB's clean shutdown)", "--mode %s is PostgreSQL's", mode)
	}
	srv, err := Attach(dir)
	if err != nil {
		return "", err
	}
	var restored string
	if _, running := srv.Running(); running {
		as, err := srv.RestoreLeftovers(ctx)
		if err != nil {
			return "", err
		}
		if len(as) > 0 {
			restored = describe(as)
		}
	}
	return restored, srv.Stop(ctx)
}

// ServerStatus reads the server's state.
func (Driver) ServerStatus(_ context.Context, dir string) (target.ServerInfo, error) {
	srv, err := Attach(dir)
	if err != nil {
		return target.ServerInfo{}, err
	}
	in := srv.info()
	in.Secret = ""
	return in, nil
}

// ServerEnv: MYSQL_HOST, MYSQL_TCP_PORT, MYSQL_UNIX_PORT.
func (Driver) ServerEnv(dir string) ([]string, error) {
	srv, err := Attach(dir)
	if err != nil {
		return nil, err
	}
	return srv.Env(), nil
}

// ManagedSupported: mariadbd and mariadb-install-db must be here.
func (Driver) ManagedSupported() error {
	_, err := binaries("")
	return err
}
