package pg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/testutil"
)

// seq is a RowSource of n (id, name) rows.
type seq struct {
	i, n int
	vals []any
}

func (s *seq) Next() bool             { s.i++; return s.i <= s.n }
func (s *seq) Values() ([]any, error) { s.vals = append(s.vals[:0], s.i, "r"); return s.vals, nil }
func (s *seq) Err() error             { return nil }

// TestAdmin: PostgreSQL's admin connection (target.Admin): a bulk load by
// COPY, queries, a snapshot transaction rolled back on error, and the
// database's transaction counter growing with another session's commits.
func TestAdmin(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := Driver{}.Open(ctx, target.Spec{DSN: srv.DSN(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	a, err := tg.(target.Admins).Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Exec(ctx, "create table adm (id int primary key, name text)"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.BulkLoad(ctx, "adm", []string{"id", "name"}, &seq{n: 100}); err != nil || n != 100 {
		t.Fatalf("bulk load %d %v", n, err)
	}
	var sum int64
	if err := a.QueryRow(ctx, "select sum(id) from adm").Scan(&sum); err != nil || sum != 5050 {
		t.Errorf("sum %d %v", sum, err)
	}
	if err := a.QueryRow(ctx, "select id from adm where id < 0").Scan(&sum); !errors.Is(err, target.ErrNoRows) {
		t.Errorf("no rows: %v", err)
	}
	boom := errors.New("boom")
	err = a.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
		if _, err := tx.Exec(ctx, "delete from adm"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("tx: %v", err)
	}
	before, err := a.Transactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tg.(target.Admins).Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := b.Exec(ctx, "update adm set name = 'x' where id = 1"); err != nil {
			t.Fatal(err)
		}
	}
	b.Close() // a session reports its counts when it ends
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := a.Transactions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions grew by %d, want 5 or more", after-before)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
