package pg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
