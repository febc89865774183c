package tpcb

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// TestDrawsAsPgbenchBuiltin: with the same seed, a tpcb worker draws the
// accounts, tellers, branches and deltas that this machine's pgbench
// draws in its built-in tpcb-like script (pgbench's generator, seeding and
// order): the history rows of 30 transactions of client 0 are the same.
func TestDrawsAsPgbenchBuiltin(t *testing.T) {
	t.Parallel()
	srv := pg.Server(t)
	bin := testutil.Pgbench(t, srv.Binaries())
	db := testutil.CreateDB(t, srv)
	conn := testutil.ConnectDB(t, srv, db)
	connect := func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, db) }
	ctx := ctxT(t, 2*time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 2, Workers: 1}, nil); err != nil {
		t.Fatal(err)
	}
	const seed, txs = 20261126, 30
	history := func() []string {
		rows, err := conn.Query(ctx, "SELECT concat_ws(' ', aid, tid, bid, delta) FROM pgbench_history ORDER BY ctid")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cmd := osexec.Command(bin, "-n", "-b", "tpcb-like", "-c", "1", "-t", fmt.Sprint(txs), "--random-seed", fmt.Sprint(seed), db)
	cmd.Env = append(os.Environ(), srv.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	theirs := history()
	if _, err := conn.Exec(ctx, "TRUNCATE pgbench_history"); err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Script: ScriptTPCB, Scale: 2, Dist: gen.Dist{Kind: gen.Uniform}, MaxTries: 1, Seed: seed}
	w, err := NewWorker(ctx, pgt.Sessions{Connect: pgt.Connector(connect)}, o, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for range txs {
		if out, err := w.Step(ctx); err != nil || !out.Class.Committed() {
			t.Fatalf("step: %+v %v", out, err)
		}
	}
	ours := history()
	if len(theirs) != txs || len(ours) != txs {
		t.Fatalf("history rows: pgbench %d, tunebench %d, want %d", len(theirs), len(ours), txs)
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("transaction %d (aid tid bid delta): tunebench %s, pgbench %s", i, ours[i], theirs[i])
		}
	}
}
