package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// schemaV5 keeps what an experiment's hooks did: the command, where it
// ran (the plan entry and the stored run, for the hooks around a run), its
// exit status and its output.
const schemaV5 = `
CREATE TABLE hooks (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    point         TEXT    NOT NULL,  -- before_experiment, before_config, before_run, after_run, after_experiment
    config        TEXT    NOT NULL DEFAULT '',
    plan_index    INTEGER,           -- the plan entry of a run's hooks
    run_id        INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    command       TEXT    NOT NULL,
    started_at    INTEGER,           -- unix nanoseconds, UTC
    elapsed_s     REAL    NOT NULL,
    exit_code     INTEGER,           -- NULL: it did not exit by itself (timeout, not started)
    timed_out     INTEGER NOT NULL DEFAULT 0,
    error         TEXT    NOT NULL DEFAULT '',
    output        TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX hooks_experiment ON hooks (experiment_id, id);
CREATE INDEX hooks_run ON hooks (run_id);
`

// HookRecord is one command a hook ran.
type HookRecord struct {
	ID           int64
	ExperimentID int64
	Point        string
	Config       string
	PlanIndex    int // -1: not a run's hook
	RunID        int64
	Command      string
	StartedAt    time.Time
	ElapsedS     float64
	ExitCode     int // -1: it did not exit by itself
	TimedOut     bool
	Error        string // why it failed besides its exit code (timeout, could not start)
	Output       string // stdout and stderr, interleaved (the middle cut when long)
}

// OK reports whether the hook succeeded.
func (h *HookRecord) OK() bool { return h.ExitCode == 0 && !h.TimedOut && h.Error == "" }

// SaveHook stores a hook's record.
func (s *Store) SaveHook(ctx context.Context, h HookRecord) error {
	var plan, run, exit any
	if h.PlanIndex >= 0 {
		plan = h.PlanIndex
	}
	if h.RunID > 0 {
		run = h.RunID
	}
	if h.ExitCode >= 0 {
		exit = h.ExitCode
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO hooks (experiment_id, point, config, plan_index, run_id, command, started_at,
		elapsed_s, exit_code, timed_out, error, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		h.ExperimentID, h.Point, h.Config, plan, run, h.Command, h.StartedAt.UTC().UnixNano(), h.ElapsedS, exit, h.TimedOut, h.Error, h.Output)
	if err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "save a hook's record in %s", s.path)
	}
	return nil
}

// Hooks lists the hook records of an experiment in the order they ran.
func (s *Store) Hooks(ctx context.Context, experimentID int64) ([]HookRecord, error) {
	if s.version > 0 && s.version < 5 {
		return nil, nil // a store from before hooks (opened read-only)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, experiment_id, point, config, plan_index, run_id, command, started_at,
		elapsed_s, exit_code, timed_out, error, output FROM hooks WHERE experiment_id = ? ORDER BY id`, experimentID)
	if err != nil {
		return nil, errs.Wrap(errs.KindInternal, err, "", "read hooks from %s", s.path)
	}
	defer rows.Close()
	var out []HookRecord
	for rows.Next() {
		var h HookRecord
		var plan, run, exit, started sql.NullInt64
		if err := rows.Scan(&h.ID, &h.ExperimentID, &h.Point, &h.Config, &plan, &run, &h.Command, &started,
			&h.ElapsedS, &exit, &h.TimedOut, &h.Error, &h.Output); err != nil {
			return nil, errs.Wrap(errs.KindInternal, err, "", "read hooks from %s", s.path)
		}
		h.PlanIndex, h.RunID, h.ExitCode = -1, run.Int64, -1
		if plan.Valid {
			h.PlanIndex = int(plan.Int64)
		}
		if exit.Valid {
			h.ExitCode = int(exit.Int64)
		}
		if started.Valid {
			h.StartedAt = time.Unix(0, started.Int64).UTC()
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// AddRunReason adds a reason to a stored run's status: an ok run gets
// status errors, and the reason goes in its summary's status_reasons (and
// its plan link's status follows).
func (s *Store) AddRunReason(ctx context.Context, runID int64, code, detail string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var status string
	var summary sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT status, summary FROM runs WHERE id = ?`, runID).Scan(&status, &summary); err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "run %d in %s", runID, s.path)
	}
	if status == StatusOK {
		status = StatusErrors
	}
	var sum map[string]any
	dec := json.NewDecoder(strings.NewReader(summary.String))
	dec.UseNumber() // int64 fields (seeds) keep every digit
	if summary.Valid && dec.Decode(&sum) == nil && sum != nil {
		sum["status"] = status
		reasons, _ := sum["status_reasons"].([]any)
		sum["status_reasons"] = append(reasons, map[string]any{"code": code, "detail": detail})
		b, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		summary.String = string(b)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, summary = ? WHERE id = ?`, status, summary, runID); err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "update run %d in %s", runID, s.path)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE experiment_runs SET status = ? WHERE run_id = ?`, status, runID); err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "update run %d in %s", runID, s.path)
	}
	return tx.Commit()
}
