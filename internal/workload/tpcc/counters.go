package tpcc

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/errs"
)

// dbCounters are read from the database before and after the run and at
// the measurement window's edges.
type dbCounters struct {
	at      time.Time // when the read started
	nextOID int64     // sum(d_next_o_id)
	xacts   int64     // xact_commit + xact_rollback of the database under test
	// started is the server's start time and reset the last reset of the
	// database's statistics (zero when never reset): TPM's count is only
	// comparable between two reads that agree on both.
	started, reset time.Time
	// backend is the pid of the server process that did the read: a crash
	// of any backend makes the postmaster end every session (this one
	// included) and throw the statistics away without restarting itself, so
	// two reads on one backend are the proof that none happened between.
	backend   int32
	err       error
	completed bool
	// slack is how far two reads of the start time may differ on the
	// same server (MariaDB's is derived from its uptime in seconds: 0 for
	// PostgreSQL's exact one); counts names the counters in messages.
	slack  time.Duration
	counts string
}

// countersSQL counts the transactions of the database under test only:
// HammerDB sums every database, but a database dropped during the window
// (another client's, a test's, an experiment's) takes its counts out of that
// sum, and TPM could come out below NOPM.
const countersSQL = `select (select sum(d_next_o_id) from district)::bigint,
 (xact_commit + xact_rollback)::bigint, coalesce(stats_reset, 'epoch'::timestamptz), pg_postmaster_start_time(),
 pg_backend_pid() from pg_stat_database where datname = current_database()`

// readCounters reads the counters; pg_stat_clear_snapshot makes repeated
// reads on one connection see fresh statistics.
func readCounters(ctx context.Context, conn *pgx.Conn) dbCounters {
	c := dbCounters{at: time.Now(), counts: "pg_stat_database's counts"}
	if _, c.err = conn.Exec(ctx, "select pg_stat_clear_snapshot()"); c.err != nil {
		return c
	}
	c.err = conn.QueryRow(ctx, countersSQL).Scan(&c.nextOID, &c.xacts, &c.reset, &c.started, &c.backend)
	c.completed = c.err == nil
	return c
}

// Reconnection when a counters' connection was lost (the server restarted
// during the run): driver.RetryLost, within a budget from the edge.
const (
	// edgeBudget bounds the retries of a read at a window edge: a read
	// that starts later than this after its edge would not measure the
	// window, and the figures it serves are unknown instead.
	edgeBudget = 2 * time.Second
	// afterBudget bounds the retries of the read after the run (the NOPM
	// cross-check and the consistency checks need it).
	afterBudget = driver.AfterRunBudget
)

// connect opens a connection (a function of the target).
type connect func(context.Context) (*pgx.Conn, error)

// readRetry reads the counters on *conn, replacing a connection that is
// lost with a new one from dial until the budget from `from` has passed.
// *conn is the connection to keep (nil when none could be opened); the
// counters' err is the last failure.
func readRetry(ctx context.Context, conn **pgx.Conn, dial connect, from time.Time, budget time.Duration) dbCounters {
	var c dbCounters
	err := driver.RetryLost(ctx, conn, dial, from, budget, func(cn *pgx.Conn) error {
		c = readCounters(ctx, cn)
		return c.err
	})
	if err != c.err {
		c = dbCounters{at: time.Now(), err: err, counts: c.counts}
	}
	return c
}

// windowReader reads dbCounters at the measurement start and end on its
// own connection without blocking the executor's collector; a connection
// lost since the last read is replaced (edgeBudget).
type windowReader struct {
	side       side
	mu         sync.Mutex
	start, end dbCounters
	wg         sync.WaitGroup
}

func (w *windowReader) read(dst *dbCounters) func() {
	return func() {
		edge := time.Now()
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			w.mu.Lock()
			defer w.mu.Unlock()
			*dst = w.side.counters(ctx, edge, edgeBudget)
		}()
	}
}

func (w *windowReader) close() {
	w.wg.Wait()
	w.side.close()
}

// windowFigures are TPM and HammerDB's NOPM from the counters at the
// window's edges, or why each is unknown (nil when both are known). sum(d_next_o_id) is data, and
// survives a server restart; pg_stat_database's counters do not survive a
// crash (nor a reset), so TPM is unknown when the server restarted, the
// reads' session was lost (a backend's crash restarts every process but
// the postmaster, and keeps its start time) or the statistics were reset
// between the edges.
func windowFigures(s, e dbCounters) (tpm, nopm *float64, unknown map[string]string) {
	why := ""
	switch {
	case !s.completed:
		why = "the counters could not be read at the measurement window's start: " + errText(s.err)
	case !e.completed:
		why = "the counters could not be read at the measurement window's end: " + errText(e.err)
	case !e.at.After(s.at):
		why = "the counters' reads at the window's edges are out of order"
	}
	if why != "" {
		return nil, nil, map[string]string{"tpm": why, "nopm_database": why}
	}
	m := e.at.Sub(s.at).Minutes()
	n := float64(e.nextOID-s.nextOID) / m
	nopm = &n
	moved := e.started.Sub(s.started)
	switch {
	case moved > s.slack || moved < -s.slack:
		unknown = map[string]string{"tpm": "the server restarted during the measurement window (at " + e.started.Format(time.TimeOnly) +
			"): its statistics may have been lost (a crash resets them), so the growth of " + s.counts + " means nothing"}
	case e.backend != s.backend:
		unknown = map[string]string{"tpm": "the counters' session was lost during the measurement window and read again on a new one: " +
			"a crash of the server ends every session and may throw the statistics away, so the growth of " + s.counts + " cannot be trusted"}
	case !e.reset.Equal(s.reset) || e.xacts < s.xacts:
		unknown = map[string]string{"tpm": "the database's statistics were reset during the measurement window"}
	default:
		t := float64(e.xacts-s.xacts) / m
		tpm = &t
	}
	return tpm, nopm, unknown
}

// restartedBetween reports that the server restarted, or the reads'
// session was lost, between two reads.
func restartedBetween(s, e dbCounters) bool {
	moved := e.started.Sub(s.started)
	return moved > s.slack || moved < -s.slack || e.backend != s.backend
}

func errText(err error) string {
	if err == nil {
		return "no reading"
	}
	return errs.Brief(err)
}
