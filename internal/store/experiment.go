package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// Experiment statuses.
const (
	ExpRunning     = "running"
	ExpDone        = "done"
	ExpInterrupted = "interrupted"
	ExpFailed      = "failed"
)

// Experiment is one experiment: the spec as written and its expanded plan.
// Runs belong to it through PlanLink rows (experiment_runs).
type Experiment struct {
	ID        int64
	Name      string          // unique; the key users type (`tunebench report NAME`)
	Spec      string          // the YAML file as given
	Plan      json.RawMessage // the expanded plan (experiment package's JSON)
	Status    string          // ExpRunning, ExpDone, ExpInterrupted or ExpFailed
	StartedAt time.Time
	EndedAt   time.Time
}

// PlanLink ties one planned run of an experiment to its stored run.
type PlanLink struct {
	ExperimentID int64
	PlanIndex    int     // position in the expanded plan (execution order)
	RunID        int64   // the stored run; 0 while none
	Config       string  // configuration label: every matrix value except the x axis
	XName        string  // the x axis, e.g. "vusers" or "clients"
	XValue       float64 // its value for this run
	Repetition   int     // 1-based; warm-up runs have their own counter
	Warmup       bool    // a warm-up run, not counted in results
	Status       string  // the run's status (runs.status values)
}

// schemaV2 adds experiments and the link from plan entries to runs.
const schemaV2 = `
CREATE TABLE experiments (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL UNIQUE,
    spec       TEXT    NOT NULL,
    plan       TEXT    NOT NULL,     -- JSON: the expanded plan
    status     TEXT    NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
    started_at INTEGER,
    ended_at   INTEGER
);

CREATE TABLE experiment_runs (
    experiment_id INTEGER NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
    plan_index    INTEGER NOT NULL,
    run_id        INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    config        TEXT    NOT NULL,
    x_name        TEXT    NOT NULL,
    x_value       REAL,
    repetition    INTEGER NOT NULL,
    warmup        INTEGER NOT NULL,
    status        TEXT    NOT NULL,
    PRIMARY KEY (experiment_id, plan_index)
);
CREATE INDEX experiment_runs_run ON experiment_runs (run_id);
`

// CreateExperiment stores a new experiment and sets e.ID. A name already in
// the store is a usage error (resume it, or choose another name).
func (s *Store) CreateExperiment(ctx context.Context, e *Experiment) (int64, error) {
	if e.Name == "" {
		return 0, errs.New(errs.KindUsage, "give the experiment a name", "experiment without a name")
	}
	if old, err := s.GetExperiment(ctx, e.Name); err == nil && old != nil {
		return 0, errs.New(errs.KindUsage, "add --resume to continue it, or rename the experiment",
			"experiment %q already exists in %s (status %s)", e.Name, s.path, old.Status)
	}
	started, err := timeToNanos("started_at", e.StartedAt)
	if err != nil {
		return 0, err
	}
	if e.Status == "" {
		e.Status = ExpRunning
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO experiments (name, spec, plan, status, started_at) VALUES (?, ?, ?, ?, ?)`,
		e.Name, e.Spec, string(e.Plan), e.Status, started)
	if err != nil {
		return 0, errs.Wrap(errs.KindInternal, err, "", "save experiment %q in %s", e.Name, s.path)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	e.ID = id
	return id, nil
}

// GetExperiment finds an experiment by name; a missing one is a usage error.
func (s *Store) GetExperiment(ctx context.Context, name string) (*Experiment, error) {
	row := s.db.QueryRowContext(ctx, `SELECT id, name, spec, plan, status, started_at, ended_at FROM experiments WHERE name = ?`, name)
	var e Experiment
	var plan string
	var st, en sql.NullInt64
	if err := row.Scan(&e.ID, &e.Name, &e.Spec, &plan, &e.Status, &st, &en); err != nil {
		if isNoRows(err) {
			return nil, errs.New(errs.KindUsage, "`tunebench experiment list` shows the experiments in the store",
				"no experiment %q in %s", name, s.path)
		}
		return nil, s.readErr(err)
	}
	e.Plan = json.RawMessage(plan)
	e.StartedAt, e.EndedAt = nanosToTime(st), nanosToTime(en)
	return &e, nil
}

// ListExperiments returns every experiment, newest first.
func (s *Store) ListExperiments(ctx context.Context) ([]Experiment, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, status, started_at, ended_at FROM experiments ORDER BY id DESC`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []Experiment
	for rows.Next() {
		var e Experiment
		var st, en sql.NullInt64
		if err := rows.Scan(&e.ID, &e.Name, &e.Status, &st, &en); err != nil {
			return nil, s.readErr(err)
		}
		e.StartedAt, e.EndedAt = nanosToTime(st), nanosToTime(en)
		out = append(out, e)
	}
	return out, s.readErr(rows.Err())
}

// SetExperimentStatus updates the status (and the end time when not zero).
func (s *Store) SetExperimentStatus(ctx context.Context, id int64, status string, ended time.Time) error {
	en, err := timeToNanos("ended_at", ended)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `UPDATE experiments SET status = ?, ended_at = ? WHERE id = ?`, status, en, id)
	if err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "update experiment %d in %s", id, s.path)
	}
	return nil
}

// SetExperimentPlan replaces the stored plan (a resume may extend it).
func (s *Store) SetExperimentPlan(ctx context.Context, id int64, plan json.RawMessage) error {
	_, err := s.db.ExecContext(ctx, `UPDATE experiments SET plan = ? WHERE id = ?`, string(plan), id)
	if err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "update experiment %d in %s", id, s.path)
	}
	return nil
}

// PlanLinks returns the stored plan links of an experiment in plan order.
func (s *Store) PlanLinks(ctx context.Context, experimentID int64) ([]PlanLink, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT experiment_id, plan_index, run_id, config, x_name, x_value, repetition, warmup, status
FROM experiment_runs WHERE experiment_id = ? ORDER BY plan_index`, experimentID)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []PlanLink
	for rows.Next() {
		var l PlanLink
		var run sql.NullInt64
		var x sql.NullFloat64
		var warm int
		if err := rows.Scan(&l.ExperimentID, &l.PlanIndex, &run, &l.Config, &l.XName, &x, &l.Repetition, &warm, &l.Status); err != nil {
			return nil, s.readErr(err)
		}
		l.RunID, l.XValue, l.Warmup = run.Int64, x.Float64, warm != 0
		out = append(out, l)
	}
	return out, s.readErr(rows.Err())
}

// insertPlanLink writes (or replaces) a plan link inside tx.
func insertPlanLink(ctx context.Context, tx *sql.Tx, l *PlanLink, runID int64) error {
	warm := 0
	if l.Warmup {
		warm = 1
	}
	var run any
	if runID != 0 {
		run = runID
	}
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO experiment_runs
(experiment_id, plan_index, run_id, config, x_name, x_value, repetition, warmup, status)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, l.ExperimentID, l.PlanIndex, run, l.Config, l.XName, l.XValue, l.Repetition, warm, l.Status)
	return err
}

// SavePlanLink records a plan entry without a run (e.g. a run that failed
// before producing results), so resume and reports can see it.
func (s *Store) SavePlanLink(ctx context.Context, l PlanLink) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := insertPlanLink(ctx, tx, &l, l.RunID); err != nil {
		return errs.Wrap(errs.KindInternal, err, "", "save experiment run link in %s", s.path)
	}
	return tx.Commit()
}
