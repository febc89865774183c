//go:build linux

package pg

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

var shared testutil.Shared

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

func target(t *testing.T, srv *server.Server) *Target {
	t.Helper()
	tg, err := ParseTarget(srv.DSN(), "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func connect(t *testing.T, tg *Target) *pgx.Conn {
	t.Helper()
	conn, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if !netio.IsDirect(conn.PgConn().Conn()) {
		t.Fatalf("Connect gave a %T, want *directConn", conn.PgConn().Conn())
	}
	return conn
}

func TestDirectPgQueries(t *testing.T) {
	conn := connect(t, target(t, shared.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A large result (many reads) and a large parameter (a write bigger than
	// the socket buffers, which starts pgconn's background reader).
	var n, l int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM generate_series(1, 200000) g, LATERAL (SELECT g::text) s").Scan(&n); err != nil || n != 200000 {
		t.Fatalf("count: %d %v", n, err)
	}
	rows, err := conn.Query(ctx, "SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g")
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 50000 {
		t.Fatalf("rows %d %v", n, rows.Err())
	}
	big := strings.Repeat("y", 16<<20)
	if err := conn.QueryRow(ctx, "SELECT length($1::text)", big).Scan(&l); err != nil || l != int64(len(big)) {
		t.Fatalf("length: %d %v", l, err)
	}

	// Batch (pipelined) and COPY (concurrent read and write goroutines).
	b := &pgx.Batch{}
	for i := 0; i < 100; i++ {
		b.Queue("SELECT $1::int", i)
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE t (a int, b text)"); err != nil {
		t.Fatal(err)
	}
	src := make([][]any, 100000)
	for i := range src {
		src[i] = []any{i, "row"}
	}
	if c, err := conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a", "b"}, pgx.CopyFromRows(src)); err != nil || c != int64(len(src)) {
		t.Fatalf("copy: %d %v", c, err)
	}
	// A server error keeps the connection usable.
	if _, err := conn.Exec(ctx, "SELECT 1/0"); driver.SQLState(err) != "22012" {
		t.Fatalf("got %v, want division by zero", err)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDirectPgUnixSocket(t *testing.T) {
	srv := shared.Server(t)
	dsn := strings.Replace(srv.DSN(), "host=127.0.0.1", "host="+srv.DataDir(), 1)
	tg, err := ParseTarget(dsn, "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, tg)
	if n := conn.PgConn().Conn().RemoteAddr().Network(); n != "unix" {
		t.Fatalf("network %q", n)
	}
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("%d %v", one, err)
	}
}

func TestDirectPgCancel(t *testing.T) {
	conn := connect(t, target(t, shared.Server(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := conn.Exec(ctx, "SELECT pg_sleep(10)")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled query returned after %s", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if !conn.IsClosed() {
		t.Fatal("pgconn keeps an interrupted connection open")
	}

	// A cancelled context during a plain cancel (no deadline).
	conn2 := connect(t, target(t, shared.Server(t)))
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	start = time.Now()
	_, err = conn2.Exec(ctx2, "SELECT pg_sleep(10)")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled query returned after %s", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestDirectPgDeadlineWatch is the tpcb worker's cancellation scheme:
// statements run with context.Background() and a context.AfterFunc sets a
// deadline in the past on the socket.
func TestDirectPgDeadlineWatch(t *testing.T) {
	conn := connect(t, target(t, shared.Server(t)))
	ctx, cancel := context.WithCancel(context.Background())
	nc := conn.PgConn().Conn()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := conn.PgConn().Exec(context.Background(), "SELECT pg_sleep(10)").ReadAll()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("interrupted query returned after %s", d)
	}
	if err == nil || !driver.IsConnError(err) {
		t.Fatalf("got %v, want a connection error", err)
	}
	if !conn.IsClosed() {
		t.Fatal("connection still open")
	}
}

func TestDirectPgServerRestart(t *testing.T) {
	srv := testutil.StartServer(t)
	tg := target(t, srv)
	conn := connect(t, tg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, "SELECT 1")
	if err == nil || !driver.IsConnError(err) && !conn.IsClosed() {
		t.Fatalf("query on a connection the server closed: %v", err)
	}
	conn2 := connect(t, tg)
	var one int
	if err := conn2.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after restart: %d %v", one, err)
	}
}

func TestDirectPgConnectRefused(t *testing.T) {
	tg, err := ParseTarget("host=127.0.0.1 port=1 user=u dbname=d sslmode=disable", "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tg.Connect(context.Background()); err == nil {
		t.Fatal("connected to port 1")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refused connection took %s", d)
	}
}

func TestDirectPgNoLeaks(t *testing.T) {
	tg := target(t, shared.Server(t))
	open := func() {
		conn, err := tg.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(context.Background())
	}
	open() // first use: pools and lazily started runtime goroutines
	fds0, g0 := openFDs(t), runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		open()
		// Interrupted connections are closed asynchronously by pgconn.
		conn, err := tg.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, _ = conn.Exec(ctx, "SELECT pg_sleep(1)")
		cancel()
		<-conn.PgConn().CleanupDone()
	}
	waitFor(t, func() bool { return openFDs(t) <= fds0 && runtime.NumGoroutine() <= g0 }, func() string {
		return fmt.Sprintf("leak: fds %d -> %d, goroutines %d -> %d", fds0, openFDs(t), g0, runtime.NumGoroutine())
	})
}

func TestConnectStdIsNetpoll(t *testing.T) {
	tg := target(t, shared.Server(t))
	conn, err := tg.ConnectStd(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if netio.IsDirect(conn.PgConn().Conn()) {
		t.Fatal("ConnectStd gave a directConn")
	}
	tg.NetpollIO = true
	conn2, err := tg.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(context.Background())
	if netio.IsDirect(conn2.PgConn().Conn()) {
		t.Fatal("NetpollIO ignored")
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// waitFor polls cond for up to 5 s (goroutines and descriptors are released
// asynchronously), then fails with msg().
func waitFor(t *testing.T, cond func() bool, msg func() string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(msg())
}

// TestIncomingCPU: over loopback TCP the CPU that received the peer's last
// write is the CPU the peer wrote from; it is -1 for other connections.

// startingProxy listens on loopback and answers the first refuse
// connections as a server starting up does (FATAL 57P03), then forwards
// the others to srv.
func startingProxy(t *testing.T, srv *server.Server, refuse int) (port int, tried func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if int(n.Add(1)) <= refuse {
				go func() {
					defer c.Close()
					var hdr [4]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:]))-4); err != nil {
						return
					}
					msg, _ := (&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P03", Message: "the database system is starting up"}).Encode(nil)
					_, _ = c.Write(msg)
				}()
				continue
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.Port()))
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() int { return int(n.Load()) }
}

// TestWaitForStartingServer: a server that refuses connections while it
// starts up (57P03) is waited for, and the wait is said; one that stays so
// beyond the wait gives an error that says so and what to do; a worker's
// session does not wait (its failed attempts make the run's outage).
func TestWaitForStartingServer(t *testing.T) {
	defer func(p, s time.Duration) { startupPoll, startupSay = p, s }(startupPoll, startupSay)
	startupPoll, startupSay = 50*time.Millisecond, 200*time.Millisecond
	srv := testutil.StartServer(t)
	ctx := context.Background()
	at := func(port int, wait time.Duration, log io.Writer) *Target {
		tg, err := ParseTarget(strings.Replace(srv.DSN(), fmt.Sprintf("port=%d", srv.Port()), fmt.Sprintf("port=%d", port), 1), "", redact.New())
		if err != nil {
			t.Fatal(err)
		}
		tg.StartupWait, tg.Log = wait, log
		return tg
	}

	port, tried := startingProxy(t, srv, 10)
	var said strings.Builder
	conn, err := at(port, 30*time.Second, &said).ConnectStd(ctx)
	if err != nil {
		t.Fatalf("a server that starts up: %v", err)
	}
	conn.Close(ctx)
	if tried() != 11 || !strings.Contains(said.String(), "waiting for the server at postgres@127.0.0.1:") || !strings.Contains(said.String(), "the database system is starting up (0s so far, at most 30s)") {
		t.Errorf("%d attempts; said %q", tried(), said.String())
	}

	port, _ = startingProxy(t, srv, 1000)
	_, err = at(port, 500*time.Millisecond, nil).Connect(ctx)
	if errs.KindOf(err) != errs.KindConnect || !strings.Contains(err.Error(), "still not accepting connections after") ||
		!strings.Contains(errs.HintOf(err), "starting up, recovering from a crash") || !driver.IsConnError(err) {
		t.Errorf("a server that stays starting up: %v (fix: %s)", err, errs.HintOf(err))
	}

	// Interrupted while it waits: an interrupt, not a connection error.
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := at(port, 30*time.Second, nil).ConnectStd(ictx); errs.KindOf(err) != errs.KindInterrupted {
		t.Errorf("interrupted while waiting: %v (kind %v)", err, errs.KindOf(err))
	}

	port, tried = startingProxy(t, srv, 1000)
	t0 := time.Now()
	if _, err := at(port, 30*time.Second, nil).ConnectNoWait(ctx); err == nil || tried() != 1 || time.Since(t0) > 5*time.Second {
		t.Errorf("a worker's connection waited: %v, %d attempts in %s", err, tried(), time.Since(t0))
	}
}
