package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/target"
	pgt "github.com/tunebench/tunebench/internal/target/pg"
	"github.com/tunebench/tunebench/internal/workload"
)

// Workload runs pgbench script files (`tunebench run script -f FILE`).
type Workload struct{}

// New returns the workload for the registry.
func New() workload.Workload { return Workload{} }

// Meta describes the workload; its operations are the scripts, named
// after their files.
func (Workload) Meta() workload.Meta {
	return workload.Meta{
		Name:        "script",
		Description: "pgbench script files, unchanged: weights, \\set expressions, \\if, \\gset, pipelines; per-script and per-statement latency",
		Version:     "1",
		Dialects:    []string{pgt.Dialect, DialectMariaDB},
	}
}

// Options declares the run's options.
func (Workload) Options() option.Set {
	return append(option.Set{
		{Name: "init_file", Kind: option.KindString, Default: "", Load: true, Rebase: rebasePath,
			Doc: "an SQL file that builds the scripts' tables and data, run once by the load (its statements one by one; no psql meta-commands)"},
		{Name: "file", Short: "f", Kind: option.KindList, Validate: checkFiles, Rebase: rebaseFiles,
			Doc: "a pgbench script file, FILE or FILE@WEIGHT (repeat the flag, or separate with commas, for several; each transaction runs one, picked by weight)"},
		{Name: "define", Short: "D", Kind: option.KindList, Validate: checkDefines,
			Doc: "a variable every client starts with, NAME=VALUE (as pgbench -D; repeat the flag for several; a value cannot hold a comma)"},
		{Name: "scale", Short: "s", Kind: option.KindInt, Default: "0", HasMin: true,
			Doc: "the value of :scale (0 = the rows of pgbench_branches when it exists, else 1; -D scale=N also sets it)"},
		{Name: "allow_shell", Kind: option.KindBool, Default: "false",
			Doc: "let the scripts run commands on this machine (\\shell, \\setshell)"},
		{Name: "follow_server", Kind: option.KindString, Default: "auto", Enum: []string{"auto", "on", "off"},
			Doc: "closed loop, with fewer threads than clients and one per CPU: pin each thread to a CPU and serve each connection from the thread on its server process's CPU (auto: on when every statement is a SELECT, on PostgreSQL; off on MariaDB, whose connection threads move between CPUs)"},
		{Name: "max_tries", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true,
			Doc: "tries per transaction for serialization failures and deadlocks, the script run again from its start with the same random values (1 = no retry)"},
	}, scriptTxOptions()...)
}

// scriptTxOptions are the executor's options in the script's words.
func scriptTxOptions() option.Set {
	set := workload.TxOptions()
	for name, doc := range map[string]string{
		"threads":      "driver threads serving the clients, as pgbench -j (0 = one per core, one per 4 cores for a MariaDB on this machine; at most one per client); scripts with \\sleep or \\shell get a thread per client",
		"transactions": "transactions (script runs) per client, instead of a duration; with a rate, the schedule's clients x this many starts, each run or skipped (pgbench -t with -R)",
		"seed":         "random seed, as pgbench --random-seed (0 = from the clock; stored with the run)",
	} {
		if o, ok := set.Lookup(name); ok {
			o.Doc = doc
		}
	}
	return set
}

// checkFiles checks each FILE[@W] item's form (the files are read by
// Validate and the run).
func checkFiles(text string) (string, error) {
	for _, it := range option.SplitList(text) {
		if _, err := ParseFileSpec(it); err != nil {
			return "", option.Errorf("write {file} as FILE or FILE@WEIGHT, the weight a whole number", "{file}: "+err.Error())
		}
	}
	return text, nil
}

// rebaseFiles makes relative script paths relative to dir (an experiment
// file's directory).
func rebaseFiles(text, dir string) string {
	items := option.SplitList(text)
	for i, it := range items {
		f, err := ParseFileSpec(it)
		if err != nil || filepath.IsAbs(f.Path) {
			continue
		}
		// The weight as written, if any (FILE@05 stays @05).
		items[i] = filepath.Join(dir, f.Path) + it[len(f.Path):]
	}
	return strings.Join(items, ",")
}

// rebasePath makes a relative path relative to dir.
func rebasePath(text, dir string) string {
	if text == "" || filepath.IsAbs(text) {
		return text
	}
	return filepath.Join(dir, text)
}

func checkDefines(text string) (string, error) {
	for _, it := range option.SplitList(text) {
		if _, err := ParseDefine(it); err != nil {
			return "", option.Errorf("write {define} as NAME=VALUE", "{define}: "+err.Error())
		}
	}
	return text, nil
}

// specs are the --file and --define items.
func specs(o option.Values) ([]FileSpec, []Define) {
	var files []FileSpec
	for _, it := range option.SplitList(o.String("file")) {
		f, _ := ParseFileSpec(it)
		files = append(files, f)
	}
	var defs []Define
	for _, it := range option.SplitList(o.String("define")) {
		d, _ := ParseDefine(it)
		defs = append(defs, d)
	}
	return files, defs
}

// Validate requires a script and parses the scripts, so a syntax error
// stops a command (or an experiment's plan) before anything runs.
func (Workload) Validate(p option.Phase, v option.Values, given option.Given) error {
	if p != option.PhaseRun {
		return nil
	}
	if v.String("file") == "" {
		return &option.Error{Msg: "no script file: {file} is required", Hint: "give {file} FILE[@WEIGHT], e.g. {file} examples/scripts/tpcb-like.sql"}
	}
	files, defs := specs(v)
	_, err := loadProgram(files, defs, v.Bool("allow_shell"))
	return err
}

// LoadHelp is the help of `tunebench load script`.
func (Workload) LoadHelp() workload.Help {
	return workload.Help{
		Use:   "--init-file FILE.sql",
		Short: "Build the scripts' tables and data with an SQL file",
		Long: `Runs the SQL file's statements once, one by one, each in its own transaction unless
the file opens one (CREATE TABLE, INSERT ... SELECT generate_series, CREATE INDEX,
VACUUM, ...), so an experiment can build the data its scripts need in each fresh
database. Variables (:name) are not substituted. examples/scripts/pgbench-tables.sql builds
pgbench's tables; or load them with ` + "`tunebench load tpcb`" + ` or pgbench -i.`,
	}
}

// Load runs the init file.
func (Workload) Load(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	file := env.Options.String("init_file")
	if file == "" {
		return nil, errs.Usage("give --init-file FILE.sql with the statements that build the scripts' tables", "nothing to load: no init file")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, errs.Usage("give the path of an SQL file", "init file %s: %v", file, err)
	}
	// The statements one by one, each in its own transaction unless the
	// file makes one (VACUUM and CREATE INDEX CONCURRENTLY need that).
	if err := textFile(file, b); err != nil {
		return nil, err
	}
	parsed, err := Parse(file, string(b), NewScope(), ParseOptions{})
	if err != nil {
		return nil, usageOf(err)
	}
	for _, c := range parsed.Commands {
		if c.Kind != CmdSQL {
			return nil, errs.Usage("an init file is SQL statements only: remove the meta-command", "%s:%d: %s in an init file", file, c.Line, oneLine(c.Text, 40))
		}
	}
	exec, done, err := initExec(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	defer done()
	env.Note("loading %s into %s (%d statements)", file, env.Target.Describe(), len(parsed.Commands))
	start := time.Now()
	for i, c := range parsed.Commands {
		env.Progress(workload.LoadProgress{What: fmt.Sprintf("statement %d of %d, line %d", i+1, len(parsed.Commands), c.Line),
			Frac: float64(i) / float64(len(parsed.Commands)), ETA: -1, Elapsed: time.Since(start)})
		if err := exec(ctx, c.Text); err != nil {
			if ctx.Err() != nil {
				return nil, errs.Wrap(errs.KindInterrupted, err, "load again (an experiment loads into a fresh database)", "load interrupted")
			}
			return nil, errs.Wrap(errs.KindUsage, err, "fix the statement; the ones before it ran", "%s:%d: %s", file, c.Line, oneLine(c.Text, 60))
		}
	}
	el := time.Since(start)
	env.Progress(workload.LoadProgress{What: "done", Frac: 1, ETA: 0, Elapsed: el, Final: true})
	return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("done in %.2f s (%s)", el.Seconds(), file))}}, nil
}

// RunHelp is the help of `tunebench run script`.
func (Workload) RunHelp() workload.Help {
	return workload.Help{
		Use:   "--file FILE[@WEIGHT] ... [--define NAME=VALUE ...] --clients N (--duration D | --transactions T) [--rate R]",
		Short: "Run pgbench script files and store per-script and per-statement latency",
		Long: `Runs pgbench-format script files unchanged (docs/scripts.md): SQL commands, and the
meta-commands \set (pgbench's expression language and random functions), \sleep,
\if/\elif/\else/\endif, \gset/\aset, \startpipeline/\syncpipeline/\endpipeline, and
with --allow-shell \shell/\setshell. Each transaction runs one script, picked by the
weights (FILE@WEIGHT), as pgbench does. Every SQL command is prepared once per
connection and sent with the variables as parameters (pgbench -M prepared); a
compound command (statements joined with \;) goes as one string with the variables
written in (pgbench's default simple protocol). debug() values go to stderr and
\shell output passes through, as pgbench prints them.

The variables :scale, :client_id, :random_seed and :default_seed are set as pgbench
sets them; the same --seed (pgbench's --random-seed) draws the same values. :scale
is --scale, or -D scale=N, or else the rows of pgbench_branches (1 without it).

Closed loop by default; --rate R runs the open loop (Poisson schedule, latency from
the scheduled start, --latency-limit), for a duration or, with -t, until each client's
count of transactions has run or been skipped. The result has the whole run's figures, each
script's (transactions, latency percentiles, errors) and each statement's (count,
latency percentiles from send to reply, errors by SQLSTATE). A script error (an
expression that fails, an undefined variable, a \gset without its one row) stops the
run naming the file, the line and the command (exit code 2; the run is stored with
status failed). Exit code 4 when errors exceed
--max-errors-pct, 130 when interrupted.`,
		Example: `  tunebench run script --server-dir ./pg -f examples/scripts/tpcb-like.sql -c 8 -T 1m
  tunebench run script --server-dir ./pg -f reads.sql@9 -f writes.sql@1 -D skew=1.2 -R 500`,
	}
}

// Headline: tps against clients.
func (Workload) Headline() workload.Headline {
	return workload.Headline{Metric: "tps", Label: "tps", Unit: "tps (transactions per second)", XAxis: "clients"}
}

// RunTime: the duration and warm-up (unknown with a transaction count).
func (w Workload) RunTime(o option.Values) (time.Duration, bool) {
	return workload.RunTimeByRoles(w, o)
}

// LoadTime and DataBytes: what an init file does is not known in advance
// (a guess of 10 s, and no size).
func (Workload) LoadTime(option.Values) time.Duration { return 10 * time.Second }
func (Workload) DataBytes(option.Values) int64        { return 0 }

// fileParam is one script as stored with the run: its text too, so the
// run can be understood (and repeated) without the file.
type fileParam struct {
	Path   string `json:"path"`
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	SHA256 string `json:"sha256"`
	Text   string `json:"text"`
}

// params are the run's parameters as stored.
type params struct {
	Files      []fileParam `json:"files"`
	Defines    []string    `json:"defines,omitempty"`
	Scale      int64       `json:"scale"`
	ScaleFrom  string      `json:"scale_from"` // option, define, pgbench_branches, default
	AllowShell bool        `json:"allow_shell"`
	workload.TxParams
}

// scriptRun is one prepared run.
type scriptRun struct {
	t    target.Target
	ss   target.Sessions
	p    params
	exec option.Exec
	prog *program

	workers []*Worker
}

// NewRun reads and compiles the scripts and finds :scale.
func (w Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	t := env.Target
	ss, ok := t.(target.Sessions)
	if !ok {
		return nil, errs.Usage("run scripts on PostgreSQL or MariaDB", "the target %s runs no sessions", t.Describe())
	}
	o := env.Options
	x := option.ExecOf(w.Options().Phase(option.PhaseRun), o)
	files, defs := specs(o)
	prog, err := loadProgram(files, defs, o.Bool("allow_shell"))
	if err != nil {
		return nil, err
	}
	prog.stdout, prog.stderr = env.Stdout, env.Stderr
	r := &scriptRun{t: t, ss: ss, exec: x, prog: prog}
	r.p = params{AllowShell: o.Bool("allow_shell"), TxParams: workload.TxParamsOf(x, o, env.Seed)}
	for i, f := range files {
		r.p.Files = append(r.p.Files, fileParam{Path: f.Path, Name: prog.ops[i], Weight: f.Weight, SHA256: prog.sha[i], Text: prog.texts[i]})
	}
	for _, d := range defs {
		r.p.Defines = append(r.p.Defines, d.Name+"="+d.Value)
	}
	if r.p.Scale, r.p.ScaleFrom, err = findScale(ctx, t, o.Int("scale"), prog); err != nil {
		return nil, err
	}
	if r.p.ScaleFrom == "default" && usesScale(prog) {
		env.Note("note: :scale is 1 (no pgbench_branches table, no --scale): give --scale N if the scripts use another")
	}
	prog.start(r.p.Scale, env.Seed, x.Workers, r.p.MaxTries)
	return r, nil
}

// findScale is :scale's value and where it comes from.
func findScale(ctx context.Context, t target.Target, opt int64, prog *program) (int64, string, error) {
	if text, ok := prog.define(varScale); ok {
		// The variable is the text; the summary records its number.
		v, err := ParseValue(text)
		n, err2 := v.toInt()
		if err != nil || err2 != nil {
			n = 0
		}
		return n, "define", nil
	}
	if opt > 0 {
		return opt, "option", nil
	}
	if !usesScale(prog) {
		// Nothing reads :scale: the database is not asked (a role may
		// not read pgbench_branches).
		return 1, "default", nil
	}
	n, err := branches(ctx, t)
	switch {
	case err == nil && n > 0:
		return n, "pgbench_branches", nil
	case err == nil:
		return 1, "default", nil
	}
	return 0, "", errs.Wrap(errs.KindConnect, err, "give --scale N", "reading the scale from pgbench_branches in %s", t.Describe())
}

// usesScale reports whether a script reads :scale.
func usesScale(p *program) bool {
	for _, s := range p.scripts {
		for _, c := range s.Commands {
			if usesVar(c.Text, varScale) {
				return true
			}
		}
	}
	return false
}

// Describe is the header line.
func (r *scriptRun) Describe() string {
	var parts []string
	for _, f := range r.p.Files {
		parts = append(parts, fmt.Sprintf("%s@%d", f.Name, f.Weight))
	}
	mode := "closed loop"
	if r.p.Rate > 0 {
		mode = fmt.Sprintf("open loop at %.1f tps", r.p.Rate)
	}
	length := r.p.Duration.String()
	if r.p.Transactions > 0 {
		length = fmt.Sprintf("%d transactions per client", r.p.Transactions)
	}
	threads := target.DriverThreads(r.ss, r.p.Threads, r.p.Clients)
	if !r.prog.mux {
		threads = r.p.Clients
	}
	scale := fmt.Sprintf("scale %d", r.p.Scale)
	if r.p.ScaleFrom == "define" {
		scale = "scale from -D"
	}
	return fmt.Sprintf("script %s (%s, max tries %d): %s, %d clients on %d threads, %s, %s, %s",
		strings.Join(parts, " "), r.protocol(), r.p.MaxTries, scale, r.p.Clients, threads, length, mode, r.t.Describe())
}

// protocol is how the statements go: prepared, and compound commands by
// the simple query protocol.
func (r *scriptRun) protocol() string {
	proto := "prepared"
	if len(r.prog.stmts) > target.MaxPrepared {
		// target.MaxPrepared: the first ones prepared at first use and
		// kept, the others parsed each time they run.
		proto = fmt.Sprintf("prepared at first use (%d kept)", target.MaxPrepared)
	}
	for _, i := range r.prog.prep {
		if i < 0 {
			return proto + "+simple"
		}
	}
	return proto
}

// Variant is the scripts and their weights.
func (r *scriptRun) Variant() string {
	var parts []string
	for _, f := range r.p.Files {
		if len(r.p.Files) == 1 {
			parts = append(parts, f.Name)
		} else {
			parts = append(parts, fmt.Sprintf("%s@%d", f.Name, f.Weight))
		}
	}
	return strings.Join(parts, "+")
}

func (r *scriptRun) Params() any { return r.p }

// Exec: one worker per client, multiplexed on the threads unless a script
// blocks (Worker.Multiplex declines then); per-statement results are
// recorded over the measured window only.
func (r *scriptRun) Exec() workload.Exec {
	x := r.exec
	x.Threads = target.DriverThreads(r.ss, r.p.Threads, r.p.Clients)
	if !r.prog.mux {
		// A script that blocks its client (\sleep, \shell) has a
		// thread per client (Worker.Multiplex declines).
		x.Threads = r.p.Clients
	}
	return workload.Exec{Exec: x, NewThread: r.ss.NewThread, FollowServer: r.follow(),
		OnMeasureStart: func() { r.prog.measuring.Store(true) },
		OnMeasureEnd:   func() { r.prog.measuring.Store(false) }}
}

// follow resolves --follow-server: auto turns it on when every statement
// of the scripts is a SELECT, as tpcb's auto does for select-only: each
// server process then keeps to its CPU; where they wait on row locks and
// WAL flushes they move, and pinned threads were measured slower.
func (r *scriptRun) follow() bool {
	switch r.p.FollowServer {
	case "on":
		return true
	case "off":
		return false
	}
	return r.prog.selects && target.FollowsServer(r.ss)
}

func (r *scriptRun) Before(context.Context) error { return nil }

func (r *scriptRun) NewWorker(ctx context.Context, id int) (workload.Worker, error) {
	w, err := newWorker(ctx, r.ss, r.prog, id)
	if err != nil {
		return nil, err
	}
	r.workers = append(r.workers, w)
	return w, nil
}

// After gathers the per-script and per-statement results.
func (r *scriptRun) After(_ context.Context, res *run.Result, sum *results.Summary) (*workload.Verdict, error) {
	sum.Script, sum.Scale, sum.Protocol = r.Variant(), int(r.p.Scale), r.protocol()
	secs := 0.0
	if sum.Measured != nil {
		secs = sum.DurationS
	}
	x := &Summary{ScaleFrom: r.p.ScaleFrom}
	p := r.prog
	for i, f := range r.p.Files {
		sr := ScriptResult{Name: f.Name, File: f.Path, Weight: f.Weight, Statements: []StmtResult{}}
		h := metrics.NewHist()
		for _, o := range res.Ops {
			if o.Op != f.Name {
				continue
			}
			switch {
			case o.Class.Committed():
				sr.Transactions += o.Count
				h.Merge(o.Latency)
			case o.Class.IsError():
				sr.Errors += o.Count
			}
		}
		sr.LatencyMs = results.LatencyOf(h)
		if secs > 0 {
			sr.TPS = float64(sr.Transactions) / secs
		}
		for si, info := range p.info {
			if info.Script != i {
				continue
			}
			if !p.perStmt {
				sr.StatementsNotKept++
				continue
			}
			st := StmtResult{Line: info.Line, Command: info.Text}
			sh := metrics.NewHist()
			for _, w := range r.workers {
				s := &w.stats[si]
				st.Count += s.count
				sh.MergeSparse(s.lat)
				for k, n := range s.errors {
					if st.ErrorsBySQLState == nil {
						st.ErrorsBySQLState = map[string]int64{}
					}
					key := k
					if key == "" {
						key = "none"
					}
					st.ErrorsBySQLState[key] += n
					st.Errors += n
				}
			}
			st.LatencyMs = results.LatencyOf(sh)
			sr.Statements = append(sr.Statements, st)
		}
		x.Scripts = append(x.Scripts, sr)
	}
	return &workload.Verdict{Extra: x}, nil
}

func (r *scriptRun) Close() {}

// initExec runs an init file's statements: on PostgreSQL each in the
// simple query protocol (a statement that is several, or VACUUM, runs as
// psql would run it); elsewhere on an admin connection (mariadb.go).
func initExec(ctx context.Context, t target.Target) (func(context.Context, string) error, func(), error) {
	if t.Dialect() != pgt.Dialect {
		return adminExec(ctx, t)
	}
	p, err := pgt.From(t)
	if err != nil {
		return nil, nil, err
	}
	conn, err := p.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, q string) error {
			_, err := conn.PgConn().Exec(ctx, q).ReadAll()
			return err
		}, func() {
			conn.Close(context.Background())
		}, nil
}

// branches counts pgbench_branches (0 without the table).
func branches(ctx context.Context, t target.Target) (int64, error) {
	if t.Dialect() != pgt.Dialect {
		return adminBranches(ctx, t)
	}
	p, err := pgt.From(t)
	if err != nil {
		return 0, err
	}
	conn, err := p.Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_branches").Scan(&n)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return 0, nil
	}
	return n, err
}
