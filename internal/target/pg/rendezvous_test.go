package pg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestJoinWithoutCreate: a role without CREATE on the schema joins a
// rendezvous whose table was made for it (docs/scale-out.md says so);
// without the table, it is told what to grant.
func TestJoinWithoutCreate(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := testutil.Connect(t, srv)
	for _, q := range []string{
		"CREATE ROLE shard LOGIN PASSWORD 'shard-pw'",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pass := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pass, []byte(fmt.Sprintf("127.0.0.1:%d:postgres:shard:shard-pw\n", srv.Port())), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *Target {
		t.Helper()
		tg, err := Driver{}.Open(ctx, target.Spec{DSN: fmt.Sprintf("host=127.0.0.1 port=%d dbname=postgres user=shard sslmode=disable passfile=%s", srv.Port(), pass)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tg.Close(context.Background()) })
		return tg.(*Target)
	}
	if _, err := open().Join(ctx, "k0", 0, 1, nil); err == nil {
		t.Fatal("a role without CREATE made the rendezvous table")
	}
	if _, err := admin.Exec(ctx, "CREATE TABLE "+rendezvousTable+" (key text NOT NULL, shard int NOT NULL, shards int NOT NULL, joined timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (key, shard))"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "GRANT SELECT, INSERT, UPDATE ON "+rendezvousTable+" TO shard"); err != nil {
		t.Fatal(err)
	}
	if _, err := open().Join(ctx, "k1", 0, 1, nil); err != nil {
		t.Errorf("a role given the table could not join: %v", err)
	}
}

// TestJoinTimeoutInQuery: the wait's deadline falling inside its count of
// the joined shards (the table locked meanwhile) still says which shards
// are missing, as a deadline between two counts does.
func TestJoinTimeoutInQuery(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := Driver{}.Open(ctx, target.Spec{DSN: srv.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	locker := testutil.Connect(t, srv)
	joined := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		jctx, jcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer jcancel()
		_, err := tg.(*Target).Join(jctx, "slow", 0, 3, func(int) {
			select {
			case <-joined:
			default:
				close(joined)
			}
		})
		done <- err
	}()
	<-joined
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE "+rendezvousTable+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// The lock goes after the deadline: the count it blocked has failed,
	// and the report of the missing shards can read the table.
	time.Sleep(2 * time.Second)
	tx.Rollback(ctx)
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "missing [1 2]") {
		t.Errorf("the wait timed out in its count: %v", err)
	}
}
