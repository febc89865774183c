package tpcb

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
	"github.com/tunebench/tunebench/internal/workload/gen"
)

// TestMariaDB: tpcb on a managed MariaDB: pgbench's tables loaded with
// LOAD DATA LOCAL INFILE over two jobs, a run of tpcb-like clients during
// which another transaction holds a branch past the lock wait timeout
// (1205: the worker's transaction is rolled back before anything else)
// and then makes deadlocks (1213: retried), and the check after it: the
// balances agree and the history grew by the committed transactions, so
// no transaction was half committed.
func TestMariaDB(t *testing.T) {
	t.Parallel()
	tt, _ := mariadbtest.StartMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admins := tt.(target.Admins)
	st, err := loadMariaDB(ctx, admins, LoadOptions{Scale: 2, Workers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 2*(AccountsPerScale+BranchesPerScale+TellersPerScale) {
		t.Errorf("loaded %d rows", st.Rows)
	}
	if _, err := loadMariaDB(ctx, admins, LoadOptions{Scale: 1, Workers: 1}, nil); err == nil {
		t.Error("a second load without --drop")
	}
	if _, err := loadMariaDB(ctx, admins, LoadOptions{Scale: 1, Workers: 1, Partitions: 2}, nil); err == nil {
		t.Error("partitions on MariaDB")
	}
	b, err := openBook(ctx, tt)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	info, err := b.info(ctx)
	if err != nil || info.Scale != 2 || info.LoadedBy != "tunebench" {
		t.Fatalf("info %+v %v", info, err)
	}
	before, err := b.historyCount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.recordRun(ctx, nil); err != nil {
		t.Fatal(err)
	}

	admin, err := admins.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "SET GLOBAL innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "SET GLOBAL innodb_lock_wait_timeout = DEFAULT")

	ro := RunOptions{Script: ScriptTPCB, Scale: 2, Dist: gen.Dist{}, MaxTries: 3, Seed: 7, Dialect: DialectMariaDB}
	if err := ro.Validate(); err != nil {
		t.Fatal(err)
	}
	var committed, ambiguous, lockWaits, deadlocks, retried atomic.Int64
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for id := 0; id < 4; id++ {
		w, err := NewWorker(ctx, tt.(target.Sessions), ro, id)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				o, err := w.Step(runCtx)
				if err != nil {
					t.Error(err)
					return
				}
				switch o.Class {
				case step.ClassOK, step.ClassRetriedOK:
					committed.Add(1)
				case step.ClassAmbiguousCommit:
					ambiguous.Add(1)
				}
				if o.SQLState == "1205" {
					lockWaits.Add(1)
				}
				for _, c := range o.Retried {
					if c == "1213" {
						deadlocks.Add(1)
					}
				}
				if o.Attempts > 1 {
					retried.Add(1)
				}
			}
		}()
	}
	// A transaction holds branch 1 for longer than the lock wait timeout.
	time.Sleep(300 * time.Millisecond)
	err = admin.Tx(ctx, target.TxOptions{}, func(a target.Admin) error {
		if _, err := a.Exec(ctx, "UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1"); err != nil {
			return err
		}
		time.Sleep(1500 * time.Millisecond)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deadlocks: the tellers first, then the accounts the workers hold
	// (they take an account, then a teller).
	for i := 0; i < 5 && deadlocks.Load() == 0 && ctx.Err() == nil; i++ {
		_ = admin.Tx(ctx, target.TxOptions{}, func(a target.Admin) error {
			if _, err := a.Exec(ctx, "UPDATE pgbench_tellers SET tbalance = tbalance"); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := a.Exec(ctx, "UPDATE pgbench_accounts SET abalance = abalance"); err != nil {
				return err
			}
			return context.Canceled // roll back
		})
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	wg.Wait()
	if committed.Load() == 0 || lockWaits.Load() == 0 || deadlocks.Load() == 0 {
		t.Errorf("committed %d, lock wait timeouts %d, deadlocks retried %d", committed.Load(), lockWaits.Load(), deadlocks.Load())
	}
	if err := b.recordRun(ctx, &RunRecord{HistoryBefore: before, Committed: committed.Load(), Ambiguous: ambiguous.Load()}); err != nil {
		t.Fatal(err)
	}
	rep, err := b.check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.Conditions) != 2 || rep.Conditions[1].Skipped {
		t.Errorf("check: %+v", rep)
	}
	t.Logf("committed %d, lock wait timeouts %d, deadlocks retried %d; %+v", committed.Load(), lockWaits.Load(), deadlocks.Load(), rep.Conditions)
}
