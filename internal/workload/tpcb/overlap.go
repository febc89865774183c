package tpcb

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/target"
)

// Two writing runs on one database at once each see the other's rows in
// pgbench_history, and each one's history growth would fail although the
// data is consistent. A run marks itself when it starts, and at its end
// knows whether another overlapped it:
//
//   - the meta table's runs_started counts the runs that started: one
//     started during this run when it grew past this run's own number;
//   - while it runs, a run holds a lock of its own on its bookkeeping
//     connection (PostgreSQL: a shared advisory lock; MariaDB: one of
//     markSlots named locks), so a run finds those that were already
//     running when it started. A lock goes with its connection, so a
//     killed run leaves nothing behind.
//
// An overlapped run's history growth is "changed outside", not failed,
// and it records no run, so that a later `check tpcb` does not hold one
// run's growth against the other's transactions.
type runMark struct {
	started int64 // this run's number in runs_started
	others  int   // runs already running when it started
}

// overlap says why another run wrote to the database during the one
// marked m ("" when none did), given runs_started now.
func (m runMark) overlap(startedNow int64) string {
	var why []string
	if m.others > 0 {
		why = append(why, fmt.Sprintf("%d other tunebench run(s) were writing to this database when this one started", m.others))
	}
	if n := startedNow - m.started; n > 0 {
		why = append(why, fmt.Sprintf("%d other run(s) started on it while this one ran", n))
	}
	return strings.Join(why, "; ")
}

// outside makes the history growth of a run that another overlapped
// (why) "changed outside": the run recorded nothing, so the check found no
// run to hold the growth against, and says why instead.
func outside(rep CheckReport, committed, ambiguous int64, why string) CheckReport {
	rep.Passed = true
	for i := range rep.Conditions {
		c := &rep.Conditions[i]
		if c.Name == "history growth" {
			c.Passed, c.Skipped = true, true
			c.Detail = fmt.Sprintf("not applicable: pgbench_history changed outside this run: %s, and its growth counts their transactions too "+
				"(this run committed %d writing transactions, + up to %d ambiguous commits); no run is recorded for `check tpcb`", why, committed, ambiguous)
		}
		rep.Passed = rep.Passed && c.Passed
	}
	return rep
}

// runLockKey is PostgreSQL's advisory lock of a running tpcb run
// ("tunetpcb"); advisory locks are per database.
const runLockKey int64 = 0x74756e6574706362

// The mark's order: the lock first, then the counter, then the count of
// the others' locks. Of two runs starting together, the one that counts
// second sees the other's lock, and the other sees the counter grow.
func pgMark(ctx context.Context, conn *pgx.Conn) (runMark, error) {
	var m runMark
	if _, err := conn.Exec(ctx, "select pg_advisory_lock_shared($1)", runLockKey); err != nil {
		return m, err
	}
	var has bool
	if err := conn.QueryRow(ctx, `select exists (select 1 from pg_attribute
		where attrelid = to_regclass($1) and attname = 'runs_started' and not attisdropped)`, MetaTable).Scan(&has); err != nil {
		return m, err
	}
	if !has {
		// ALTER TABLE locks the table whole: only when the column is missing.
		if _, err := conn.Exec(ctx, "alter table "+MetaTable+" add column if not exists runs_started bigint"); err != nil {
			return m, err
		}
	}
	if err := conn.QueryRow(ctx, "update "+MetaTable+" set runs_started = coalesce(runs_started, 0) + 1 returning runs_started").Scan(&m.started); err != nil {
		return m, err
	}
	err := conn.QueryRow(ctx, `select count(*) from pg_locks where locktype = 'advisory' and granted
		and database = (select oid from pg_database where datname = current_database())
		and classid = ($1::bigint >> 32)::oid and objid = ($1::bigint & 4294967295)::oid and objsubid = 1
		and pid <> pg_backend_pid()`, runLockKey).Scan(&m.others)
	return m, err
}

func pgStarted(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n *int64
	err := conn.QueryRow(ctx, "select runs_started from "+MetaTable).Scan(&n)
	if n == nil {
		return 0, err
	}
	return *n, err
}

// markSlots is how many MariaDB runs' locks a run looks for (a run that
// finds them all taken runs without one, and is still seen by the
// counter).
const markSlots = 16

// mariaSlot is the name of MariaDB lock slot i of database db: a hash of
// the name, so that every database has its own whatever its length.
func mariaSlot(db string, i int) string {
	return fmt.Sprintf("tunebench_tpcb_%08x_%d", crc32.ChecksumIEEE([]byte(db)), i)
}

// mariaMark takes the first free slot (GET_LOCK says whether it got it:
// another run may take the same one first), then counts the run, then the
// other slots in use (the order of pgMark).
func mariaMark(ctx context.Context, a target.Admin, db string) (runMark, error) {
	var m runMark
	mine := -1
	for i := 0; i < markSlots && mine < 0; i++ {
		var got *int64
		if err := a.QueryRow(ctx, "SELECT GET_LOCK(?, 0)", mariaSlot(db, i)).Scan(&got); err != nil {
			return m, err
		}
		if got != nil && *got == 1 {
			mine = i
		}
	}
	var has int64
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'runs_started'", MetaTable).Scan(&has); err != nil {
		return m, err
	}
	if has == 0 {
		if _, err := a.Exec(ctx, "ALTER TABLE "+MetaTable+" ADD COLUMN IF NOT EXISTS runs_started BIGINT"); err != nil {
			return m, err
		}
	}
	// LAST_INSERT_ID(x) keeps x for this connection: another run's
	// increment between the update and the read cannot change it.
	if _, err := a.Exec(ctx, "UPDATE "+MetaTable+" SET runs_started = LAST_INSERT_ID(COALESCE(runs_started, 0) + 1)"); err != nil {
		return m, err
	}
	if err := a.QueryRow(ctx, "SELECT LAST_INSERT_ID()").Scan(&m.started); err != nil {
		return m, err
	}
	for i := 0; i < markSlots; i++ {
		if i == mine {
			continue
		}
		var holder *int64
		if err := a.QueryRow(ctx, "SELECT IS_USED_LOCK(?)", mariaSlot(db, i)).Scan(&holder); err != nil {
			return m, err
		}
		if holder != nil {
			m.others++
		}
	}
	return m, nil
}

func mariaStarted(ctx context.Context, a target.Admin) (int64, error) {
	var n *int64
	err := a.QueryRow(ctx, "SELECT runs_started FROM "+MetaTable).Scan(&n)
	if n == nil {
		return 0, err
	}
	return *n, err
}
