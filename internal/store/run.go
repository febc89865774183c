package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

// Run statuses.
const (
	StatusOK          = "ok"          // finished, errors within the threshold
	StatusErrors      = "errors"      // finished, errors above the threshold
	StatusInterrupted = "interrupted" // stopped early by the user; results so far
	StatusFailed      = "failed"      // could not run to the end
	// StatusSkipped is a plan entry's status (never a run's) when a
	// before hook failed and the run was not done.
	StatusSkipped = "skipped"
)

// Histogram kinds.
const (
	KindLatency = "latency" // from the (intended) start to the end of a transaction
	KindService = "service" // open loop: from the actual start to the end
	KindLag     = "lag"     // open loop: schedule lag, actual minus intended start
)

// Run is one stored run: one row plus its time series and histograms.
type Run struct {
	ID         int64
	Experiment string // optional grouping key, "" for ad-hoc runs
	Workload   string // e.g. "tpcb"
	Variant    string // e.g. "select-only" (script / mode)
	Status     string // StatusOK, StatusErrors, StatusInterrupted or StatusFailed
	StartedAt  time.Time
	EndedAt    time.Time
	Params     json.RawMessage // the full run configuration
	Env        json.RawMessage // environment snapshot (envinfo.Snapshot as JSON)
	Summary    json.RawMessage // the run summary (same JSON the CLI's --json writes)
	Check      json.RawMessage // consistency check report, may be nil
	// SummarySchema is the version of the summary's schema (package
	// results); 1 for runs stored before the version was recorded.
	SummarySchema int
	Series        []Point     // per-second time series
	Histograms    []Histogram // encoded HDR histograms
	// Intervals are histograms of single intervals of the series (a
	// shard's, for the merge); most runs have none.
	Intervals []IntervalHistogram
	// Link, when set, ties the run to an experiment's plan entry; it is
	// written in the same transaction as the run (its RunID is filled in).
	Link *PlanLink
}

// Point is one sample of a named time series.
type Point struct {
	Series string
	T      float64 // seconds since measurement start
	V      float64 // NaN and ±Inf round-trip; -0 comes back as 0
}

// Histogram is one encoded HdrHistogram of a run.
type Histogram struct {
	Op      string
	Class   string
	Kind    string // KindLatency, KindService or KindLag
	Encoded []byte // HdrHistogram V2 compressed encoding
}

// IntervalHistogram is the encoded HdrHistogram of one interval of a
// run's series: committed transactions' latency (KindLatency) or schedule
// lag (KindLag) over the interval ending at T (the series' times).
type IntervalHistogram struct {
	T       float64
	Kind    string
	Encoded []byte
}

// RunInfo is a run's row without its series and histograms.
type RunInfo struct {
	ID         int64
	Experiment string
	Workload   string
	Variant    string
	Status     string
	StartedAt  time.Time
	EndedAt    time.Time
	Params     json.RawMessage
	Env        json.RawMessage
	Summary    json.RawMessage
	Check      json.RawMessage
	// SummarySchema: see Run.
	SummarySchema int
}

// Info returns the run's row without children.
func (r *Run) Info() RunInfo {
	return RunInfo{
		ID: r.ID, Experiment: r.Experiment, Workload: r.Workload, Variant: r.Variant,
		Status: r.Status, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		Params: r.Params, Env: r.Env, Summary: r.Summary, Check: r.Check, SummarySchema: r.SummarySchema,
	}
}

// ListFilter selects runs for ListRuns. Empty fields match everything.
type ListFilter struct {
	Workload   string
	Experiment string
	Limit      int // at most this many runs; 0 means no limit
}

// pointBatch is how many series points go into one INSERT statement.
const pointBatch = 200

const runColumns = `id, experiment, workload, variant, status, started_at, ended_at, params, env, summary, check_report, summary_schema`

// SaveRun stores r, its series and its histograms in one transaction (all or
// nothing) and sets r.ID. Within a series, points keep the order they have in
// r.Series; GetRun returns series sorted by name.
func (s *Store) SaveRun(ctx context.Context, r *Run) (int64, error) {
	return s.saveRun(ctx, r, nil, nil)
}

// SaveRunWithSummary saves r like SaveRun, and sets its summary to what
// summary(id) returns for the new run id, in the same transaction (summaries
// name their own run id).
func (s *Store) SaveRunWithSummary(ctx context.Context, r *Run, summary func(id int64) (json.RawMessage, error)) (int64, error) {
	return s.saveRun(ctx, r, summary, nil)
}

// saveRun is the one way a run is written. prep, when set, runs first inside
// the transaction; its error is returned as it is (an import's refusal).
func (s *Store) saveRun(ctx context.Context, r *Run, summary func(id int64) (json.RawMessage, error), prep func(context.Context, *sql.Tx) error) (int64, error) {
	if r == nil {
		return 0, errs.New(errs.KindInternal, "", "save run: nil run")
	}
	if err := validateRun(r); err != nil {
		return 0, err
	}
	started, err := timeToNanos("started_at", r.StartedAt)
	if err != nil {
		return 0, err
	}
	ended, err := timeToNanos("ended_at", r.EndedAt)
	if err != nil {
		return 0, err
	}

	fail := func(err error) (int64, error) {
		// A cancelled save can surface as database/sql's "statement is
		// closed" (its context watcher closed the statement first): the
		// cause is the cancellation, and callers test for it.
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %v", cerr, err)
		}
		return 0, errs.Wrap(errs.KindInternal, err, "", "save run in %s", s.path)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	if prep != nil {
		if err := prep(ctx, tx); err != nil {
			return 0, err
		}
	}

	res, err := tx.ExecContext(ctx, `INSERT INTO runs
(experiment, workload, variant, status, started_at, ended_at, params, env, summary, check_report, summary_schema)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Experiment, r.Workload, r.Variant, r.Status, started, ended,
		jsonArg(r.Params), jsonArg(r.Env), jsonArg(r.Summary), jsonArg(r.Check), schemaArg(r.SummarySchema))
	if err != nil {
		return fail(err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fail(err)
	}
	if summary != nil {
		sum, err := summary(id)
		if err != nil {
			return fail(err)
		}
		probe := Run{Workload: r.Workload, Status: r.Status, Summary: sum}
		if err := validateRun(&probe); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET summary = ? WHERE id = ?`, jsonArg(sum), id); err != nil {
			return fail(err)
		}
		r.Summary = sum
	}
	if err := s.insertSeries(ctx, tx, id, r.Series); err != nil {
		return fail(err)
	}
	if r.Link != nil {
		if r.Link.Status == "" {
			r.Link.Status = r.Status
		}
		if err := insertPlanLink(ctx, tx, r.Link, id); err != nil {
			return fail(fmt.Errorf("experiment run link: %w", err))
		}
		r.Link.RunID = id
	}
	if len(r.Histograms) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO histograms (run_id, op, class, kind, encoded) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return fail(err)
		}
		defer st.Close()
		for _, h := range r.Histograms {
			enc := h.Encoded
			if enc == nil {
				enc = []byte{}
			}
			if _, err := st.ExecContext(ctx, id, h.Op, h.Class, h.Kind, enc); err != nil {
				return fail(fmt.Errorf("histogram %s/%s/%s: %w", h.Op, h.Class, h.Kind, err))
			}
		}
	}
	if len(r.Intervals) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO interval_histograms (run_id, kind, t, encoded) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return fail(err)
		}
		defer st.Close()
		for _, h := range r.Intervals {
			if _, err := st.ExecContext(ctx, id, h.Kind, h.T, h.Encoded); err != nil {
				return fail(fmt.Errorf("interval histogram %s at %g s: %w", h.Kind, h.T, err))
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	r.ID = id
	return id, nil
}

// insertSeries writes one series row per name and the points in batches of
// pointBatch rows through one prepared statement (plus one for the tail).
func (s *Store) insertSeries(ctx context.Context, tx *sql.Tx, runID int64, pts []Point) error {
	if len(pts) == 0 {
		return nil
	}
	groups := groupSeries(pts)
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)

	insSeries, err := tx.PrepareContext(ctx, `INSERT INTO series (run_id, name) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer insSeries.Close()
	full, err := tx.PrepareContext(ctx, pointInsertSQL(pointBatch))
	if err != nil {
		return err
	}
	defer full.Close()

	args := make([]any, 0, 4*pointBatch)
	inserted := 0
	flush := func(st *sql.Stmt) error {
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
		inserted += len(args) / 4
		args = args[:0]
		if s.afterPointBatch != nil {
			s.afterPointBatch(inserted)
		}
		return nil
	}
	for _, name := range names {
		res, err := insSeries.ExecContext(ctx, runID, name)
		if err != nil {
			return fmt.Errorf("series %q: %w", name, err)
		}
		sid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for seq, i := range groups[name] {
			p := pts[i]
			var v any
			if !math.IsNaN(p.V) {
				v = p.V
			}
			args = append(args, sid, seq, p.T, v)
			if len(args) == cap(args) {
				if err := flush(full); err != nil {
					return err
				}
			}
		}
	}
	if len(args) > 0 {
		tail, err := tx.PrepareContext(ctx, pointInsertSQL(len(args)/4))
		if err != nil {
			return err
		}
		defer tail.Close()
		if err := flush(tail); err != nil {
			return err
		}
	}
	return nil
}

func pointInsertSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO series_points (series_id, seq, t, v) VALUES `)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?)")
	}
	return b.String()
}

// groupSeries maps each series name to the indexes of its points, in order.
func groupSeries(pts []Point) map[string][]int {
	g := make(map[string][]int)
	for i, p := range pts {
		g[p.Series] = append(g[p.Series], i)
	}
	return g
}

// GetRun loads run id with its series (sorted by name, then in saved order)
// and histograms (sorted by op, class, kind).
func (s *Store) GetRun(ctx context.Context, id int64) (*Run, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id)
	info, err := scanRunInfo(row)
	if isNoRows(err) {
		return nil, errs.New(errs.KindUsage, "`tunebench results list` shows the stored runs",
			"no run %d in %s", id, s.path)
	}
	if err != nil {
		return nil, s.readErr(err)
	}
	r := &Run{
		ID: info.ID, Experiment: info.Experiment, Workload: info.Workload, Variant: info.Variant,
		Status: info.Status, StartedAt: info.StartedAt, EndedAt: info.EndedAt,
		Params: info.Params, Env: info.Env, Summary: info.Summary, Check: info.Check,
		SummarySchema: info.SummarySchema,
	}

	rows, err := s.db.QueryContext(ctx, `SELECT s.name, p.t, p.v
FROM series s JOIN series_points p ON p.series_id = s.id
WHERE s.run_id = ?
ORDER BY s.name, p.seq`, id)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	name := ""
	for rows.Next() {
		var n string
		var t float64
		var v sql.NullFloat64
		if err := rows.Scan(&n, &t, &v); err != nil {
			return nil, s.readErr(err)
		}
		if n != name { // share one string per series
			name = n
		}
		p := Point{Series: name, T: t, V: math.NaN()}
		if v.Valid {
			p.V = v.Float64
		}
		r.Series = append(r.Series, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	rows.Close()

	hrows, err := s.db.QueryContext(ctx, `SELECT op, class, kind, encoded FROM histograms
WHERE run_id = ? ORDER BY op, class, kind`, id)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer hrows.Close()
	for hrows.Next() {
		var h Histogram
		if err := hrows.Scan(&h.Op, &h.Class, &h.Kind, &h.Encoded); err != nil {
			return nil, s.readErr(err)
		}
		if h.Encoded == nil {
			h.Encoded = []byte{}
		}
		r.Histograms = append(r.Histograms, h)
	}
	if err := hrows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	hrows.Close()
	if r.Intervals, err = s.intervals(ctx, id); err != nil {
		return nil, s.readErr(err)
	}
	return r, nil
}

// intervals reads run id's interval histograms, by kind then time.
func (s *Store) intervals(ctx context.Context, id int64) ([]IntervalHistogram, error) {
	if s.version != 0 && s.version < 4 { // a read-only store from before interval histograms
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kind, t, encoded FROM interval_histograms WHERE run_id = ? ORDER BY kind, t`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []IntervalHistogram
	for rows.Next() {
		var h IntervalHistogram
		if err := rows.Scan(&h.Kind, &h.T, &h.Encoded); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ListRuns returns the rows of the runs that match f, newest first (by start
// time, then by id).
func (s *Store) ListRuns(ctx context.Context, f ListFilter) ([]RunInfo, error) {
	var where []string
	var args []any
	if f.Workload != "" {
		where = append(where, "workload = ?")
		args = append(args, f.Workload)
	}
	if f.Experiment != "" {
		where = append(where, "experiment = ?")
		args = append(args, f.Experiment)
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY started_at DESC, id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []RunInfo
	for rows.Next() {
		info, err := scanRunInfo(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

func (s *Store) readErr(err error) error {
	return errs.Wrap(errs.KindInternal, err, "", "read results store %s", s.path)
}

type scanner interface{ Scan(dest ...any) error }

func scanRunInfo(sc scanner) (RunInfo, error) {
	var ri RunInfo
	var started, ended sql.NullInt64
	var params, env, summary, check sql.NullString
	var schema sql.NullInt64
	err := sc.Scan(&ri.ID, &ri.Experiment, &ri.Workload, &ri.Variant, &ri.Status,
		&started, &ended, &params, &env, &summary, &check, &schema)
	if err != nil {
		return RunInfo{}, err
	}
	ri.StartedAt = nanosToTime(started)
	ri.EndedAt = nanosToTime(ended)
	ri.Params = jsonValue(params)
	ri.Env = jsonValue(env)
	ri.Summary = jsonValue(summary)
	ri.Check = jsonValue(check)
	ri.SummarySchema = 1
	if schema.Valid {
		ri.SummarySchema = int(schema.Int64)
	}
	return ri, nil
}

// validateRun checks what the schema cannot, with messages that name the
// field, and applies the last-guard secret check.
func validateRun(r *Run) error {
	bad := func(format string, args ...any) error {
		return errs.New(errs.KindInternal, "", "save run: "+format, args...)
	}
	if r.Workload == "" {
		return bad("workload is empty")
	}
	switch r.Status {
	case StatusOK, StatusErrors, StatusInterrupted, StatusFailed:
	default:
		return bad("status %q is not one of ok, errors, interrupted, failed", r.Status)
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"params", r.Params}, {"env", r.Env}, {"summary", r.Summary}, {"check", r.Check}} {
		if len(f.v) > 0 && !json.Valid(f.v) {
			return bad("%s is not valid JSON", f.name)
		}
		if jsonHasSecret(f.v) {
			return bad("%s contains a password-shaped connection string; redact it before saving", f.name)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"experiment", r.Experiment}, {"workload", r.Workload}, {"variant", r.Variant},
	} {
		if hasSecret(f.v) {
			return bad("%s contains a password-shaped connection string; redact it before saving", f.name)
		}
	}
	for i, p := range r.Series {
		if math.IsNaN(p.T) || math.IsInf(p.T, 0) {
			return bad("series %q point %d has time %v", p.Series, i, p.T)
		}
	}
	for _, h := range r.Histograms {
		switch h.Kind {
		case KindLatency, KindService, KindLag:
		default:
			return bad("histogram %s/%s has kind %q, not one of latency, service, lag", h.Op, h.Class, h.Kind)
		}
	}
	for _, h := range r.Intervals {
		if h.Kind != KindLatency && h.Kind != KindLag {
			return bad("interval histogram at %g s has kind %q, not latency or lag", h.T, h.Kind)
		}
		if math.IsNaN(h.T) || math.IsInf(h.T, 0) || len(h.Encoded) == 0 {
			return bad("interval histogram %s has time %v and %d bytes", h.Kind, h.T, len(h.Encoded))
		}
	}
	return nil
}

// hasSecret reports whether s still contains something the redactor would
// mask. Text the redactor produced is left unchanged by it, so redacted text
// passes.
func hasSecret(s string) bool {
	return s != "" && redact.Patterns(s) != s
}

// jsonHasSecret applies hasSecret to every string (keys included) inside a
// valid JSON value, so that JSON quoting does not blur the check.
func jsonHasSecret(m json.RawMessage) bool {
	if len(m) == 0 {
		return false
	}
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return hasSecret(string(m))
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return hasSecret(x)
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for k, e := range x {
				if hasSecret(k) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// schemaArg stores a summary schema version; 0 (unknown) as NULL.
func schemaArg(v int) any {
	if v <= 0 {
		return nil
	}
	return v
}

func jsonArg(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

func jsonValue(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

func timeToNanos(field string, t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	// int64 nanoseconds since the epoch cover the years 1678 to 2262.
	if y := t.UTC().Year(); y < 1678 || y > 2261 {
		return nil, errs.New(errs.KindInternal, "", "save run: %s %v is out of range", field, t)
	}
	return t.UnixNano(), nil
}

func nanosToTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
