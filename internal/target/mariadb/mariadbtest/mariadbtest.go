// Package mariadbtest starts a managed MariaDB for the tests of other
// packages (the workloads, the CLI), as testutil does PostgreSQL.
package mariadbtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb"
	"github.com/tunebench/tunebench/internal/testutil"
)

// StartMariaDB starts a managed MariaDB for a test on a free loopback
// port in a temporary directory the server's OS user can reach, and opens
// it as a target (its database mariadb.DefaultDatabase); both are stopped
// and removed when the test ends. Without mariadbd the test fails under
// CI and is skipped otherwise.
func StartMariaDB(tb testing.TB) (target.Target, *mariadb.Server) {
	tb.Helper()
	if err := (mariadb.Driver{}).ManagedSupported(); err != nil {
		if testutil.InCI() {
			tb.Fatalf("MariaDB is required in CI: %v", err)
		}
		tb.Skipf("skipping: MariaDB not available: %v", err)
	}
	d, err := os.MkdirTemp("", "tunebench-mariadb-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(d, "srv")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := mariadb.Start(ctx, mariadb.Options{Dir: dir})
	if err != nil {
		os.RemoveAll(d)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Stop(context.Background())
		os.RemoveAll(d)
	})
	t, err := mariadb.Driver{}.Open(ctx, target.Spec{ServerDir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.Close(context.Background()) })
	return t, srv
}
