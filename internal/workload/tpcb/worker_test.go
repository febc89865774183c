//go:build linux

package tpcb

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	pgt "github.com/tunebench/tunebench/internal/target/pg"

	"github.com/jackc/pgx/v5"
	pgdrv "github.com/tunebench/tunebench/internal/driver/pg"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/gen"
	"golang.org/x/sys/unix"
)

// directDB loads scale 1 into a fresh database and returns a connector for
// direct (blocking I/O) connections to it, as the CLI's workers use.
func directDB(t *testing.T) (Connector, func(string) int64) {
	t.Helper()
	srv := pg.Server(t)
	connect, conn := testDB(t)
	if _, err := Load(ctxT(t, time.Minute), connect, LoadOptions{Scale: 1, Workers: 1}, nil); err != nil {
		t.Fatal(err)
	}
	tg, err := pgdrv.ParseTarget(srv.DSNFor(conn.Config().Database), "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	return tg.Connect, func(sql string) int64 { return queryInt(t, conn, sql) }
}

func newTestWorker(t *testing.T, connect Connector, script string, pipeline bool, id int) *Worker {
	t.Helper()
	o := RunOptions{Script: script, Scale: 1, Dist: gen.Dist{Kind: gen.Uniform}, MaxTries: 1, Pipeline: pipeline, Seed: 1}
	w, err := NewWorker(ctxT(t, 30*time.Second), pgt.Sessions{Connect: pgt.Connector(connect)}, o, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// TestStepAllocations: a transaction allocates nothing once the worker is
// warm, in every script and with the pipeline, stepped whole or in pieces.
func TestStepAllocations(t *testing.T) {
	connect, _ := directDB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		script   string
		pipeline bool
	}{{ScriptTPCB, false}, {ScriptSelectOnly, false}, {ScriptSimpleUpdate, false}, {ScriptTPCB, true}} {
		w := newTestWorker(t, connect, tc.script, tc.pipeline, 0)
		step := func() {
			if o, err := w.Step(ctx); err != nil || o.Class != workload.ClassOK {
				t.Fatalf("%s: %+v %v", tc.script, o, err)
			}
		}
		for i := 0; i < 20; i++ {
			step()
		}
		if a := testing.AllocsPerRun(500, step); a != 0 {
			t.Errorf("%s pipeline=%v: %.2f allocations per transaction, want 0", tc.script, tc.pipeline, a)
		}
	}
}

// shared reports whether the worker's session is driven with others.
func shared(w *Worker) bool {
	m, ok := w.sess.(interface{ Multiplexed() bool })
	return ok && m.Multiplexed()
}

// TestMultiplexedSteps drives two workers in pieces from one goroutine, as
// the executor's multiplexed loop does: Begin both, then Continue whichever
// connection poll(2) says is readable. Every transaction commits and the
// history grows by exactly their number.
func TestMultiplexedSteps(t *testing.T) {
	connect, q := directDB(t)
	ws := []*Worker{newTestWorker(t, connect, ScriptTPCB, false, 0), newTestWorker(t, connect, ScriptTPCB, false, 1)}
	for _, w := range ws {
		if !w.Multiplex(true) || !shared(w) || w.Fd() < 0 {
			t.Fatalf("a direct worker refused multiplexing (shared %v fd %d)", shared(w), w.Fd())
		}
	}
	ctx := context.Background()
	before := q("select count(*) from pgbench_history")
	const perWorker = 200
	done := make([]int, len(ws))
	pending := make([]bool, len(ws))
	for {
		for i, w := range ws {
			if !pending[i] && done[i] < perWorker {
				o, p, err := w.Begin(ctx)
				if err != nil || (!p && o.Class != workload.ClassOK) {
					t.Fatalf("begin: %+v %v", o, err)
				}
				pending[i] = p
				if !p {
					done[i]++
				}
			}
		}
		var fds []unix.PollFd
		var idx []int
		for i, w := range ws {
			if pending[i] {
				fds = append(fds, unix.PollFd{Fd: int32(w.Fd()), Events: unix.POLLIN})
				idx = append(idx, i)
			}
		}
		if len(fds) == 0 {
			break
		}
		if _, err := unix.Poll(fds, 5000); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		for k, f := range fds {
			if f.Revents == 0 {
				continue
			}
			i := idx[k]
			o, p, err := ws[i].Continue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !p {
				if o.Class != workload.ClassOK {
					t.Fatalf("worker %d: %+v", i, o)
				}
				pending[i] = false
				done[i]++
			}
		}
	}
	if grown := q("select count(*) from pgbench_history") - before; grown != 2*perWorker {
		t.Errorf("history grew by %d, want %d", grown, 2*perWorker)
	}
	if q("select sum(abalance) from pgbench_accounts") != q("select sum(delta) from pgbench_history") {
		t.Error("balances do not match the history")
	}
	// Switched back, the worker steps on its own again.
	if !ws[0].Multiplex(false) || shared(ws[0]) {
		t.Error("Multiplex(false)")
	}
	if o, err := ws[0].Step(ctx); err != nil || o.Class != workload.ClassOK {
		t.Errorf("step after Multiplex(false): %+v %v", o, err)
	}
}

// TestReadInfoStaleMeta: when the tables are replaced after a tunebench load
// (pgbench -i drops and recreates them, leaving tunebench's meta table), the
// meta table no longer describes them: the scale comes from the tables and
// the history check skips the stale last-run record.
func TestReadInfoStaleMeta(t *testing.T) {
	connect, conn := testDB(t)
	ctx := ctxT(t, time.Minute)
	if _, err := Load(ctx, connect, LoadOptions{Scale: 2, Workers: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if info, err := ReadInfo(ctx, conn); err != nil || info.LoadedBy != "tunebench" || info.Scale != 2 {
		t.Fatalf("fresh load: %+v %v", info, err)
	}
	if err := RecordRun(ctx, conn, &RunRecord{HistoryBefore: 0, Committed: 10}); err != nil {
		t.Fatal(err)
	}
	// What pgbench -i -s 2 does to the accounts: a new table.
	exec(t, conn, "create table acc2 (like pgbench_accounts including all)")
	exec(t, conn, "insert into acc2 select * from pgbench_accounts")
	exec(t, conn, "drop table pgbench_accounts")
	exec(t, conn, "alter table acc2 rename to pgbench_accounts")
	info, err := ReadInfo(ctx, conn)
	if err != nil || info.LoadedBy != "pgbench" || info.Scale != 2 {
		t.Errorf("replaced accounts table: %+v %v; want scale 2 loaded by pgbench", info, err)
	}
	rep, err := Check(ctx, conn)
	if err != nil || !rep.Passed || !rep.Conditions[1].Skipped {
		t.Errorf("check with a stale meta table: %+v %v; want the history growth skipped", rep, err)
	}
	// A different scale (pgbench -i -s 1): caught by the branch count too.
	exec(t, conn, "delete from pgbench_branches where bid = 2")
	if info, err := ReadInfo(ctx, conn); err != nil || info.LoadedBy != "pgbench" || info.Scale != 1 {
		t.Errorf("scale changed: %+v %v", info, err)
	}
}

// slowWrites is a connection whose next *slow writes return 40 ms after
// the data went out (as when the writing thread loses its CPU): longer than
// pgconn's slow-write timer (15 ms), which then starts its background
// reader during a Prepare; the reply arrives while the write has not
// returned yet.
type slowWrites struct {
	net.Conn
	slow *atomic.Int32
}

func (c slowWrites) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.slow.Add(-1) >= 0 {
		time.Sleep(40 * time.Millisecond)
	}
	return n, err
}

// TestReconnectAfterSlowPrepare: a worker reads its replies itself, so
// pgconn must not be left reading the connection after the prepares (its
// background reader, started by a slow write, took the first reply and the
// step then waited forever).
func TestReconnectAfterSlowPrepare(t *testing.T) {
	srv := pg.Server(t)
	_, conn := testDB(t)
	if _, err := Load(ctxT(t, time.Minute), func(ctx context.Context) (*pgx.Conn, error) {
		return srv.ConnectDB(ctx, conn.Config().Database)
	}, LoadOptions{Scale: 1, Workers: 1}, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(srv.DSNFor(conn.Config().Database))
	if err != nil {
		t.Fatal(err)
	}
	var slow atomic.Int32
	dial := &net.Dialer{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return slowWrites{c, &slow}, nil
	}
	connect := func(ctx context.Context) (*pgx.Conn, error) {
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			slow.Store(1) // the prepare is slow
		}
		return c, err
	}
	for i := 0; i < 5; i++ {
		slow.Store(0)
		w := newTestWorker(t, connect, ScriptSelectOnly, false, i)
		// One context for the worker's steps, as the executor's.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for j := 0; j < 3; j++ {
			o, err := w.Step(ctx)
			if err != nil || o.Class != workload.ClassOK {
				t.Fatalf("worker %d step %d: %+v %v", i, j, o, err)
			}
		}
	}
}
