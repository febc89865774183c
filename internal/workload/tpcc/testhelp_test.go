package tpcc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/testutil"
)

// templates holds one loaded template database per warehouse count, made on
// first use and shared by every test of the binary.
var templates struct {
	mu   sync.Mutex
	byW  map[int]*template
	seq  int
	seqM sync.Mutex
}

type template struct {
	once sync.Once
	name string
	err  error
}

// templateSeed makes the template loads reproducible.
const templateSeed = 20240607

// loadedDB returns the name of a fresh database holding a complete tpcc load
// of the given warehouses (not partitioned), dropped at cleanup. The load is
// done once per test binary into a template database; each call copies it
// (CREATE DATABASE ... TEMPLATE ... STRATEGY FILE_COPY), so tests may change
// their copy freely. Use testConnector / testConn to connect.
func loadedDB(t testing.TB, warehouses int) string {
	t.Helper()
	srv := pg.Server(t)
	templates.mu.Lock()
	if templates.byW == nil {
		templates.byW = map[int]*template{}
	}
	tp := templates.byW[warehouses]
	if tp == nil {
		tp = &template{name: fmt.Sprintf("tpcc_template_w%d", warehouses)}
		templates.byW[warehouses] = tp
	}
	templates.mu.Unlock()

	tp.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		admin, err := srv.Connect(ctx)
		if err != nil {
			tp.err = err
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, "create database "+pgx.Identifier{tp.name}.Sanitize()); err != nil {
			tp.err = err
			return
		}
		connect := func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, tp.name) }
		_, tp.err = Load(ctx, connect, LoadOptions{Warehouses: warehouses, Workers: 2, Seed: templateSeed}, nil)
	})
	if tp.err != nil {
		t.Fatalf("loading the W=%d template: %v", warehouses, tp.err)
	}

	templates.seqM.Lock()
	templates.seq++
	name := fmt.Sprintf("%s_copy%d", tp.name, templates.seq)
	templates.seqM.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := srv.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize()+" template "+pgx.Identifier{tp.name}.Sanitize()+" strategy file_copy"); err != nil {
		t.Fatalf("copying the W=%d template: %v", warehouses, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := srv.Connect(ctx)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)")
	})
	return name
}

// testConnector connects to database db on the package's server.
func testConnector(t testing.TB, db string) Connector {
	srv := pg.Server(t)
	return func(ctx context.Context) (*pgx.Conn, error) { return srv.ConnectDB(ctx, db) }
}

// testConn opens a connection to database db, closed at cleanup.
func testConn(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	return testutil.ConnectDB(t, pg.Server(t), db)
}

// emptyDB creates an empty database, dropped at cleanup.
func emptyDB(t testing.TB) string {
	t.Helper()
	return testutil.CreateDB(t, pg.Server(t))
}
