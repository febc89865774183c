package tpcc

import (
	"os"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// pg is the one PostgreSQL server of this package's integration tests. Tests
// get a loaded database with loadedDB (a template copy of a load made once per
// test binary) or an empty one with testutil.CreateDB(t, pg.Server(t)).
var pg testutil.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }
