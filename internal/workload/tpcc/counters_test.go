package tpcc

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/testutil"
)

// TestCountersIgnoreOtherDatabases: dropping another database between the
// window's edges must not take its transactions out of TPM's count (summed
// over every database, as HammerDB does, the count went down and a CI run
// reported TPM below NOPM while parallel tests dropped their databases).
func TestCountersIgnoreOtherDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pg.Server(t)
	db := loadedDB(t, 1)
	conn := testConn(t, db)

	other := testutil.CreateDB(t, srv)
	oc := testutil.ConnectDB(t, srv, other)
	for range 200 {
		if _, err := oc.Exec(ctx, "select 1"); err != nil {
			t.Fatal(err)
		}
	}
	// A backend publishes its statistics when it exits.
	if err := oc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var published int64
	deadline := time.Now().Add(30 * time.Second)
	for published < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("%s's 200 transactions not in pg_stat_database after 30 s (%d)", other, published)
		}
		if _, err := conn.Exec(ctx, "select pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "select xact_commit from pg_stat_database where datname = $1", other).Scan(&published); err != nil {
			t.Fatal(err)
		}
	}

	before := readCounters(ctx, conn)
	if before.err != nil {
		t.Fatal(before.err)
	}
	admin := testutil.Connect(t, srv)
	if _, err := admin.Exec(ctx, "drop database "+pgx.Identifier{other}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	after := readCounters(ctx, conn)
	if after.err != nil {
		t.Fatal(after.err)
	}
	if d := after.xacts - before.xacts; d < 0 || d > 10 {
		t.Errorf("transactions of %s across another database's drop: %d -> %d (%+d); want a small growth (this connection's own)", db, before.xacts, after.xacts, d)
	}
}
