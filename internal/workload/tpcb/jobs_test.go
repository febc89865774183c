package tpcb

import (
	"context"
	"os"
	oexec "os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/testutil"
)

// tableDigests are an md5 of each pgbench table's rows in key order.
func tableDigests(ctx context.Context, t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	out := map[string]string{}
	for table, key := range map[string]string{"pgbench_branches": "bid", "pgbench_tellers": "tid", "pgbench_accounts": "aid", "pgbench_history": "aid, tid, mtime"} {
		var d string
		if err := conn.QueryRow(ctx, "select coalesce(md5(string_agg(t::text, E'\\n' order by "+key+")), '') from "+table+" t").Scan(&d); err != nil {
			t.Fatal(err)
		}
		out[table] = d
	}
	return out
}

// At 1 and 3 jobs the tables hold what pgbench -i writes, row for row
// (pgbench itself loads the reference); the first scan of a table dirties
// no page and every page is all-visible after the load.
func TestJobsLoadPgbenchData(t *testing.T) {
	t.Parallel()
	srv := pg.Server(t)
	ref := testutil.CreateDB(t, srv)
	cmd := oexec.Command(testutil.Pgbench(t, srv.Binaries()), "-i", "-q", "-s", "3", ref)
	cmd.Env = append(os.Environ(), srv.Env()...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, b)
	}
	ctx := ctxT(t, 3*time.Minute)
	want := tableDigests(ctx, t, testutil.ConnectDB(t, srv, ref))
	for _, jobs := range []int{1, 3} {
		db := testutil.CreateDB(t, srv)
		conn := testutil.ConnectDB(t, srv, db)
		connect := func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, db) }
		if _, err := Load(ctx, connect, LoadOptions{Scale: 3, Workers: jobs}, nil); err != nil {
			t.Fatal(err)
		}
		for table, d := range tableDigests(ctx, t, conn) {
			if d != want[table] {
				t.Errorf("jobs %d: %s differs from pgbench -i's", jobs, table)
			}
		}
		for _, table := range tableNames {
			if n, plan := testutil.ScanDirtied(ctx, t, conn, table); n > 0 {
				t.Errorf("jobs %d: the first scan of %s dirtied %d pages:\n%s", jobs, table, n, plan)
			}
		}
		// All-visible, up to the empty pages that parts copying side by
		// side leave where PostgreSQL extended the table for the backends
		// waiting on its extension lock (20 pages each in PostgreSQL 15),
		// which VACUUM does not mark: 16 pages or 5%, as tpch's test.
		var notVisible []string
		if err := conn.QueryRow(ctx, `select coalesce(array_agg(relname::text || ' ' || relallvisible || '/' || relpages), '{}') from pg_class
			where relname = any($1) and relkind = 'r' and relallvisible < relpages - greatest(16, relpages / 20)`, tableNames).Scan(&notVisible); err != nil || len(notVisible) > 0 {
			t.Errorf("jobs %d: pages not all-visible after the load: %v (%v)", jobs, notVisible, err)
		}
	}
}
