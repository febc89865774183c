package testutil_test

import (
	"context"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// A table just inserted into has its hint bits set by its first scan,
// which ScanDirtied sees; the second scan dirties nothing.
func TestScanDirtied(t *testing.T) {
	srv := shared.Server(t)
	conn := testutil.ConnectDB(t, srv, testutil.CreateDB(t, srv))
	ctx := context.Background()
	for _, s := range []string{
		"set synchronous_commit = on", // hint bits wait for the commit's flush
		"create table t (a int, b text)",
		"insert into t select g, repeat('x', 100) from generate_series(1, 20000) g",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if n, plan := testutil.ScanDirtied(ctx, t, conn, "t"); n == 0 {
		t.Errorf("the first scan dirtied no page:\n%s", plan)
	}
	if n, plan := testutil.ScanDirtied(ctx, t, conn, "t"); n != 0 {
		t.Errorf("the second scan dirtied %d pages:\n%s", n, plan)
	}
}
