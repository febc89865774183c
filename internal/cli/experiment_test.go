package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/testutil"
)

// writeExperiment writes an experiment file into a temp dir.
func writeExperiment(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "exp.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExperimentExamples dry-runs every file in examples/: they must stay
// valid (tpcc ones included, even before tpcc runs in experiments).
func TestExperimentExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	h := newHarness(t)
	for _, f := range files {
		r := h.run("experiment", "run", f, "--dry-run")
		if r.code != 0 || !strings.Contains(r.stdout, "estimate: ") || !strings.Contains(r.stdout, "CONFIGURATION") {
			t.Errorf("%s:\n%s", f, r)
		}
	}
}

// TestExperimentBadFile: mistakes are reported with their line before
// anything starts (exit 2, no store written).
func TestExperimentBadFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	results := tempPath(t, "results.db")
	path := writeExperiment(t, `name: bad
workload:
  name: tpcb
  options: {duration: -2s}
matrix:
  settings:
    shared_bufers: [128MB, 1GB]
  clients: [0, 2]
repetitions: 0
`)
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 2 {
		t.Fatalf("want exit 2:\n%s", r)
	}
	for _, want := range []string{
		path + `:4: duration must not be negative (-2s)`,
		path + `:7: unknown key "shared_bufers" in matrix.settings (did you mean shared_buffers?)`,
		path + `:8: clients must be at least 1, not 0`,
		path + `:9: repetitions must be 1 or more`,
		"fix: fix the file; docs/experiments.md",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Errorf("a results store was written for a refused file")
	}
	// A restart command for the managed server is refused before anything
	// starts too (tunebench restarts that one itself).
	path = writeExperiment(t, "target: {restart_command: 'systemctl restart postgresql'}\nworkload: {name: tpcb}\n")
	if r := h.run("experiment", "run", path, "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, ":1: target.restart_command is for a server given by target.dsn") {
		t.Errorf("restart command without a dsn:\n%s", r)
	}
}

// expLinks reads an experiment's plan links.
func expLinks(t *testing.T, results, name string) (*store.Experiment, []store.PlanLink) {
	t.Helper()
	st := openStore(t, results)
	e, err := st.GetExperiment(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	links, err := st.PlanLinks(context.Background(), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	return e, links
}

// TestExperiment2x2 runs shared_buffers (needs a restart) x work_mem
// (reload) on a running managed server: every run is stored with its plan
// link, ran with its configuration's settings (the environment snapshot of
// each run shows them), and the settings are restored at the end.
func TestExperiment2x2(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := testutil.StartServer(t)
	results := tempPath(t, "results.db")
	sbBefore := showSetting(t, srv, "postgres", "shared_buffers")
	wmBefore := showSetting(t, srv, "postgres", "work_mem")
	path := writeExperiment(t, fmt.Sprintf(`name: it-2x2
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 2s, clients: 2}
matrix:
  settings:
    shared_buffers: [136MB, 144MB]
    work_mem: [5MB, 6MB]
seed: 3
`, srv.Dir()))
	r := h.run("experiment", "run", path, "--results", results, "--progress", "1s")
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	for _, want := range []string{"== run 1/4 ", "== run 4/4 ", "(restart)", "(reload)", "applied and verified (restart)", "progress:", "settings restored"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "experiment it-2x2: done (4 runs in this attempt") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	// Two restarts to switch shared_buffers, not one per configuration.
	if n := strings.Count(r.stderr, "applied and verified (restart)"); n != 2 {
		t.Errorf("%d restarts to apply settings, want 2", n)
	}

	e, links := expLinks(t, results, "it-2x2")
	if e.Status != store.ExpDone || e.EndedAt.IsZero() || !strings.Contains(e.Spec, "shared_buffers") {
		t.Errorf("experiment: %+v", e)
	}
	if len(links) != 4 {
		t.Fatalf("links: %+v", links)
	}
	labels := map[string]bool{}
	for i, l := range links {
		if l.PlanIndex != i || l.RunID == 0 || l.Status != store.StatusOK || l.XName != "clients" || l.XValue != 2 || l.Repetition != 1 || l.Warmup {
			t.Errorf("link %d: %+v", i, l)
			continue
		}
		labels[l.Config] = true
		run := getRun(t, results, l.RunID)
		if run.Experiment != "it-2x2" || run.Status != "ok" || run.Workload != "tpcb" || len(run.Series) == 0 {
			t.Errorf("run %d: experiment %q status %q", l.RunID, run.Experiment, run.Status)
		}
		var env struct {
			Postgres struct {
				Database string            `json:"database"`
				Settings map[string]string `json:"settings"`
			} `json:"postgres"`
		}
		if err := json.Unmarshal(run.Env, &env); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("shared_buffers=%s work_mem=%s", env.Postgres.Settings["shared_buffers"], env.Postgres.Settings["work_mem"])
		if want != l.Config || env.Postgres.Database != "tunebench_exp" {
			t.Errorf("run %d ran with %s on %s, its link says %s", l.RunID, want, env.Postgres.Database, l.Config)
		}
		var p struct {
			Clients int    `json:"clients"`
			Seed    int64  `json:"seed"`
			Exp     string `json:"experiment"`
		}
		if json.Unmarshal(run.Params, &p) != nil || p.Clients != 2 || p.Seed == 0 || p.Exp != "it-2x2" {
			t.Errorf("run %d params %s", l.RunID, run.Params)
		}
	}
	if len(labels) != 4 {
		t.Errorf("configurations run: %v", labels)
	}
	if sb, wm := showSetting(t, srv, "postgres", "shared_buffers"), showSetting(t, srv, "postgres", "work_mem"); sb != sbBefore || wm != wmBefore {
		t.Errorf("after the experiment shared_buffers=%s work_mem=%s, want %s and %s restored", sb, wm, sbBefore, wmBefore)
	}
	if a := srv.AppliedSettings(); len(a) != 0 {
		t.Errorf("server still records applied settings: %+v", a)
	}

	// list and show read it back.
	if l := h.must(0, "experiment", "list", "--results", results); !strings.Contains(l.stdout, "it-2x2") || !strings.Contains(l.stdout, "4/4") {
		t.Errorf("list:\n%s", l.stdout)
	}
	if s := h.must(0, "experiment", "show", "it-2x2", "--results", results); !strings.Contains(s.stdout, "shared_buffers=136MB work_mem=5MB") || !strings.Contains(s.stdout, "1/1") {
		t.Errorf("show:\n%s", s.stdout)
	}
	// The same name again is refused, naming --resume.
	if again := h.run("experiment", "run", path, "--results", results); again.code != 2 || !strings.Contains(again.stderr, "--resume") {
		t.Errorf("second start:\n%s", again)
	}
}

// TestExperimentInterruptResume interrupts an experiment after its first run
// (the server tunebench started is stopped, the experiment is marked
// interrupted, exit 130) and resumes it: the first run is kept, the rest is
// done, and nothing completed is redone.
func TestExperimentInterruptResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := testutil.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Stop(ctx, "fast"); err != nil { // the experiment starts it itself
		t.Fatal(err)
	}
	results := tempPath(t, "results.db")
	path := writeExperiment(t, fmt.Sprintf(`name: it-resume
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 2s}
matrix:
  clients: [1, 2, 3]
order: sequential
cooldown: 3s
`, srv.Dir()))
	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "experiment", "run", path, "--results", results)
	rn.waitStderr(t, "   run 1/3: ", 90*time.Second)
	sig <- os.Interrupt
	r := rn.wait(t, 60*time.Second)
	if r.code != 130 || !strings.Contains(r.stderr, "--resume") || !strings.Contains(r.stdout, "experiment it-resume: interrupted") {
		t.Fatalf("want exit 130 naming --resume:\n%s", r)
	}
	e, links := expLinks(t, results, "it-resume")
	if e.Status != store.ExpInterrupted || len(links) < 1 || links[0].Status != store.StatusOK || links[0].RunID == 0 {
		t.Fatalf("after the interrupt: %+v %+v", e, links)
	}
	first := links[0].RunID
	for _, l := range links[1:] {
		if l.Status == store.StatusOK {
			t.Errorf("a run after the interrupt completed: %+v", l)
		}
	}
	if st, err := srv.Status(ctx); err != nil || st.Running {
		t.Errorf("the server tunebench started is still running after the interrupt: %+v %v", st, err)
	}

	// A dry run of the resume shows what is left.
	d := h.must(0, "experiment", "run", path, "--results", results, "--resume", "--dry-run")
	if !strings.Contains(d.stdout, "resume: 1 completed runs are kept") || strings.Contains(d.stdout, "\n1  default") || !strings.Contains(d.stdout, "\n3  default") {
		t.Errorf("dry run of the resume:\n%s", d.stdout)
	}

	// As if the experiment had then been killed -9 mid-run: its server runs
	// on with a setting it changed, and its status says running. The
	// resume restores the setting, says so, and continues (issue 16, item 5).
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "33MB"}}); err != nil {
		t.Fatal(err)
	}
	testutil.SetHolder(t, srv.Dir(), "work_mem", testutil.DeadPID(t))
	func() {
		st := openStore(t, results)
		defer st.Close()
		if err := st.SetExperimentStatus(ctx, e.ID, store.ExpRunning, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}()

	r = h.run("experiment", "run", path, "--results", results, "--resume")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming (1 completed runs kept)") || !strings.Contains(r.stderr, "the data is there already") {
		t.Fatalf("resume:\n%s", r)
	}
	if !strings.Contains(r.stderr, "restoring work_mem, left changed by a tunebench process that ended") {
		t.Errorf("the resume does not say it restored the killed experiment's setting:\n%s", r.stderr)
	}
	if got := showSetting(t, srv, "postgres", "work_mem"); got == "33MB" {
		t.Errorf("work_mem = %s after the resume", got)
	}
	if strings.Contains(r.stderr, "== run 3/3") || !strings.Contains(r.stderr, "== run 2/2 ") {
		t.Errorf("resume should do 2 runs:\n%s", r.stderr)
	}
	e, links = expLinks(t, results, "it-resume")
	if e.Status != store.ExpDone || len(links) != 3 {
		t.Fatalf("after resume: %+v %+v", e, links)
	}
	for i, l := range links {
		if l.Status != store.StatusOK || l.RunID == 0 || l.XValue != float64(i+1) {
			t.Errorf("link %d: %+v", i, l)
		}
	}
	if links[0].RunID != first {
		t.Errorf("the completed first run was redone: run %d, was %d", links[0].RunID, first)
	}
	// Nothing left: resume again does nothing.
	if again := h.must(0, "experiment", "run", path, "--results", results, "--resume"); !strings.Contains(again.stderr, "0 runs") {
		t.Errorf("resume of a done experiment:\n%s", again)
	}
}

// TestExperimentDSN runs on an existing server given by DSN (the shared test
// server): settings are applied with a reload and restored, the benchmark
// database is recreated from its template, and a database of the same name
// that tunebench did not make is refused, not dropped.
func TestExperimentDSN(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	results := tempPath(t, "results.db")
	db := strings.ReplaceAll(testutil.CreateDB(t, srv), "t_", "x_") // a unique name, not created
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := srv.Connect(ctx); err == nil {
			for _, n := range []string{db, db + "_template"} {
				_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
			}
			conn.Close(ctx)
		}
	})
	before := showSetting(t, srv, "postgres", "random_page_cost")
	body := fmt.Sprintf(`name: it-dsn
target:
  dsn: %q
  database: %s
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, no_check: true}
matrix:
  settings: {random_page_cost: ["1.5", "2.5"]}
order: sequential
`, srv.DSN(), db)
	path := writeExperiment(t, body)
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 0 || !strings.Contains(r.stderr, "applied and verified (reload)") || !strings.Contains(r.stderr, "connect to the server") {
		t.Fatalf("want exit 0:\n%s", r)
	}
	_, links := expLinks(t, results, "it-dsn")
	if len(links) != 2 || links[0].Status != store.StatusOK || links[1].Config != "random_page_cost=2.5" {
		t.Errorf("links %+v", links)
	}
	for _, l := range links {
		var env struct {
			Postgres struct {
				Settings map[string]string `json:"settings"`
			} `json:"postgres"`
		}
		_ = json.Unmarshal(getRun(t, results, l.RunID).Env, &env)
		if "random_page_cost="+env.Postgres.Settings["random_page_cost"] != l.Config {
			t.Errorf("run %d ran with random_page_cost=%s, link %s", l.RunID, env.Postgres.Settings["random_page_cost"], l.Config)
		}
	}
	if got := showSetting(t, srv, "postgres", "random_page_cost"); got != before {
		t.Errorf("random_page_cost %s after the experiment, want %s restored", got, before)
	}
	var comment string
	if err := testutil.Connect(t, srv).QueryRow(context.Background(),
		"SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", db+"_template").Scan(&comment); err != nil || !strings.HasPrefix(comment, "tunebench experiment data: tpcb ") {
		t.Errorf("template comment %q, %v", comment, err)
	}

	// A database of that name not made by tunebench is left alone.
	conn := testutil.Connect(t, srv)
	other := db + "_other"
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+other+" WITH (FORCE)") })
	path = writeExperiment(t, strings.ReplaceAll(strings.ReplaceAll(body, "it-dsn", "it-dsn2"), "database: "+db, "database: "+other))
	r = h.run("experiment", "run", path, "--results", results)
	if r.code != 2 || !strings.Contains(r.stderr, "was not made by a tunebench experiment") {
		t.Errorf("foreign database:\n%s", r)
	}
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", other).Scan(&n); err != nil || n != 1 {
		t.Errorf("the foreign database was dropped (%d, %v)", n, err)
	}
	if got := showSetting(t, srv, "postgres", "random_page_cost"); got != before {
		t.Errorf("random_page_cost %s after the refused experiment, want %s", got, before)
	}
}
