package tpcc

import (
	"context"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
)

// TestMariaDBLoadResume: a MariaDB load interrupted after its first chunk
// is marked incomplete and refused by a run, and --resume loads only the
// chunks left: the database then holds exactly the rows of a whole load
// and passes the conditions that hold right after one (all twelve).
func TestMariaDBLoadResume(t *testing.T) {
	t.Parallel()
	tt, _ := mariadbtest.StartMariaDB(t)
	admins := tt.(target.Admins)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	lctx, stop := context.WithCancel(ctx)
	o := LoadOptions{Warehouses: 1, Workers: 1, Seed: 42}
	o.afterTask = func(kind, table string) {
		if kind == "data" {
			stop()
		}
	}
	if _, err := loadMariaDB(lctx, admins, o, nil); err == nil {
		t.Fatal("the interrupted load returned no error")
	}
	sd, err := openSide(ctx, tt, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sd.close()
	if _, err := sd.info(ctx); err == nil {
		t.Fatal("an interrupted load is usable")
	}
	st, err := loadMariaDB(ctx, admins, LoadOptions{Resume: true, Workers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || st.Skipped != 1 || st.Chunks == 0 {
		t.Errorf("resume: %+v", st)
	}
	info, err := sd.info(ctx)
	if err != nil || info.Warehouses != 1 || info.Seed != 42 {
		t.Fatalf("after the resume: %+v, %v", info, err)
	}
	for _, tb := range Tables {
		var n int64
		a := sd.(*mariaSide).a
		if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM "+tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := chunkRows(tb, 42, 1, 1); tb != "item" && n != want {
			t.Errorf("%s: %d rows, want %d", tb, n, want)
		}
	}
	rep, err := sd.check(ctx, CheckOptions{All: true})
	if err != nil || !rep.Passed || len(rep.Conditions) != 12 {
		t.Errorf("check after the resume: %+v, %v", rep, err)
	}
	// The conditions do catch a broken database.
	if _, err := sd.(*mariaSide).a.Exec(ctx, "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3"); err != nil {
		t.Fatal(err)
	}
	rep, err = sd.check(ctx, CheckOptions{})
	if err != nil || rep.Passed || len(rep.Failed()) != 2 || rep.Failed()[0] != 1 || rep.Failed()[1] != 9 {
		t.Errorf("after a change of one district's D_YTD conditions 1 and 9 fail: %v, %v", rep.Failed(), err)
	}
}
