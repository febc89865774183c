package pgstat

import (
	"context"
	"fmt"
	"time"

	"github.com/tunebench/tunebench/internal/metrics/sampler"
)

// Series names (docs/metrics.md documents every one).
const (
	Commits           = "pg.commits_s"
	Rollbacks         = "pg.rollbacks_s"
	BlksHit           = "pg.blks_hit_s"
	BlksRead          = "pg.blks_read_s"
	TempBytes         = "pg.temp_bytes_s"
	Deadlocks         = "pg.deadlocks"
	AllPrefix         = "pg.all." // pg.all.commits_s ...: all databases
	Checkpoints       = "pg.checkpoints"
	BuffersCheckpoint = "pg.buffers_checkpoint_s"
	BuffersClean      = "pg.buffers_clean_s"
	BuffersBackend    = "pg.buffers_backend_s"
	WALBytes          = "pg.wal_bytes_s"
)

// DBCounters are pg_stat_database's cumulative counters tunebench uses.
type DBCounters struct {
	Commits, Rollbacks, BlksHit, BlksRead, TempBytes, Deadlocks float64
}

func (a *DBCounters) add(b DBCounters) {
	a.Commits += b.Commits
	a.Rollbacks += b.Rollbacks
	a.BlksHit += b.BlksHit
	a.BlksRead += b.BlksRead
	a.TempBytes += b.TempBytes
	a.Deadlocks += b.Deadlocks
}

// DBRow is one row of pg_stat_database.
type DBRow struct {
	Datname string // "" for the shared-objects row (datid 0, PostgreSQL 12+)
	DBCounters
}

// DatabaseQuery reads pg_stat_database (columns as in DBRowFromMaps).
const DatabaseQuery = `SELECT coalesce(datname, '') AS datname, xact_commit, xact_rollback, blks_hit, blks_read, temp_bytes, deadlocks FROM pg_stat_database`

// DBRowFromMaps builds a DBRow from rowMaps output (missing columns are 0).
func DBRowFromMaps(num map[string]float64, text map[string]string) DBRow {
	return DBRow{Datname: text["datname"], DBCounters: DBCounters{
		Commits: num["xact_commit"], Rollbacks: num["xact_rollback"], BlksHit: num["blks_hit"],
		BlksRead: num["blks_read"], TempBytes: num["temp_bytes"], Deadlocks: num["deadlocks"],
	}}
}

// SumDatabases returns the counters of database db and of all rows.
func SumDatabases(rows []DBRow, db string) (bench, all DBCounters, found bool) {
	for _, r := range rows {
		all.add(r.DBCounters)
		if r.Datname == db && db != "" {
			bench, found = r.DBCounters, true
		}
	}
	return bench, all, found
}

// CheckpointCounters are the cumulative checkpointer and background writer
// counters.
type CheckpointCounters struct {
	// Checkpoints counts checkpoints: PostgreSQL 18+ num_done (completed
	// ones); 17 num_timed + num_requested; up to 16 checkpoints_timed +
	// checkpoints_req (timed ones include those skipped on an idle server).
	Checkpoints       float64
	BuffersCheckpoint float64
	BuffersClean      float64
	// BuffersBackend is buffers written by backends themselves: up to 16
	// pg_stat_bgwriter.buffers_backend; from 17 the writes of shared
	// relation buffers by every other process type in pg_stat_io.
	BuffersBackend float64
}

// CheckpointQueries returns the queries for a server version: the first's
// row goes to ParseCheckpoints as bgwriter, the second's (if any) as
// checkpointer and the third's (if any) as io.
func CheckpointQueries(version int) []string {
	if version < 170000 {
		return []string{`SELECT * FROM pg_stat_bgwriter`}
	}
	return []string{
		`SELECT * FROM pg_stat_bgwriter`,
		`SELECT * FROM pg_stat_checkpointer`,
		`SELECT coalesce(sum(writes), 0) AS backend_writes FROM pg_stat_io WHERE object = 'relation' AND backend_type NOT IN ('checkpointer', 'background writer')`,
	}
}

// ParseCheckpoints reads the counters from the rows of CheckpointQueries
// (column name -> value).
func ParseCheckpoints(version int, bgwriter, checkpointer, io map[string]float64) (CheckpointCounters, error) {
	need := func(m map[string]float64, view string, cols ...string) error {
		for _, c := range cols {
			if _, ok := m[c]; !ok {
				return fmt.Errorf("%s has no column %s (server_version_num %d)", view, c, version)
			}
		}
		return nil
	}
	var c CheckpointCounters
	if version < 170000 {
		if err := need(bgwriter, "pg_stat_bgwriter", "checkpoints_timed", "checkpoints_req", "buffers_checkpoint", "buffers_clean", "buffers_backend"); err != nil {
			return c, err
		}
		c.Checkpoints = bgwriter["checkpoints_timed"] + bgwriter["checkpoints_req"]
		c.BuffersCheckpoint = bgwriter["buffers_checkpoint"]
		c.BuffersClean = bgwriter["buffers_clean"]
		c.BuffersBackend = bgwriter["buffers_backend"]
		return c, nil
	}
	if err := need(bgwriter, "pg_stat_bgwriter", "buffers_clean"); err != nil {
		return c, err
	}
	if err := need(checkpointer, "pg_stat_checkpointer", "num_timed", "num_requested", "buffers_written"); err != nil {
		return c, err
	}
	if err := need(io, "pg_stat_io", "backend_writes"); err != nil {
		return c, err
	}
	if done, ok := checkpointer["num_done"]; ok {
		c.Checkpoints = done
	} else {
		c.Checkpoints = checkpointer["num_timed"] + checkpointer["num_requested"]
	}
	c.BuffersCheckpoint = checkpointer["buffers_written"]
	c.BuffersClean = bgwriter["buffers_clean"]
	c.BuffersBackend = io["backend_writes"]
	return c, nil
}

// WALQuery returns the WAL position in bytes: the insert position on a
// primary, the replay position on a standby.
const WALQuery = `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END - '0/0'::pg_lsn)::float8 AS wal_bytes`

// Stats samples pg_stat_database, the checkpointer/bgwriter and the WAL
// position once per call, on its own connection.
type Stats struct {
	// Database is the benchmark database; "" means the connection's.
	Database string
	sess     session

	prevAt                                                      time.Time
	commits, rollbacks, hit, read, temp, deadlocks              counter
	allCommits, allRollbacks, allHit, allRead, allTemp, allDead counter
	ckpt, bufCkpt, bufClean, bufBackend, wal                    counter
	noDBNoted                                                   bool
}

// NewStats returns a Stats sampler using connect for its connection.
func NewStats(connect Connector, database string) *Stats {
	return &Stats{Database: database, sess: session{connect: connect}}
}

func (*Stats) Name() string { return "pg-stats" }

// Close closes the connection.
func (s *Stats) Close() error { return s.sess.Close() }

// BackendPID returns the sampler connection's server process id.
func (s *Stats) BackendPID(ctx context.Context) (int, error) { return s.sess.BackendPID(ctx) }

// Sample reads the views and returns the rates since the previous sample.
func (s *Stats) Sample(ctx context.Context, _ time.Time) ([]sampler.Point, error) {
	c, err := s.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	// One query per view (3 to 5 round trips a second on loopback): a
	// failing one is named in the error.
	at := time.Now()
	dbNums, dbTexts, err := rowMaps(ctx, c, DatabaseQuery)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_database: %w", err)
	}
	var rows []DBRow
	for i := range dbNums {
		rows = append(rows, DBRowFromMaps(dbNums[i], dbTexts[i]))
	}
	var ckptRows [3]map[string]float64
	for i, q := range CheckpointQueries(s.sess.version) {
		nums, _, err := rowMaps(ctx, c, q)
		if err != nil {
			return nil, fmt.Errorf("checkpointer statistics: %w", err)
		}
		if len(nums) == 0 {
			return nil, fmt.Errorf("checkpointer statistics: %w from %q", errNoRows, q)
		}
		ckptRows[i] = nums[0]
	}
	walNums, _, err := rowMaps(ctx, c, WALQuery)
	if err != nil {
		return nil, fmt.Errorf("WAL position: %w", err)
	}
	return s.compute(at, rows, ckptRows, walNums)
}

// compute turns one reading into points (split from Sample for tests).
func (s *Stats) compute(at time.Time, rows []DBRow, ckptRows [3]map[string]float64, walNums []map[string]float64) ([]sampler.Point, error) {
	var secs float64
	if !s.prevAt.IsZero() {
		secs = at.Sub(s.prevAt).Seconds()
	}
	s.prevAt = at
	var pts []sampler.Point
	rate := func(series string, c *counter, v float64) {
		if r, ok := c.update(v, secs); ok {
			pts = append(pts, sampler.Point{Series: series, V: r})
		}
	}
	total := func(series string, c *counter, v float64) {
		c.update(v, secs)
		pts = append(pts, sampler.Point{Series: series, V: c.total})
	}

	db := s.Database
	if db == "" {
		db = s.sess.dbname
	}
	bench, all, found := SumDatabases(rows, db)
	var err error
	if found {
		rate(Commits, &s.commits, bench.Commits)
		rate(Rollbacks, &s.rollbacks, bench.Rollbacks)
		rate(BlksHit, &s.hit, bench.BlksHit)
		rate(BlksRead, &s.read, bench.BlksRead)
		rate(TempBytes, &s.temp, bench.TempBytes)
		total(Deadlocks, &s.deadlocks, bench.Deadlocks)
	} else if !s.noDBNoted {
		s.noDBNoted = true
		err = fmt.Errorf("database %q not in pg_stat_database (no statistics yet?)", db)
	}
	rate(AllPrefix+"commits_s", &s.allCommits, all.Commits)
	rate(AllPrefix+"rollbacks_s", &s.allRollbacks, all.Rollbacks)
	rate(AllPrefix+"blks_hit_s", &s.allHit, all.BlksHit)
	rate(AllPrefix+"blks_read_s", &s.allRead, all.BlksRead)
	rate(AllPrefix+"temp_bytes_s", &s.allTemp, all.TempBytes)
	total(AllPrefix+"deadlocks", &s.allDead, all.Deadlocks)

	ck, cerr := ParseCheckpoints(s.sess.version, ckptRows[0], ckptRows[1], ckptRows[2])
	if cerr != nil {
		if err == nil {
			err = cerr
		}
	} else {
		total(Checkpoints, &s.ckpt, ck.Checkpoints)
		rate(BuffersCheckpoint, &s.bufCkpt, ck.BuffersCheckpoint)
		rate(BuffersClean, &s.bufClean, ck.BuffersClean)
		rate(BuffersBackend, &s.bufBackend, ck.BuffersBackend)
	}
	if len(walNums) == 1 {
		if v, ok := walNums[0]["wal_bytes"]; ok {
			rate(WALBytes, &s.wal, v)
		}
	}
	return pts, err
}
