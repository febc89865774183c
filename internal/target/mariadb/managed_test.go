package mariadb

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// needMariaDB fails under CI (make test installs mariadb-server) and skips
// elsewhere when mariadbd is missing.
func needMariaDB(t *testing.T) {
	t.Helper()
	if _, err := binaries(""); err != nil {
		if testutil.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// serverDir is a directory the server's OS user can reach.
func serverDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tunebench-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "srv")
}

// TestManagedLifecycle: a new server is made and started on a free
// loopback port, takes tunebench's user with its password (and no root
// over TCP), keeps its data and port over a stop and a start, and stops.
func TestManagedLifecycle(t *testing.T) {
	needMariaDB(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := serverDir(t)
	t0 := time.Now()
	s, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	t.Logf("made and started in %s: %s on port %d", time.Since(t0).Round(time.Millisecond), s.Version(), s.Port())
	if !strings.Contains(s.Version(), "MariaDB") {
		t.Errorf("version %q", s.Version())
	}
	db, err := s.Open("")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE DATABASE tb_check", "CREATE TABLE tb_check.t (n int) ENGINE=InnoDB", "INSERT INTO tb_check.t VALUES (42)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	if fi, err := os.Stat(filepath.Join(dir, passFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("password file %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, optionFile)); strings.Contains(string(b), s.password) {
		t.Errorf("the password is in the server's option file")
	}
	// Only tunebench's user logs in over TCP: no passwordless root (nor
	// any other account mariadb-install-db made).
	for _, u := range []string{"root", ""} {
		if out, err := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", strconv.Itoa(s.Port()), "-u", u, "-e", "SELECT 1").CombinedOutput(); err == nil {
			t.Errorf("user %q logs in over TCP without a password: %s", u, out)
		}
	}
	// The server's own files are its user's; the directory and its option
	// files stay tunebench's.
	if fi, err := os.Stat(dir); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Errorf("the server directory's owner changed: %v", err)
	}
	// The mariadb client takes the client option file.
	if out, err := exec.CommandContext(ctx, "mariadb", "--defaults-extra-file="+s.ClientFile(), "-N", "-e", "SELECT n FROM tb_check.t").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Errorf("mariadb client: %v %s", err, out)
	}

	port := s.Port()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s.running() {
		t.Fatal("still running after Stop")
	}
	t0 = time.Now()
	s2, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started again in %s", time.Since(t0).Round(time.Millisecond))
	if s2.Port() != port {
		t.Errorf("port %d, was %d", s2.Port(), port)
	}
	db, err = s2.Open("tb_check")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT n FROM t").Scan(&n); err != nil || n != 42 {
		t.Errorf("after a restart: %d %v", n, err)
	}
	// A second Start attaches to the running server.
	if s3, err := Start(ctx, Options{Dir: dir}); err != nil || s3.Port() != port {
		t.Errorf("attach: %v", err)
	}
	if err := s2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
