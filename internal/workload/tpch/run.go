package tpch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/tpch/answers"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
	"github.com/tunebench/tunebench/internal/workload/tpch/qgen"
)

// params are the parameters of one run; stored with it.
type params struct {
	Scale        float64       `json:"scale"`
	Test         string        `json:"test"`
	Validate     bool          `json:"validate"`
	Streams      int           `json:"streams"`
	Refresh      bool          `json:"refresh"`
	QueryTimeout time.Duration `json:"query_timeout_ns"`
	Explain      bool          `json:"explain"`
	Analyze      bool          `json:"analyze"`
	Seed         int64         `json:"seed"` // of the substitution parameters
}

type tpchRun struct {
	env  *workload.RunEnv
	db   runDB
	p    params
	meta meta
	// firstStream is the number of the run's first throughput stream (1,
	// or a shard's first of the whole run's), refreshPairs how many RF1
	// and RF2 pairs its refresh stream runs (the whole run's streams).
	firstStream, refreshPairs int
	// windowStart is when a shard's throughput test started, after the
	// shards met: the start of the window it measured.
	windowStart time.Time
}

// NewRun checks that the data is loaded and fits the run.
func (Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	db, err := newRunDB(env.Target)
	if err != nil {
		return nil, err
	}
	m, ok, err := db.readMeta(ctx)
	if err != nil {
		return nil, err
	}
	if !ok || m.Status != statusComplete {
		return nil, errs.Usage("load it first: `tunebench load tpch --scale SF` (an interrupted load resumes when run again)",
			"database %s has no complete TPC-H-like load", env.Target.Describe())
	}
	o := env.Options
	p := params{Scale: m.Scale, Test: o.String("test"), Validate: o.Bool("validate"), Streams: int(o.Int("streams")),
		Refresh: o.Bool("refresh"), QueryTimeout: o.Duration("query_timeout"), Explain: o.Bool("explain"), Analyze: o.Bool("analyze"), Seed: env.Seed}
	if qs := o.Int("query_seed"); qs != 0 {
		p.Seed = qs
	}
	if p.Streams == 0 {
		p.Streams = qgen.MinStreams(p.Scale)
	}
	if p.Validate {
		p.Test, p.Streams, p.Refresh = "validate", 0, false
		if _, ok := answers.Reference(p.Scale, 1); !ok {
			return nil, errs.Usage(fmt.Sprintf("load scale 0.01, 0.1 or 1 to validate (reference answers exist for %s)", scalesText()),
				"no reference answers for scale %g", p.Scale)
		}
		if m.Refreshed() {
			return nil, errs.Usage("reload with `tunebench load tpch --scale "+fmt.Sprint(p.Scale)+" --drop`, and validate before running tests (experiments start each run from a fresh copy)",
				"the refresh functions of earlier runs changed the data (%d update sets inserted, %d deleted): the reference answers no longer apply", m.NextUpdate-1, m.NextDelete-1)
		}
	}
	if p.Refresh {
		pairs := int64(0)
		if p.Test != TestThroughput {
			pairs++
		}
		if p.Test != TestPower {
			pairs += int64(p.Streams)
			if env.Shard.On() {
				pairs = env.Unsharded.Int("streams") // shard 0's refresh stream, for every shard's streams
			}
		}
		base := dbgen.Units(dbgen.Orders, p.Scale)
		if (m.NextDelete-1+pairs)*dbgen.RefreshOrders(p.Scale) > base {
			return nil, errs.Usage("reload with --drop, or run with --refresh=false",
				"the refresh functions have used %d of the %d update sets this scale has", m.NextDelete-1, base/dbgen.RefreshOrders(p.Scale))
		}
	}
	if !p.Validate && p.Test != TestPower {
		maxConn, used, err := db.connections(ctx)
		if err != nil {
			return nil, err
		}
		if need := p.Streams + 2; used+need > maxConn {
			return nil, errs.Usage(fmt.Sprintf("run with --streams %d or fewer, or raise max_connections (--set max_connections=%d)", max(1, maxConn-used-2), used+need+10),
				"%d query streams need %d connections; the server allows %d and %d are in use", p.Streams, need, maxConn, used)
		}
	}
	r := &tpchRun{env: env, db: db, p: p, meta: m, firstStream: 1, refreshPairs: p.Streams}
	if env.Shard.On() {
		// Its part of the whole run's streams, numbered as in the whole
		// run; shard 0 runs the refresh stream's pairs for all of them.
		total := env.Unsharded.Int("streams")
		r.firstStream = int(env.Shard.Offset(total)) + 1
		r.refreshPairs = int(total)
	}
	return r, nil
}

func scalesText() string {
	var s []string
	for _, sf := range answers.Scales() {
		s = append(s, fmt.Sprint(sf))
	}
	return strings.Join(s, ", ")
}

func (r *tpchRun) Describe() string {
	p := r.p
	switch {
	case p.Validate:
		return fmt.Sprintf("tpch validation: the 22 queries with the validation parameters at scale %g", p.Scale)
	case p.Test == TestPower:
		return fmt.Sprintf("tpch power test at scale %g (seed %d)", p.Scale, p.Seed)
	}
	return fmt.Sprintf("tpch %s test at scale %g, %d query streams (seed %d)", p.Test, p.Scale, p.Streams, p.Seed)
}

func (r *tpchRun) Variant() string { return r.p.Test }
func (r *tpchRun) Params() any     { return r.p }

// QueryRun is one execution of a query.
type QueryRun struct {
	Stream  int      `json:"stream"` // 0: the power test (or validation)
	Query   int      `json:"query"`
	Params  []string `json:"params"`
	Seconds float64  `json:"seconds"`
	Rows    int64    `json:"rows"`
	Status  string   `json:"status"` // ok, timeout, error, interrupted
	Error   string   `json:"error,omitempty"`
	EndS    float64  `json:"end_s"` // since the run's start
}

// Query statuses.
const (
	statusOK          = "ok"
	statusTimeout     = "timeout"
	statusError       = "error"
	statusInterrupted = "interrupted"
)

// runDB is a run's database in the target's dialect: pgRunDB on pgx
// (below), mariaRunDB on the target's admin connections
// (run_mariadb.go).
type runDB interface {
	// readMeta reads the meta row; ok is false when there is none.
	readMeta(ctx context.Context) (m meta, ok bool, err error)
	// connections are the server's limit of connections and those in use.
	connections(ctx context.Context) (limit, used int, err error)
	// conn opens a connection for queries, each of which ends with an
	// error once it has run for timeout (0: the server's default), and
	// for the refresh functions, which have no time limit.
	conn(ctx context.Context, timeout time.Duration) (queryConn, error)
	// analyze gathers the tables' statistics.
	analyze(ctx context.Context) error
}

// queryConn is one connection of a run.
type queryConn interface {
	// query runs q and reads its whole result; with collect it returns
	// the rows as text, as the reference answers write them.
	query(ctx context.Context, q qgen.Query, collect bool) (rows int64, out [][]string, err error)
	// timedOut reports an error of a query that reached its time limit.
	timedOut(err error) bool
	// explain is q's plan with what its execution measured, and the plan's
	// shape (PlanShape).
	explain(ctx context.Context, q qgen.Query) (text, shape string, err error)
	rf1(ctx context.Context, gen *dbgen.Generator) (RefreshRun, error)
	rf2(ctx context.Context, sf float64) (RefreshRun, error)
	close(ctx context.Context)
}

// newRunDB is the run's database for t's dialect.
func newRunDB(t target.Target) (runDB, error) {
	if t.Dialect() == DialectMariaDB {
		return newMariaRunDB(t)
	}
	p, err := pgt.From(t)
	if err != nil {
		return nil, err
	}
	return pgRunDB{p}, nil
}

// pgRunDB is PostgreSQL's, on pgx.
type pgRunDB struct{ t *pgt.Target }

func (d pgRunDB) readMeta(ctx context.Context) (meta, bool, error) {
	conn, err := d.t.Connect(ctx)
	if err != nil {
		return meta{}, false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return readMeta(ctx, conn)
}

func (d pgRunDB) connections(ctx context.Context) (limit, used int, err error) {
	conn, err := d.t.Connect(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = conn.QueryRow(ctx, "select current_setting('max_connections')::int, (select count(*) from pg_stat_activity)").Scan(&limit, &used)
	return limit, used, err
}

func (d pgRunDB) analyze(ctx context.Context) error {
	return parallel(ctx, d.t.Connect, 2, analyzeDDL())
}

func (d pgRunDB) conn(ctx context.Context, timeout time.Duration) (queryConn, error) {
	conn, err := d.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// Dates as the reference answers write them, whatever the server's
	// default DateStyle.
	if _, err := conn.Exec(ctx, "set datestyle = 'ISO, YMD'"); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if timeout > 0 {
		if _, err := conn.Exec(ctx, fmt.Sprintf("set statement_timeout = %d", timeout.Milliseconds())); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return pgConn{conn}, nil
}

// pgConn is a connection of a run on PostgreSQL.
type pgConn struct{ conn *pgx.Conn }

func (c pgConn) query(ctx context.Context, q qgen.Query, collect bool) (n int64, out [][]string, err error) {
	rows, err := c.conn.Query(ctx, q.SQL, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return 0, nil, err
	}
	for rows.Next() {
		n++
		if collect {
			raw := rows.RawValues()
			row := make([]string, len(raw))
			for i, v := range raw {
				row[i] = string(v)
			}
			out = append(out, row)
		}
	}
	rows.Close()
	return n, out, rows.Err()
}

func (c pgConn) timedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

func (c pgConn) explain(ctx context.Context, q qgen.Query) (string, string, error) {
	rows, err := c.conn.Query(ctx, "explain (analyze, buffers) "+q.SQL, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", "", err
	}
	var lines []string
	for rows.Next() {
		lines = append(lines, string(rows.RawValues()[0]))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	text := strings.Join(lines, "\n")
	return text, PlanShape(text), nil
}

func (c pgConn) rf1(ctx context.Context, gen *dbgen.Generator) (RefreshRun, error) {
	return rf1(ctx, c.conn, gen)
}
func (c pgConn) rf2(ctx context.Context, sf float64) (RefreshRun, error) { return rf2(ctx, c.conn, sf) }
func (c pgConn) close(ctx context.Context)                               { c.conn.Close(context.WithoutCancel(ctx)) }

// session is one connection that runs queries.
type session struct {
	conn    queryConn
	start   time.Time
	collect bool
}

// session opens a connection for queries (with the run's query timeout
// when timeout).
func (r *tpchRun) session(ctx context.Context, timeout bool) (*session, error) {
	var limit time.Duration
	if timeout {
		limit = r.p.QueryTimeout
	}
	conn, err := r.db.conn(ctx, limit)
	if err != nil {
		return nil, err
	}
	return &session{conn: conn}, nil
}

// run executes a query and reads its whole result (the timing includes
// the transfer of the last row, clause 5.3.7); with collect it keeps the
// rows as text.
func (s *session) run(ctx context.Context, stream int, q qgen.Query) (QueryRun, [][]string) {
	qr := QueryRun{Stream: stream, Query: q.N, Params: q.Params}
	t0 := time.Now()
	n, out, err := s.conn.query(ctx, q, s.collect)
	end := time.Now()
	qr.Rows = n
	qr.Seconds = end.Sub(t0).Seconds()
	qr.EndS = end.Sub(s.start).Seconds()
	qr.Status = statusOK
	if err != nil {
		switch {
		case ctx.Err() != nil:
			qr.Status = statusInterrupted
		case s.conn.timedOut(err):
			qr.Status = statusTimeout
		default:
			qr.Status = statusError
		}
		qr.Error = err.Error()
	}
	return qr, out
}

func (s *session) close(ctx context.Context) { s.conn.close(ctx) }

// result gathers a run's executions.
type result struct {
	mu      sync.Mutex
	queries []QueryRun
	refresh []RefreshRun
	checks  []QueryCheck
	plans   []Plan
	hists   map[string]*metrics.Hist
}

func (res *result) addQuery(q QueryRun) {
	res.mu.Lock()
	defer res.mu.Unlock()
	res.queries = append(res.queries, q)
	if q.Status == statusOK {
		op := queryOp(q.Query)
		if res.hists[op] == nil {
			res.hists[op] = metrics.NewHist()
		}
		res.hists[op].Record(time.Duration(q.Seconds * float64(time.Second)))
	}
}

func (res *result) addRefresh(rr RefreshRun) {
	res.mu.Lock()
	defer res.mu.Unlock()
	res.refresh = append(res.refresh, rr)
	if rr.Error == "" {
		if res.hists[rr.Function] == nil {
			res.hists[rr.Function] = metrics.NewHist()
		}
		res.hists[rr.Function].Record(time.Duration(rr.Seconds * float64(time.Second)))
	}
}

// Measure runs the validation or the tests.
func (r *tpchRun) Measure(ctx context.Context) (*workload.Measured, error) {
	p, note := r.p, r.env.Note
	var gen *dbgen.Generator
	if p.Refresh {
		note("tpch: preparing the update-set generator (text pool)")
		gen = dbgen.New(p.Scale, dbgen.COPY)
	}
	env := r.env.Target.Env(ctx, r.env.Version)
	res := &result{hists: map[string]*metrics.Hist{}}
	x := &Summary{Scale: p.Scale, Test: p.Test, Streams: p.Streams, Seed: p.Seed, Refresh: p.Refresh}
	if r.env.Shard.On() {
		x.StreamsOfRun = r.refreshPairs
	}
	if p.Analyze {
		note("tpch: analyze (not timed)")
		if err := r.db.analyze(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, errs.New(errs.KindInterrupted, "", "interrupted during the ANALYZE before the test; nothing was measured")
			}
			return nil, err
		}
	}
	start := time.Now()
	var err error
	switch {
	case p.Validate:
		err = r.validate(ctx, res, start)
	default:
		if p.Test != TestThroughput {
			err = r.power(ctx, gen, res, start, x)
		}
		if err == nil && ctx.Err() == nil && p.Test != TestPower {
			err = r.throughput(ctx, gen, res, start, x)
		}
		if err == nil && ctx.Err() == nil && p.Explain {
			err = r.explain(ctx, res)
		}
	}
	ended := time.Now()
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted && !errors.Is(err, errRefresh) {
		return nil, err
	}
	if errors.Is(err, errRefresh) {
		note("tpch: %v; the test stopped there (the result is saved with status errors)", err)
	}
	x.fill(res)
	if !r.windowStart.IsZero() {
		start = r.windowStart
	}
	sum := &results.Summary{SchemaVersion: results.SchemaVersion, StartedAt: start.UTC(), EndedAt: ended.UTC(), Interrupted: interrupted, Extra: x}
	switch {
	case interrupted:
		sum.Status = store.StatusInterrupted
	case x.Failed > 0:
		sum.Status = store.StatusFailed
	case x.Errors+x.TimedOut > 0:
		sum.Status = store.StatusErrors
	default:
		sum.Status = store.StatusOK
	}
	m := &workload.Measured{Summary: sum, Env: env, Series: series(res)}
	ops := make([]string, 0, len(res.hists))
	for op := range res.hists {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		h, err := results.EncodeHist(op, "ok", store.KindLatency, res.hists[op])
		if err != nil {
			return nil, err
		}
		if h != nil {
			m.Histograms = append(m.Histograms, *h)
		}
	}
	if p.Validate {
		m.Check = res.checks
	}
	m.Exit = func(id int64) error {
		switch {
		case interrupted:
			return errs.New(errs.KindInterrupted, "", "tpch run interrupted; partial result saved as run %d (status interrupted)", id)
		case x.Failed > 0:
			return errs.New(errs.KindCheckFailed, "the lines above name each differing row and column; check the server's settings and the load (tunebench check tpch)",
				"tpch validation failed after run %d: %d of 22 answers differ from the reference", id, x.Failed)
		case x.Errors+x.TimedOut > 0:
			return errs.New(errs.KindRunErrors, "see the errors above; raise --query-timeout if queries timed out",
				"tpch run %d: %d queries or refresh functions failed and %d queries timed out (no metric is computed from an incomplete test)", id, x.Errors, x.TimedOut)
		}
		return nil
	}
	return m, nil
}

// series is the queries' time line: each query's time at its end.
func series(res *result) []store.Point {
	var out []store.Point
	for _, q := range res.queries {
		if q.Status == statusOK {
			out = append(out, store.Point{Series: "query_s", T: q.EndS, V: q.Seconds})
		}
	}
	return out
}

// QueryCheck is one query's validation.
type QueryCheck struct {
	Query int `json:"query"`
	// Compared: the query ran and its answer was compared (a query that
	// failed or timed out is an error of the run, not a wrong answer).
	Compared bool    `json:"compared"`
	Passed   bool    `json:"passed"`
	Rows     int64   `json:"rows"`
	Seconds  float64 `json:"seconds"`
	Detail   string  `json:"detail,omitempty"`
}

// validate runs the 22 queries with the validation parameters and compares
// each answer with the reference.
func (r *tpchRun) validate(ctx context.Context, res *result, start time.Time) error {
	s, err := r.session(ctx, true)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	s.start, s.collect = start, true
	for q := 1; q <= 22; q++ {
		qv := qgen.Validation(q, r.p.Scale)
		qr, rows := s.run(ctx, 0, qv)
		res.addQuery(qr)
		c := QueryCheck{Query: q, Rows: qr.Rows, Seconds: qr.Seconds}
		if qr.Status != statusOK {
			c.Detail = qr.Status + ": " + qr.Error
		} else {
			c.Compared = true
			ref, _ := answers.Reference(r.p.Scale, q)
			if err := answers.Compare(q, ref, rows); err != nil {
				c.Detail = err.Error()
			} else {
				c.Passed = true
			}
		}
		res.checks = append(res.checks, c)
		mark := "ok"
		switch {
		case !c.Compared:
			mark = strings.ToUpper(c.Detail)
		case !c.Passed:
			mark = "DIFFERS: " + c.Detail
		}
		r.env.Note("validate Q%-2d %8.2f s %7d rows  %s", q, qr.Seconds, qr.Rows, mark)
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// power is the power test (clause 5.3.3): RF1, stream 0's 22 queries, RF2,
// on one session.
func (r *tpchRun) power(ctx context.Context, gen *dbgen.Generator, res *result, start time.Time, x *Summary) error {
	s, err := r.session(ctx, true)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	s.start = start
	t0 := time.Now()
	if r.p.Refresh {
		if err := r.refresh(ctx, s.conn, gen, res, 0, "RF1"); err != nil {
			return err
		}
	}
	qs := qgen.Stream(r.p.Seed, 0, r.p.Scale)
	for i, q := range qs {
		qr, _ := s.run(ctx, 0, q)
		res.addQuery(qr)
		r.env.Note("power  Q%-2d %8.2f s %7d rows  (%d/22)%s", q.N, qr.Seconds, qr.Rows, i+1, statusNote(qr))
		if ctx.Err() != nil {
			return nil
		}
	}
	if r.p.Refresh {
		if err := r.refresh(ctx, s.conn, gen, res, 0, "RF2"); err != nil {
			return err
		}
	}
	x.PowerSeconds = time.Since(t0).Seconds()
	return nil
}

func statusNote(q QueryRun) string {
	if q.Status == statusOK {
		return ""
	}
	return "  " + strings.ToUpper(q.Status) + ": " + q.Error
}

// errRefresh marks a failed refresh function: the test stops, and what it
// measured is saved with status errors.
var errRefresh = errors.New("refresh function failed")

// refresh runs one refresh function; an error other than an interrupt is
// recorded and returned (wrapping errRefresh).
func (r *tpchRun) refresh(ctx context.Context, conn queryConn, gen *dbgen.Generator, res *result, stream int, fn string) error {
	var rr RefreshRun
	var err error
	if fn == "RF1" {
		rr, err = conn.rf1(ctx, gen)
	} else {
		rr, err = conn.rf2(ctx, r.p.Scale)
	}
	rr.Stream = stream
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		rr.Error = err.Error()
		res.addRefresh(rr)
		return fmt.Errorf("%w: %s: %w", errRefresh, fn, err)
	}
	res.addRefresh(rr)
	r.env.Note("%-6s %s %8.2f s  set %d: %d orders, %d lineitems", streamName(stream), fn, rr.Seconds, rr.Set, rr.Orders, rr.Lines)
	return nil
}

// refreshStream is the stream number of the throughput test's refresh
// stream.
const refreshStream = -1

func streamName(s int) string {
	switch s {
	case 0:
		return "power"
	case refreshStream:
		return "refresh"
	}
	return fmt.Sprintf("s%d", s)
}

// throughput is the throughput test (clause 5.3.4): S query streams, each
// on its own session in its own order with its own parameters, next to a
// refresh stream running S RF1/RF2 pairs; Ts runs from the first start to
// the last end.
func (r *tpchRun) throughput(ctx context.Context, gen *dbgen.Generator, res *result, start time.Time, x *Summary) error {
	S := r.p.Streams
	sessions := make([]*session, S)
	for i := range sessions {
		s, err := r.session(ctx, true)
		if err != nil {
			for _, o := range sessions[:i] {
				o.close(ctx)
			}
			return err
		}
		s.start = start
		sessions[i] = s
	}
	defer func() {
		for _, s := range sessions {
			s.close(ctx)
		}
	}()
	var rconn queryConn
	if r.p.Refresh {
		c, err := r.db.conn(ctx, 0)
		if err != nil {
			return err
		}
		defer c.close(ctx)
		rconn = c
	}
	if r.env.Ready != nil {
		// A shard: the shards start their streams together.
		if err := r.env.Ready(ctx); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if r.env.Shard.On() {
		// A shard's window is its throughput test: its queries' times
		// are from its start, as the merge puts them on one axis.
		r.windowStart = t0
		for _, s := range sessions {
			s.start = t0
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := r.firstStream + i
			qs := qgen.Stream(r.p.Seed, stream, r.p.Scale)
			for k, q := range qs {
				qr, _ := s.run(ctx, stream, q)
				res.addQuery(qr)
				r.env.Note("s%-5d Q%-2d %8.2f s %7d rows  (%d/22)%s", stream, q.N, qr.Seconds, qr.Rows, k+1, statusNote(qr))
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	if r.p.Refresh {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range r.refreshPairs {
				for _, fn := range []string{"RF1", "RF2"} {
					if err := r.refresh(ctx, rconn, gen, res, refreshStream, fn); err != nil {
						select {
						case errc <- err:
						default:
						}
						return
					}
					if ctx.Err() != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	x.ThroughputSeconds = time.Since(t0).Seconds()
	select {
	case err := <-errc:
		return err
	default:
	}
	return nil
}

// Plan is one query's plan.
type Plan struct {
	Query int    `json:"query"`
	Shape string `json:"shape"` // the plan's nodes, without costs or times
	Text  string `json:"text"`  // EXPLAIN (ANALYZE, BUFFERS); on MariaDB ANALYZE FORMAT=JSON
}

// explain stores EXPLAIN (ANALYZE, BUFFERS) of stream 0's queries, in query
// order.
func (r *tpchRun) explain(ctx context.Context, res *result) error {
	s, err := r.session(ctx, true)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	qs := qgen.Stream(r.p.Seed, 0, r.p.Scale)
	sort.Slice(qs, func(i, j int) bool { return qs[i].N < qs[j].N })
	for _, q := range qs {
		text, shape, err := s.conn.explain(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.env.Note("explain Q%d: %v", q.N, err)
			continue
		}
		res.plans = append(res.plans, Plan{Query: q.N, Text: text, Shape: shape})
		r.env.Note("explain Q%-2d stored (%d lines)", q.N, strings.Count(text, "\n")+1)
	}
	return nil
}

// PlanShape reduces a text plan to its nodes and their nesting, without
// costs, row counts, times or buffers: two plans with the same shape are
// the same plan.
func PlanShape(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		isNode := strings.HasPrefix(trimmed, "->")
		if !isNode && indent > 0 {
			continue // a detail line: Filter, Buffers, Sort Key ...
		}
		if !isNode && (strings.HasPrefix(trimmed, "Planning") || strings.HasPrefix(trimmed, "Execution") || strings.HasPrefix(trimmed, "JIT")) {
			continue
		}
		name := strings.TrimSpace(strings.TrimPrefix(trimmed, "->"))
		if i := strings.Index(name, "  ("); i >= 0 {
			name = name[:i]
		}
		if name == "" {
			continue
		}
		out = append(out, fmt.Sprintf("%d:%s", indent, name))
	}
	return strings.Join(out, "\n")
}
