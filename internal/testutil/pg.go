// Package testutil starts real PostgreSQL servers for integration tests.
//
// One server per test:
//
//	srv := testutil.StartServer(t)
//	conn := testutil.Connect(t, srv)
//
// One server shared by a package's tests (started on first use):
//
//	var pg testutil.Shared
//
//	func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
//
//	func TestX(t *testing.T) { srv := pg.Server(t); ... }
//
// When no PostgreSQL binaries are found the tests are skipped, unless the
// environment variable CI is set (then they fail: CI must run them).
// TUNEBENCH_TEST_PG_BIN picks the binaries (default: the FindBinaries search)
// and TUNEBENCH_TEST_RUN_AS the OS user when the tests run as root.
package testutil

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
)

// TestConfig is the base configuration of test servers: small, and fast
// because durability does not matter for throw-away data.
func TestConfig() []server.Setting {
	return []server.Setting{
		{Name: "shared_buffers", Value: "128MB"},
		{Name: "max_connections", Value: "100"},
		{Name: "fsync", Value: "off"},
		{Name: "synchronous_commit", Value: "off"},
		{Name: "full_page_writes", Value: "off"},
	}
}

// InCI reports whether the CI environment variable asks for a strict run.
func InCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// unavailableError is the machine's lack of PostgreSQL (no binaries, no
// unprivileged user to run them as); other start failures are real failures.
type unavailableError struct{ err error }

func (e unavailableError) Error() string { return describe(e.err) }

// skipOrFail skips the test with reason, or fails it under CI.
func skipOrFail(tb testing.TB, reason string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("PostgreSQL is required in CI (CI=%s): %s", os.Getenv("CI"), reason)
	}
	tb.Skipf("skipping: PostgreSQL not available: %s", reason)
}

// describe renders an error with its hint.
func describe(err error) string {
	if h := errs.HintOf(err); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}

// TempDir makes a directory under os.TempDir() that the unprivileged server
// user can traverse (mode 0755), and returns it with a function that removes it.
func TempDir(prefix string) (string, func(), error) {
	base := os.TempDir()
	if st, err := os.Stat(base); err != nil || st.Mode().Perm()&0o001 == 0 {
		base = "/tmp" // a private TMPDIR cannot be entered by the server user
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return "", nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// start runs a server in a new temp dir; the returned cleanup stops it and removes the dir.
func start(ctx context.Context, logw io.Writer, opts ...func(*server.Options)) (*server.Server, func(), error) {
	parent, removeDir, err := TempDir("tunebench-pg-")
	if err != nil {
		return nil, nil, err
	}
	o := server.Options{
		Dir:    filepath.Join(parent, "srv"),
		Config: TestConfig(),
		NoSync: true,
		PGBin:  os.Getenv("TUNEBENCH_TEST_PG_BIN"),
		RunAs:  os.Getenv("TUNEBENCH_TEST_RUN_AS"),
		Log:    logw,
	}
	for _, f := range opts {
		f(&o)
	}
	if _, err := server.CheckEnvironment(o.PGBin, o.RunAs); err != nil {
		removeDir()
		return nil, nil, unavailableError{err}
	}
	srv, err := server.Start(ctx, o)
	if err != nil {
		removeDir()
		return nil, nil, err
	}
	cleanup := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Stop(sctx, "immediate")
		removeDir()
	}
	return srv, cleanup, nil
}

// tbWriter turns progress lines into test log lines.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log("server: " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StartServer starts a managed PostgreSQL server for one test in a fresh temp
// dir on a free port, with TestConfig. tb.Cleanup stops it (immediate) and
// removes the dir. opts adjust the options before the start.
func StartServer(tb testing.TB, opts ...func(*server.Options)) *server.Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, cleanup, err := start(ctx, tbWriter{tb}, opts...)
	if err != nil {
		if u, ok := err.(unavailableError); ok {
			skipOrFail(tb, u.Error())
		}
		tb.Fatalf("starting PostgreSQL: %s", describe(err))
	}
	srv.SetLog(nil) // the test may outlive tb's logging in cleanups
	tb.Cleanup(cleanup)
	return srv
}

// Connect opens a superuser connection to srv's postgres database, closed at cleanup.
func Connect(tb testing.TB, srv *server.Server) *pgx.Conn {
	tb.Helper()
	return ConnectDB(tb, srv, "postgres")
}

// ConnectDB opens a superuser connection to a database, closed at cleanup.
func ConnectDB(tb testing.TB, srv *server.Server, dbname string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := srv.ConnectDB(ctx, dbname)
	if err != nil {
		tb.Fatalf("connecting to %s: %s", dbname, describe(err))
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// CreateDB creates a new, uniquely named database on srv, dropped at cleanup,
// so tests sharing a server do not see each other's tables. It returns the
// database name; srv.DSNFor(name) connects to it.
func CreateDB(tb testing.TB, srv *server.Server) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := srv.Connect(ctx)
	if err != nil {
		tb.Fatalf("connecting: %s", describe(err))
	}
	defer conn.Close(ctx)
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		tb.Fatal(err)
	}
	name := fmt.Sprintf("t_%d_%x", os.Getpid(), suffix)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("creating database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := srv.Connect(ctx)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return name
}

// Shared is one server shared by all tests of a package. Declare it as a
// package variable of the test package, call Run from TestMain and Server
// from the tests; the server starts on the first Server call.
type Shared struct {
	// Options adjusts the server options before the start (optional).
	Options func(*server.Options)

	once    sync.Once
	srv     *server.Server
	err     error
	cleanup func()
}

// Run runs the tests and then stops the shared server if one was started.
// Use it as os.Exit(shared.Run(m)).
func (p *Shared) Run(m *testing.M) int {
	code := m.Run()
	if p.cleanup != nil {
		p.cleanup()
	}
	return code
}

// Server returns the shared server, starting it on first use. Tests are
// skipped (or fail under CI) when PostgreSQL is not available.
func (p *Shared) Server(tb testing.TB) *server.Server {
	tb.Helper()
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var opts []func(*server.Options)
		if p.Options != nil {
			opts = append(opts, p.Options)
		}
		p.srv, p.cleanup, p.err = start(ctx, nil, opts...)
	})
	if p.err != nil {
		if u, ok := p.err.(unavailableError); ok {
			skipOrFail(tb, u.Error())
		}
		tb.Fatalf("starting the shared PostgreSQL: %s", describe(p.err))
	}
	return p.srv
}

// RequirePostgres skips the test (or fails it under CI) unless this machine
// can run a managed PostgreSQL server, and returns the binaries found.
func RequirePostgres(tb testing.TB) server.Binaries {
	tb.Helper()
	b, err := server.CheckEnvironment(os.Getenv("TUNEBENCH_TEST_PG_BIN"), os.Getenv("TUNEBENCH_TEST_RUN_AS"))
	if err != nil {
		skipOrFail(tb, describe(err))
	}
	return b
}

// Pgbench is the path of the pgbench next to the server's binaries, for
// tests that compare with it; without it the test is skipped (or fails
// under CI: make test installs it with the server).
func Pgbench(tb testing.TB, b server.Binaries) string {
	tb.Helper()
	bin := b.Path("pgbench")
	if _, err := os.Stat(bin); err != nil {
		if InCI() {
			tb.Fatalf("pgbench is required in CI (CI=%s): not found next to the server (%s)", os.Getenv("CI"), bin)
		}
		tb.Skipf("skipping: pgbench not found next to the server (%s)", bin)
	}
	return bin
}
