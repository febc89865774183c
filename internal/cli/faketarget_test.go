package cli_test

// A database defined here, in a test: an in-memory target with settings
// that record their changes, databases, one sampler and sessions-free
// workers, driven by a workload that speaks only its dialect. Load, run,
// check, an experiment with a settings matrix, results and the report
// must work on it with no database server. If this test needs a change
// outside this file to pass, something above the target contract assumes
// PostgreSQL (issue 39: the database seam).

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/metrics/sampler"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/run"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/all"
)

// fakeDB is the whole fake server: its settings, a log of their changes,
// and its databases.
type fakeDB struct {
	mu       sync.Mutex
	settings map[string]string
	log      []string
	dbs      map[string]*fakeData
	commits  int64
}

type fakeData struct {
	marker string
	rows   int64
}

// fakeKnobs are the fake server's settings and their defaults.
var fakeKnobs = map[string]string{"fake_cache": "64", "fake_mode": "fast"}

func newFakeDB() *fakeDB {
	db := &fakeDB{settings: map[string]string{}, dbs: map[string]*fakeData{"main": {}}}
	for k, v := range fakeKnobs {
		db.settings[k] = v
	}
	return db
}

type fakeDriver struct{ db *fakeDB }

func (fakeDriver) Name() string               { return "fake" }
func (fakeDriver) Accepts(s target.Spec) bool { return strings.HasPrefix(s.DSN, "fake://") }
func (fakeDriver) Check(target.Spec) error    { return nil }
func (d fakeDriver) Open(_ context.Context, s target.Spec) (target.Target, error) {
	name := strings.TrimPrefix(s.DSN, "fake://")
	if s.Database != "" {
		name = s.Database
	}
	t := &fakeTarget{db: d.db, name: name, own: s.Own, owned: &[]target.Change{}}
	if len(s.Base) > 0 {
		ch, err := t.Settings().Apply(context.Background(), s.Base)
		if err != nil {
			return nil, err
		}
		*t.owned = append(*t.owned, ch)
	}
	return t, nil
}

type fakeTarget struct {
	db    *fakeDB
	name  string
	own   bool
	owned *[]target.Change
}

func (t *fakeTarget) Dialect() string                  { return "fake" }
func (t *fakeTarget) Describe() string                 { return "fake://" + t.name }
func (t *fakeTarget) Database() string                 { return t.name }
func (t *fakeTarget) Remote() bool                     { return false }
func (t *fakeTarget) ScratchDir(string) (string, bool) { return "", false }
func (t *fakeTarget) WithDatabase(name string) target.Target {
	c := *t
	c.name = name
	return &c
}
func (t *fakeTarget) Settings() target.Settings   { return fakeSettings{t} }
func (t *fakeTarget) Databases() target.Databases { return fakeDatabases{t.db} }

func (t *fakeTarget) Samplers(context.Context, target.HostMetrics, func(string, ...any)) ([]sampler.Spec, error) {
	return []sampler.Spec{{Sampler: fakeSampler{t.db}}}, nil
}

func (t *fakeTarget) Env(context.Context, string) *envinfo.Snapshot {
	return &envinfo.Snapshot{Host: envinfo.Host{Hostname: "fakehost", OS: "fakeos"}, TakenAt: time.Now()}
}

func (t *fakeTarget) Close(ctx context.Context) error {
	for i := len(*t.owned) - 1; i >= 0; i-- {
		if err := (*t.owned)[i].Restore(ctx); err != nil {
			return err
		}
	}
	*t.owned = nil
	return nil
}

// data is the target's database (nil when it does not exist).
func (t *fakeTarget) data() *fakeData {
	t.db.mu.Lock()
	defer t.db.mu.Unlock()
	return t.db.dbs[t.name]
}

type fakeSampler struct{ db *fakeDB }

func (fakeSampler) Name() string { return "fake" }
func (s fakeSampler) Sample(context.Context, time.Time) ([]sampler.Point, error) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	return []sampler.Point{{Series: "fake.commits", V: float64(s.db.commits)}}, nil
}

type fakeSettings struct{ t *fakeTarget }

func (fakeSettings) Parse(kv string) (target.Setting, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return target.Setting{}, errs.Usage("name=value", "bad setting %q", kv)
	}
	return target.Setting{Name: name, Value: value}, nil
}

func (fakeSettings) Check(_ context.Context, ss []target.Setting) error {
	for _, s := range ss {
		if _, ok := fakeKnobs[s.Name]; !ok {
			return errs.Usage("the fake server has fake_cache and fake_mode", "unknown fake setting %s", s.Name)
		}
	}
	return nil
}

func (f fakeSettings) Apply(ctx context.Context, ss []target.Setting) (target.Change, error) {
	if err := f.Check(ctx, ss); err != nil {
		return nil, err
	}
	db := f.t.db
	ch := &fakeChange{db: db, prev: map[string]string{}, vals: map[string]string{}}
	db.mu.Lock()
	for _, s := range ss {
		ch.prev[s.Name], ch.vals[s.Name] = db.settings[s.Name], s.Value
		db.settings[s.Name] = s.Value
		db.log = append(db.log, "set "+s.Name+"="+s.Value)
	}
	db.mu.Unlock()
	if f.t.own {
		*f.t.owned = append(*f.t.owned, ch)
		return keptChange{ch}, nil
	}
	return ch, nil
}

type fakeChange struct {
	db         *fakeDB
	prev, vals map[string]string
	restored   bool
}

func (c *fakeChange) Values() map[string]string { return c.vals }
func (c *fakeChange) Restarted() bool           { return false }
func (c *fakeChange) Restore(context.Context) error {
	c.db.mu.Lock()
	defer c.db.mu.Unlock()
	if c.restored {
		return nil
	}
	c.restored = true
	for k, v := range c.prev {
		c.db.settings[k] = v
		c.db.log = append(c.db.log, "restore "+k+"="+v)
	}
	return nil
}

// keptChange is a change the target restores itself at Close (Own).
type keptChange struct{ *fakeChange }

func (keptChange) Restore(context.Context) error { return nil }

type fakeDatabases struct{ db *fakeDB }

func (d fakeDatabases) State(_ context.Context, name string) (bool, string, error) {
	d.db.mu.Lock()
	defer d.db.mu.Unlock()
	x, ok := d.db.dbs[name]
	if !ok {
		return false, "", nil
	}
	return true, x.marker, nil
}

func (d fakeDatabases) Create(_ context.Context, name, marker string) error {
	d.db.mu.Lock()
	defer d.db.mu.Unlock()
	if _, ok := d.db.dbs[name]; ok {
		return errs.Usage("", "database %s exists", name)
	}
	d.db.dbs[name] = &fakeData{marker: marker}
	return nil
}

func (d fakeDatabases) Mark(_ context.Context, name, marker string) error {
	d.db.mu.Lock()
	defer d.db.mu.Unlock()
	d.db.dbs[name].marker = marker
	return nil
}

func (d fakeDatabases) DropOwn(_ context.Context, name, own string) error {
	d.db.mu.Lock()
	defer d.db.mu.Unlock()
	if x, ok := d.db.dbs[name]; ok {
		if !strings.HasPrefix(x.marker, own) {
			return errs.Usage("", "database %s is not tunebench's", name)
		}
		delete(d.db.dbs, name)
	}
	return nil
}

func (d fakeDatabases) Seal(context.Context, string) error { return nil }

func (d fakeDatabases) Copy(_ context.Context, name, template string) error {
	d.db.mu.Lock()
	defer d.db.mu.Unlock()
	src := *d.db.dbs[template]
	d.db.dbs[name] = &src
	d.db.log = append(d.db.log, "copy "+template)
	return nil
}

// ftoy is a workload that speaks only the fake dialect.
type ftoy struct{}

func (ftoy) Meta() workload.Meta {
	return workload.Meta{Name: "ftoy", Description: "a workload of the fake database", Version: "1",
		Ops: []string{"bump"}, Dialects: []string{"fake"}}
}

func (ftoy) Options() option.Set {
	return option.Set{
		{Name: "rows", Kind: option.KindInt, Default: "10", Min: 1, HasMin: true, Load: true, Doc: "rows to load"},
		{Name: "clients", Kind: option.KindInt, Default: "1", Min: 1, HasMin: true, Role: option.RoleWorkers, Doc: "clients"},
		{Name: "duration", Kind: option.KindDuration, Default: "1s", Role: option.RoleDuration, Doc: "measured time"},
		{Name: "seed", Kind: option.KindInt, FlagOnly: true, Role: option.RoleSeed, Doc: "seed"},
	}
}

func (ftoy) LoadHelp() workload.Help  { return workload.Help{Short: "load the fake rows"} }
func (ftoy) RunHelp() workload.Help   { return workload.Help{Short: "bump the fake rows"} }
func (ftoy) CheckHelp() workload.Help { return workload.Help{Short: "count the fake rows"} }
func (ftoy) Headline() workload.Headline {
	return workload.Headline{Metric: "tps", Label: "tps", Unit: "bumps per second", XAxis: "clients"}
}

func fakeOf(t target.Target) (*fakeTarget, error) {
	ft, ok := t.(*fakeTarget)
	if !ok {
		return nil, errs.Usage("use the fake database", "not a fake target")
	}
	return ft, nil
}

func (ftoy) Load(_ context.Context, env *workload.LoadEnv) (*workload.Report, error) {
	ft, err := fakeOf(env.Target)
	if err != nil {
		return nil, err
	}
	d := ft.data()
	if d == nil {
		return nil, errs.Usage("", "no database %s", ft.name)
	}
	ft.db.mu.Lock()
	d.rows = env.Options.Int("rows")
	ft.db.mu.Unlock()
	env.Progress(workload.LoadProgress{What: "rows", Rows: d.rows, TotalRows: d.rows, Frac: -1, ETA: -1, Final: true})
	return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("ftoy: loaded %d rows", d.rows))}}, nil
}

func (ftoy) Check(_ context.Context, env *workload.CheckEnv) (*workload.Report, error) {
	ft, err := fakeOf(env.Target)
	if err != nil {
		return nil, err
	}
	d := ft.data()
	if d == nil || d.rows == 0 {
		return &workload.Report{Failed: &workload.Failure{What: "ftoy check", Hint: "load it"}}, nil
	}
	return &workload.Report{Blocks: []results.Block{results.Line(fmt.Sprintf("ftoy: %d rows", d.rows))}}, nil
}

type ftoyRun struct {
	env *workload.RunEnv
	ft  *fakeTarget
}

func (ftoy) NewRun(_ context.Context, env *workload.RunEnv) (workload.Run, error) {
	ft, err := fakeOf(env.Target)
	if err != nil {
		return nil, err
	}
	if d := ft.data(); d == nil || d.rows == 0 {
		return nil, errs.Usage("load it first: tunebench load ftoy", "ftoy: no rows in %s", ft.name)
	}
	return &ftoyRun{env: env, ft: ft}, nil
}

func (r *ftoyRun) Describe() string { return "ftoy: bumping " + r.env.Target.Describe() }
func (r *ftoyRun) Variant() string  { return "" }
func (r *ftoyRun) Params() any      { return map[string]any{"clients": r.env.Options.Int("clients")} }
func (r *ftoyRun) Exec() workload.Exec {
	return workload.Exec{Exec: option.ExecOf(ftoy{}.Options().Phase(option.PhaseRun), r.env.Options)}
}
func (r *ftoyRun) Before(context.Context) error { return nil }
func (r *ftoyRun) Close()                       {}
func (r *ftoyRun) NewWorker(context.Context, int) (workload.Worker, error) {
	return &ftoyWorker{db: r.ft.db}, nil
}
func (r *ftoyRun) After(_ context.Context, res *run.Result, _ *results.Summary) (*workload.Verdict, error) {
	return &workload.Verdict{}, nil
}

type ftoyWorker struct{ db *fakeDB }

func (w *ftoyWorker) Step(context.Context) (workload.Outcome, error) {
	time.Sleep(time.Millisecond)
	w.db.mu.Lock()
	w.db.commits++
	w.db.mu.Unlock()
	return workload.Outcome{Op: "bump", Attempts: 1}, nil
}

func (w *ftoyWorker) Close() error { return nil }

func TestFakeTarget(t *testing.T) {
	t.Parallel()
	db := newFakeDB()
	h := newHarness(t)
	h.registry = all.Registry()
	h.registry.Register(ftoy{})
	h.drivers = append([]target.Driver{fakeDriver{db}}, h.drivers...)
	results := tempPath(t, "results.db")
	conn := []string{"--dsn", "fake://main"}

	r := h.must(0, append([]string{"load", "ftoy", "--rows", "25"}, conn...)...)
	if !strings.Contains(r.stdout, "ftoy: loaded 25 rows") {
		t.Errorf("load:\n%s", r)
	}
	r = h.must(0, append([]string{"run", "ftoy", "--clients", "2", "--duration", "1s", "--results", results, "--set", "fake_mode=safe"}, conn...)...)
	if db.settings["fake_mode"] != "fast" || !strings.Contains(strings.Join(db.log, "\n"), "set fake_mode=safe\nrestore fake_mode=fast") {
		t.Errorf("run --set: settings %v, log %q\n%s", db.settings, db.log, r)
	}
	runs := listRuns(t, results)
	if len(runs) != 1 || runs[0].Workload != "ftoy" {
		t.Fatalf("runs %+v", runs)
	}
	if r = h.must(0, "results", "show", fmt.Sprint(runs[0].ID), "--results", results); !strings.Contains(r.stdout, "fakehost") && !strings.Contains(r.stdout, "tps") {
		t.Errorf("results show:\n%s", r)
	}
	h.must(0, append([]string{"check", "ftoy"}, conn...)...)

	// An experiment with a settings matrix on the fake server.
	path := writeExperiment(t, `name: fake-exp
target:
  dsn: fake://main
  settings: {fake_cache: "128"}
workload:
  name: ftoy
  options: {rows: 7, duration: 1s}
matrix:
  settings:
    fake_mode: [fast, safe]
  clients: [1, 2]
order: sequential
`)
	r = h.run("experiment", "run", path, "--results", results)
	if r.code != 0 || !strings.Contains(r.stdout, "tps vs clients") {
		t.Fatalf("experiment:\n%s", r)
	}
	if db.settings["fake_mode"] != "fast" || db.settings["fake_cache"] != "64" {
		t.Errorf("settings after the experiment: %v (log %q)", db.settings, db.log)
	}
	if n := strings.Count(strings.Join(db.log, "\n"), "copy tunebench_exp_template"); n != 4 {
		t.Errorf("%d template copies, want one per run (log %q)", n, db.log)
	}
	html := tempPath(t, "fake.html")
	h.must(0, "report", "fake-exp", "-o", html, "--results", results)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Experiment fake-exp", "bumps per second", "fake_mode=safe", "fakehost"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
