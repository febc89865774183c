package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// Oracle returns the directory of the TPC-H test oracle (a Python virtual
// environment with tpchgen-cli and DuckDB that scripts/tpch-oracle.sh
// makes): $TUNEBENCH_ORACLE, else .oracle in the repository. When its
// tpchgen-cli is missing the test is skipped, or fails under
// TUNEBENCH_REQUIRE_ORACLE=1 (CI sets it, so the oracle tests always run
// there).
func Oracle(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("TUNEBENCH_ORACLE")
	if dir == "" {
		dir = filepath.Join(RepoRoot(tb), ".oracle")
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "tpchgen-cli")); err != nil {
		msg := "no TPC-H oracle at " + dir + " (scripts/tpch-oracle.sh makes it)"
		if os.Getenv("TUNEBENCH_REQUIRE_ORACLE") == "1" {
			tb.Fatal(msg + "; TUNEBENCH_REQUIRE_ORACLE=1")
		}
		tb.Skip(msg)
	}
	return dir
}

// RepoRoot is the directory holding go.mod, above the test's directory.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("no go.mod above the test directory")
		}
		dir = up
	}
}
