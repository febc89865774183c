package driver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// fakeConn stands for a *pgx.Conn.
type fakeConn struct{ closed bool }

func (c *fakeConn) IsClosed() bool              { return c.closed }
func (c *fakeConn) Close(context.Context) error { c.closed = true; return nil }

// TestRetryLost: a connection lost after the run is replaced; dials that
// fail (a server in crash recovery) are tried again within the budget; an
// error of the statement is returned at once; the budget bounds the tries.
func TestRetryLost(t *testing.T) {
	ctx := context.Background()
	recovering := &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}

	dead := &fakeConn{}
	conn := dead
	dials, runs := 0, 0
	dial := func(context.Context) (*fakeConn, error) {
		if dials++; dials <= 2 {
			return nil, recovering
		}
		return &fakeConn{}, nil
	}
	start := time.Now()
	err := RetryLost(ctx, &conn, dial, start, 3*time.Second, func(c *fakeConn) error {
		if runs++; c == dead {
			return errors.New("unexpected EOF")
		}
		return nil
	})
	if err != nil || dials != 3 || runs != 2 || conn == nil || conn == dead || !dead.closed {
		t.Errorf("err %v, %d dials, %d runs, conn %p (dead %p closed %v): want the third dial's connection", err, dials, runs, conn, dead, dead.closed)
	}
	if d := time.Since(start); d < RetryPause+2*RetryPause+4*RetryPause {
		t.Errorf("three dials in %v: the pauses do not double from %v", d, RetryPause)
	}

	// A statement's own error is not retried and keeps the connection.
	kept := conn
	runs = 0
	stmt := &pgconn.PgError{Code: "42P01", Message: "relation does not exist"}
	if err := RetryLost(ctx, &conn, dial, time.Now(), 3*time.Second, func(*fakeConn) error { runs++; return stmt }); !errors.Is(err, stmt) || runs != 1 || conn != kept {
		t.Errorf("statement error: %v after %d runs", err, runs)
	}

	// The budget bounds the dials (after 100 and 200 ms; 300+400 ms is over
	// 500 ms): the last failure is returned.
	conn, dials = nil, -100
	start = time.Now()
	err = RetryLost(ctx, &conn, dial, start, 500*time.Millisecond, func(*fakeConn) error { return nil })
	if !errors.Is(err, recovering) || conn != nil || dials != -100+2 || time.Since(start) > time.Second {
		t.Errorf("over budget: err %v, conn %v, %d dials in %v", err, conn, dials+100, time.Since(start))
	}
	// Nothing tried: says so.
	if err := RetryLost(ctx, &conn, dial, time.Now().Add(-time.Minute), time.Second, func(*fakeConn) error { return nil }); err == nil || !strings.Contains(err.Error(), "no connection") {
		t.Errorf("no try: %v", err)
	}
}

func TestConnLost(t *testing.T) {
	for err, want := range map[error]bool{
		errors.New("unexpected EOF"):   true,
		context.DeadlineExceeded:       true,
		&pgconn.PgError{Code: "08006"}: true,
		&pgconn.PgError{Code: "57P01"}: true,
		&pgconn.PgError{Code: "42P01"}: false,
		&pgconn.PgError{Code: "53100"}: false,
	} {
		if got := ConnLost(err); got != want {
			t.Errorf("ConnLost(%v) = %v", err, got)
		}
	}
}
