package tpch

import (
	"os"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// pg is the one PostgreSQL server of this package's integration tests; each
// test loads into its own database (testutil.CreateDB).
var pg testutil.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
