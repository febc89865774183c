package pg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
)

// ServerClock (target.Rendezvouser) reads the server's clock a few times:
// the offset of the server's clock from this machine's (server - here) at
// the reading with the shortest round trip, taken at its middle, and that
// round trip (the offset's uncertainty is half of it).
func (t *Target) ServerClock(ctx context.Context) (offset, rtt time.Duration, err error) {
	c, err := t.conn.ConnectStd(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return serverClock(ctx, c)
}

func serverClock(ctx context.Context, c *pgx.Conn) (offset, rtt time.Duration, err error) {
	rtt = -1
	for i := 0; i < 7; i++ {
		var server time.Time
		t0 := time.Now()
		if err := c.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&server); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		if d := t1.Sub(t0); i > 0 && (rtt < 0 || d < rtt) { // the first warms the statement up
			rtt = d
			offset = server.Sub(t0.Add(d / 2))
		}
	}
	return offset, rtt, nil
}

// rendezvousTable is where the shards of a split run meet; the key
// names the run (every shard is given the same one).
const rendezvousTable = "tunebench_rendezvous"

// Join (target.Rendezvouser) records shard index of count under key in
// the database and waits until every shard has joined; it returns the
// server's time of the last join. joined is told how many have, as that
// changes. The table is made on first use (under an advisory lock: the
// shards arrive together).
func (t *Target) Join(ctx context.Context, key string, index, count int, joined func(n int)) (time.Time, error) {
	c, err := t.conn.ConnectStd(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	// Rows of an earlier run under the same key (joined before this
	// shard's wait could have begun) do not count: only joins within the
	// wait's window before this one's.
	window := 10 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		window = time.Until(d)
	}
	var mine time.Time
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", rendezvousTable); err != nil {
			return err
		}
		// Made only when missing: CREATE TABLE IF NOT EXISTS checks the
		// schema's CREATE privilege before it looks, and a role given the
		// table without it would be refused.
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", rendezvousTable).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+rendezvousTable+
				" (key text NOT NULL, shard int NOT NULL, shards int NOT NULL, joined timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (key, shard))"); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, "INSERT INTO "+rendezvousTable+" (key, shard, shards) VALUES ($1, $2, $3)"+
			" ON CONFLICT (key, shard) DO UPDATE SET shards = EXCLUDED.shards, joined = clock_timestamp() RETURNING joined",
			key, index, count).Scan(&mine)
	})
	if err != nil {
		return time.Time{}, errs.Wrap(errs.KindConnect, err, "the role needs CREATE on the database's public schema (or make "+rendezvousTable+" for it), and INSERT and SELECT on it",
			"shard %d/%d cannot join the rendezvous %q in the database", index, count, key)
	}
	// timedOut says which shards are missing when ctx ends the wait (a
	// connection of its own: the wait's may be cut by the deadline).
	timedOut := func(n int) error {
		var missing []int
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		q := c
		if q.IsClosed() {
			if nc, err := t.conn.ConnectStd(qctx); err == nil {
				defer nc.Close(qctx)
				q = nc
			}
		}
		rows, err := q.Query(qctx, "SELECT s FROM generate_series(0, $2 - 1) s WHERE s NOT IN (SELECT shard FROM "+rendezvousTable+
			" WHERE key = $1 AND joined >= $3) ORDER BY s", key, count, mine.Add(-window))
		if err == nil {
			missing, _ = pgx.CollectRows(rows, pgx.RowTo[int])
		}
		return fmt.Errorf("%w: %d of %d shards joined the rendezvous %q; missing %v", ctx.Err(), n, count, key, missing)
	}
	seen := -1
	n := 1
	for {
		var last time.Time
		var others int
		if err := c.QueryRow(ctx, "SELECT count(*), coalesce(max(joined), clock_timestamp()), count(*) FILTER (WHERE shards <> $2) FROM "+rendezvousTable+
			" WHERE key = $1 AND joined >= $3", key, count, mine.Add(-window)).Scan(&n, &last, &others); err != nil {
			if ctx.Err() != nil {
				// The deadline cut the count short.
				return time.Time{}, timedOut(max(seen, 1))
			}
			return time.Time{}, err
		}
		if others > 0 {
			return time.Time{}, errs.Usage("give every shard the same N (--shard i/N), or another --rendezvous key",
				"the rendezvous %q has shards of another count than %d", key, count)
		}
		if n != seen && joined != nil {
			joined(n)
			seen = n
		}
		if n >= count {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, timedOut(n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
