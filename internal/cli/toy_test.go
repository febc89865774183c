package cli_test

// A workload defined here, in a test, registered in a registry built here:
// it must get load, run and check commands, experiment keys with
// suggestions, stored results with its own fields, its terminal view and
// its report section, with no edit anywhere else. If this test needs a
// change outside this file to pass, the seam is broken.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/all"
)

type toy struct{}

func (toy) Meta() workload.Meta {
	return workload.Meta{Name: "toy", Description: "a workload that exists only in a test", Version: "1",
		Ops: []string{"ping"}, Dialects: []string{"postgres"}}
}

func (toy) Options() option.Set {
	return option.Set{
		{Name: "rows", Kind: option.KindInt, Default: "10", Min: 1, HasMin: true, Load: true, Doc: "rows to load"},
		{Name: "clients", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Role: option.RoleWorkers, Doc: "clients"},
		{Name: "duration", Kind: option.KindDuration, Default: "1s", Role: option.RoleDuration, Doc: "measured time"},
		{Name: "pings", Kind: option.KindInt, HasMin: true, Role: option.RoleCount, Doc: "pings per client"},
		{Name: "shout", Kind: option.KindString, Default: "quiet", Enum: []string{"quiet", "loud"}, Doc: "how to ping"},
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed, Doc: "seed"},
		{Name: "deep", Kind: option.KindBool, Check: true, Doc: "check every row"},
	}
}

func (toy) LoadHelp() workload.Help  { return workload.Help{Short: "load the toy table"} }
func (toy) RunHelp() workload.Help   { return workload.Help{Short: "ping the toy table"} }
func (toy) CheckHelp() workload.Help { return workload.Help{Short: "count the toy table"} }

func (toy) Headline() workload.Headline {
	return workload.Headline{Metric: "tps", Label: "tps", Unit: "pings per second", XAxis: "clients"}
}

func toyConn(ctx context.Context, t any) (*pgx.Conn, error) {
	tt, ok := t.(interface {
		Connect(context.Context) (*pgx.Conn, error)
	})
	if !ok {
		return nil, errs.Usage("use PostgreSQL", "not a PostgreSQL target")
	}
	return tt.Connect(ctx)
}

func (toy) Load(ctx context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	conn, err := toyConn(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	n := env.Options.Int("rows")
	for _, q := range []string{"DROP TABLE IF EXISTS toy_rows", "CREATE TABLE toy_rows (n int)",
		fmt.Sprintf("INSERT INTO toy_rows SELECT generate_series(1, %d)", n)} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	env.Progress(workload.LoadProgress{What: "rows", Rows: n, TotalRows: n, Frac: -1, ETA: -1, Final: true})
	return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("toy: loaded %d rows", n))}}, nil
}

func toyRows(ctx context.Context, t any) (int64, error) {
	conn, err := toyConn(ctx, t)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM toy_rows").Scan(&n); err != nil {
		return 0, errs.Usage("load it first: tunebench load toy", "toy: %v", err)
	}
	return n, nil
}

func (toy) Check(ctx context.Context, env *workload.CheckEnv) (*workload.Report, error) {
	n, err := toyRows(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	rep := &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("toy: %d rows (deep %v)", n, env.Options.Bool("deep")))}}
	if n == 0 {
		rep.Failed = &workload.Failure{What: "toy check", Hint: "load it again"}
	}
	return rep, nil
}

type toyRun struct {
	env  *workload.RunEnv
	rows int64
}

func (toy) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	n, err := toyRows(ctx, env.Target)
	if err != nil {
		return nil, err
	}
	return &toyRun{env: env, rows: n}, nil
}

func (r *toyRun) Describe() string { return "toy: pinging " + r.env.Target.Describe() }
func (r *toyRun) Variant() string  { return r.env.Options.String("shout") }
func (r *toyRun) Params() any {
	return map[string]any{"shout": r.env.Options.String("shout"), "clients": r.env.Options.Int("clients")}
}
func (r *toyRun) Exec() workload.Exec {
	return workload.Exec{Exec: option.ExecOf(toy{}.Options().Phase(option.PhaseRun), r.env.Options)}
}
func (r *toyRun) Before(context.Context) error { return nil }
func (r *toyRun) Close()                       {}

func (r *toyRun) NewWorker(ctx context.Context, id int) (workload.Worker, error) {
	conn, err := toyConn(ctx, r.env.Target)
	if err != nil {
		return nil, err
	}
	return &toyWorker{conn: conn}, nil
}

func (r *toyRun) After(ctx context.Context, res *run.Result, sum *results.Summary) (*workload.Verdict, error) {
	sum.Script = r.env.Options.String("shout")
	return &workload.Verdict{Extra: &toyExtra{Rows: r.rows, Shout: r.env.Options.String("shout"), Pings: res.Committed}}, nil
}

type toyWorker struct{ conn *pgx.Conn }

func (w *toyWorker) Step(ctx context.Context) (workload.Outcome, error) {
	var n int64
	err := w.conn.QueryRow(ctx, "SELECT count(*) FROM toy_rows").Scan(&n)
	o := workload.Outcome{Op: "ping", Attempts: 1}
	if err != nil {
		o.Class, o.Err = workload.ClassFailedError, err
	}
	return o, nil
}

func (w *toyWorker) Close() error { return w.conn.Close(context.Background()) }

type toyExtra struct {
	Rows  int64  `json:"toy_rows"`
	Shout string `json:"shout"`
	Pings int64  `json:"pings"`
}

func (toy) NewExtra() results.Extra { return &toyExtra{} }

func (toy) Brief(s *results.Summary) string {
	x, _ := s.Extra.(*toyExtra)
	if x == nil {
		return ""
	}
	return fmt.Sprintf("toy pings %d over %d rows", x.Pings, x.Rows)
}

func (toy) Show(s *results.Summary) []results.Block {
	x, _ := s.Extra.(*toyExtra)
	if x == nil {
		return nil
	}
	return append([]results.Block{results.Line(fmt.Sprintf("TOY %s: %d pings over %d rows", x.Shout, x.Pings, x.Rows))}, results.OutcomeLines(s)...)
}

func (toy) Section(runs []*results.Run) (*results.Section, error) {
	s := &results.Section{ID: "toy", Title: "Toy section", Intro: "What the toy pinged."}
	t := results.Table{Left: 1, Columns: []string{"run", "rows"}}
	for _, r := range runs {
		x, _ := r.Summary.Extra.(*toyExtra)
		if x != nil {
			t.Row(fmt.Sprint(r.ID), fmt.Sprintf("toy rows %d", x.Rows))
		}
	}
	s.Tables = append(s.Tables, t)
	return s, nil
}

// The toy is measured by the executor; a section of its own is still
// asked for (Sectioner) only for runs the executor does not measure, so
// the report shows it through the common throughput sections.

func TestToyWorkload(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.registry = all.Registry()
	h.registry.Register(toy{})
	srv := pg.Server(t)
	sd := srv.Dir()
	db := testutil.CreateDB(t, srv)
	results := tempPath(t, "results.db")
	conn := []string{"--server-dir", sd, "-d", db}

	r := h.must(0, "workloads")
	if !strings.Contains(r.stdout, "toy") || !strings.Contains(r.stdout, "load, run, check") {
		t.Errorf("workloads does not list the toy and what it can do:\n%s", r)
	}
	r = h.must(0, "workloads", "toy")
	for _, want := range []string{"`--rows`", "`rows`", "`--shout`", "quiet, loud", "`--deep`"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("toy options lack %s:\n%s", want, r)
		}
	}

	// Load, with a bad value first: the flag is named, with its fix.
	r = h.must(2, append([]string{"load", "toy", "--rows", "0"}, conn...)...)
	if !strings.Contains(r.stderr, "--rows") || !strings.Contains(r.stderr, "fix:") {
		t.Errorf("bad --rows:\n%s", r)
	}
	r = h.must(0, append([]string{"load", "toy", "--rows", "25"}, conn...)...)
	if !strings.Contains(r.stdout, "toy: loaded 25 rows") {
		t.Errorf("load printed:\n%s", r)
	}

	// Run: the lifecycle stores it with the toy's fields.
	r = h.must(2, append([]string{"run", "toy", "--shout", "whisper", "--results", results}, conn...)...)
	if !strings.Contains(r.stderr, "--shout") || !strings.Contains(r.stderr, "quiet or loud") {
		t.Errorf("bad --shout:\n%s", r)
	}
	r = h.must(2, append([]string{"run", "toy", "--pings", "3", "--duration", "1s", "--results", results}, conn...)...)
	if !strings.Contains(r.stderr, "--duration") || !strings.Contains(r.stderr, "--pings") {
		t.Errorf("a count and a duration together:\n%s", r)
	}
	jsonPath := tempPath(t, "toy.json")
	r = h.must(0, append([]string{"run", "toy", "--clients", "2", "--duration", "1s", "--shout", "loud", "--json", jsonPath, "--results", results, "-P", "500ms"}, conn...)...)
	if !strings.Contains(r.stdout, "TOY loud:") || !strings.Contains(r.stdout, "over 25 rows") || !strings.Contains(r.stderr, "toy: pinging") || !strings.Contains(r.stderr, "progress:") {
		t.Errorf("run output:\n%s", r)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal(b, &sum); err != nil || sum["workload"] != "toy" || sum["toy_rows"] != 25.0 || sum["shout"] != "loud" || sum["clients"] != 2.0 || sum["schema_version"] == nil {
		t.Errorf("--json summary: %v %s", err, b)
	}
	runs := listRuns(t, results)
	if len(runs) != 1 || runs[0].Workload != "toy" || runs[0].Variant != "loud" {
		t.Fatalf("stored runs %+v", runs)
	}
	id := fmt.Sprint(runs[0].ID)
	r = h.must(0, "results", "list", "--results", results)
	if !strings.Contains(r.stdout, "toy pings") {
		t.Errorf("results list:\n%s", r)
	}
	r = h.must(0, "results", "show", id, "--results", results)
	if !strings.Contains(r.stdout, "TOY loud:") {
		t.Errorf("results show:\n%s", r)
	}
	r = h.must(0, append([]string{"check", "toy", "--deep"}, conn...)...)
	if !strings.Contains(r.stdout, "toy: 25 rows (deep true)") {
		t.Errorf("check:\n%s", r)
	}

	// An experiment: its keys come from the declarations, typos get
	// suggestions, and the runs are planned, loaded, run and reported.
	exp := func(name, opts string) string {
		return writeExperiment(t, fmt.Sprintf(`name: %s
target:
  dsn: %q
  database: %s
workload:
  name: toy
  options: {%s}
matrix:
  clients: [1, 2]
order: sequential
`, name, srv.DSN(), strings.ReplaceAll(db, "t_", "toy_"), opts))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := srv.Connect(ctx); err == nil {
			name := strings.ReplaceAll(db, "t_", "toy_")
			for _, n := range []string{name, name + "_template"} {
				_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
			}
			c.Close(ctx)
		}
	})
	r = h.must(2, "experiment", "run", exp("toy-typo", "rows: 5, shuot: loud"), "--dry-run")
	if !strings.Contains(r.stderr, "shuot") || !strings.Contains(r.stderr, "shout") {
		t.Errorf("typo in a key:\n%s", r)
	}
	r = h.must(2, "experiment", "run", exp("toy-bad", "rows: 5, shout: whisper"), "--dry-run")
	if !strings.Contains(r.stderr, "shout must be one of quiet, loud") {
		t.Errorf("bad value in a key:\n%s", r)
	}
	r = h.must(0, "experiment", "run", exp("toy-exp", "rows: 7, duration: 1s, shout: loud"), "--results", results)
	if !strings.Contains(r.stdout, "tps vs clients") {
		t.Errorf("experiment:\n%s", r)
	}
	html := tempPath(t, "toy.html")
	h.must(0, "report", "toy-exp", "-o", html, "--results", results)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Experiment toy-exp", "pings per second", "ping", "Toy section", "toy rows 7"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	r = h.must(0, "results", "list", "--experiment", "toy-exp", "--results", results)
	if strings.Count(r.stdout, "toy pings") != 2 {
		t.Errorf("experiment runs have no toy brief:\n%s", r)
	}
}
