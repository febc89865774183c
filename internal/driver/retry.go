package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// RetryPause is the first pause of RetryLost between two tries; it
	// doubles after each.
	RetryPause = 100 * time.Millisecond
	// AfterRunBudget bounds the retries of the reads and checks right after
	// a run (a workload's After): a server in crash recovery refuses
	// connections for a moment.
	AfterRunBudget = 3 * time.Second
)

// Conn is what RetryLost needs of a connection: a *pgx.Conn.
type Conn interface {
	comparable
	IsClosed() bool
	Close(context.Context) error
}

// RetryLost runs do on *conn and, while do fails with a lost connection
// (ConnLost) or no connection can be opened, replaces the connection with a
// new one from dial and tries again, spaced by a pause that doubles from
// RetryPause, as long as the time since from and the next pause stay within
// budget: a server restarted or in crash recovery refuses connections for a
// moment (the reads and checks right after a run). *conn is the connection
// to keep (nil when none could be opened). The error is nil when do
// succeeded, do's error at once when it is not a lost connection, else the
// last failure (do's or dial's), or that no connection was made within the
// budget when none was tried.
func RetryLost[C Conn](ctx context.Context, conn *C, dial func(context.Context) (C, error), from time.Time, budget time.Duration, do func(C) error) error {
	var zero C
	pause := RetryPause
	var err error
	for {
		if *conn != zero && !(*conn).IsClosed() {
			if err = do(*conn); err == nil || !ConnLost(err) {
				return err
			}
		}
		if *conn != zero {
			_ = (*conn).Close(context.WithoutCancel(ctx))
			*conn = zero
		}
		if time.Since(from)+pause > budget || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("no connection to the database within %v", budget)
			}
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		pause *= 2
		dctx, cancel := context.WithTimeout(ctx, max(budget-time.Since(from), 500*time.Millisecond))
		c, derr := dial(dctx)
		cancel()
		if derr != nil {
			err = derr
			continue
		}
		*conn = c
	}
}

// ConnLost reports whether err may have come from a lost connection rather
// than from the statement, so that the statement is worth trying again on a
// new connection: an error with a SQLSTATE of class 08 (connection
// exception) or 57 (operator intervention: a shutdown, a crash, recovery),
// or any error without a SQLSTATE (a reply cut short, a timeout). Wider than
// IsConnError, which decides a transaction's outcome class.
func ConnLost(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		c := pe.Code[:min(2, len(pe.Code))]
		return c == "08" || c == "57"
	}
	return true
}
