package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/store"
)

// memStore is an in-memory Store.
type memStore struct {
	mu      sync.Mutex
	exps    map[string]*store.Experiment
	links   map[int64]map[int]store.PlanLink
	nextRun int64
	history []string // status changes
	hooks   []store.HookRecord
	reasons map[int64][]string // run id -> reasons added
}

func newMemStore() *memStore {
	return &memStore{exps: map[string]*store.Experiment{}, links: map[int64]map[int]store.PlanLink{}}
}

func (m *memStore) CreateExperiment(_ context.Context, e *store.Experiment) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.exps[e.Name]; ok {
		return 0, errs.Usage("add --resume", "experiment %q already exists", e.Name)
	}
	c := *e
	c.ID = int64(len(m.exps) + 1)
	m.exps[e.Name] = &c
	m.links[c.ID] = map[int]store.PlanLink{}
	m.history = append(m.history, c.Status)
	return c.ID, nil
}

func (m *memStore) GetExperiment(_ context.Context, name string) (*store.Experiment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.exps[name]
	if !ok {
		return nil, errs.Usage("", "no experiment %q", name)
	}
	c := *e
	return &c, nil
}

func (m *memStore) PlanLinks(_ context.Context, id int64) ([]store.PlanLink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.PlanLink
	for i := 0; i < 1000; i++ {
		if l, ok := m.links[id][i]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

func (m *memStore) SetExperimentStatus(_ context.Context, id int64, status string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.exps {
		if e.ID == id {
			e.Status = status
		}
	}
	m.history = append(m.history, status)
	return nil
}

func (m *memStore) SetExperimentPlan(_ context.Context, id int64, plan json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.exps {
		if e.ID == id {
			e.Plan = plan
		}
	}
	return nil
}

func (m *memStore) SavePlanLink(_ context.Context, l store.PlanLink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links[l.ExperimentID][l.PlanIndex] = l
	return nil
}

func (m *memStore) SaveHook(_ context.Context, h store.HookRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hooks = append(m.hooks, h)
	return nil
}

func (m *memStore) AddRunReason(_ context.Context, id int64, code, detail string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reasons == nil {
		m.reasons = map[int64][]string{}
	}
	m.reasons[id] = append(m.reasons[id], code+": "+detail)
	for _, ls := range m.links {
		for i, l := range ls {
			if l.RunID == id && l.Status == store.StatusOK {
				l.Status = store.StatusErrors
				ls[i] = l
			}
		}
	}
	return nil
}

// saveRun is what a real run does: the run and its link in one go.
func (m *memStore) saveRun(l store.PlanLink, status string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextRun++
	l.RunID, l.Status = m.nextRun, status
	m.links[l.ExperimentID][l.PlanIndex] = l
	return m.nextRun
}

// fakeEnv records what the orchestrator asks for.
type fakeEnv struct {
	st  *memStore
	log []string
	// runHook decides a run's fate: return a status to store (and an
	// error), or "" to store nothing.
	runHook func(ctx context.Context, req RunRequest) (string, error)
	failOn  string // a step kind whose call fails
	closed  int
	// badValue is a setting (name=value) Check refuses.
	badValue string
}

type fakeTarget struct {
	env *fakeEnv
	dir string
}

func (e *fakeEnv) Open(_ context.Context, dir string) (Target, error) {
	e.log = append(e.log, "open "+dir)
	if e.failOn == "open" {
		return nil, errs.New(errs.KindConnect, "", "cannot start")
	}
	return &fakeTarget{env: e, dir: dir}, nil
}

func (t *fakeTarget) Apply(_ context.Context, s []Setting) (bool, error) {
	t.env.log = append(t.env.log, "apply "+settingsText(s))
	if t.env.failOn == "apply" {
		return false, errs.Usage("", "bad value")
	}
	return false, nil
}

func (t *fakeTarget) Check(_ context.Context, s []Setting) error {
	for _, set := range s {
		if set.String() == t.env.badValue {
			return errs.Usage("use a smaller value", "%s is too big for this machine", set)
		}
	}
	return nil
}

func (t *fakeTarget) Load(_ context.Context, c *Config) (bool, error) {
	t.env.log = append(t.env.log, "load "+c.Load.Text([]string{"scale"}))
	return true, nil
}

func (t *fakeTarget) Reset(ctx context.Context) error {
	t.env.log = append(t.env.log, "reset")
	return ctx.Err()
}

func (t *fakeTarget) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	t.env.log = append(t.env.log, "run "+req.Plan.describeRun(req.Index))
	if req.Link.ExperimentID == 0 || req.Link.PlanIndex != req.Index || req.Options["clients"] == "" || req.Seed == 0 {
		return RunResult{}, fmt.Errorf("bad request %+v", req)
	}
	status, err := store.StatusOK, error(nil)
	if t.env.runHook != nil {
		status, err = t.env.runHook(ctx, req)
	}
	if status == "" {
		return RunResult{}, err
	}
	id := t.env.st.saveRun(req.Link, status)
	return RunResult{RunID: id, Status: status, Metric: 100, Brief: "100 tps"}, err
}

func (t *fakeTarget) Close(ctx context.Context) error {
	t.env.closed++
	t.env.log = append(t.env.log, "close "+t.dir)
	return ctx.Err() // must not be cancelled
}

// fakeClock advances on Sleep only.
type fakeClock struct {
	now    time.Time
	slept  time.Duration
	sleeps int
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	c.slept += d
	c.sleeps++
	return nil
}

func newRunner(st *memStore, env *fakeEnv) (*Runner, *[]Event) {
	var events []Event
	return &Runner{Store: st, Env: env, Clock: &fakeClock{now: time.Unix(1000, 0)}, Observe: func(e Event) { events = append(events, e) },
		Environ: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}, &events
}

const execSpec = `name: exec
target: {managed: {dir: /srv/a}}
workload: {name: bench, options: {duration: 2s, scale: 1}}
matrix:
  settings: {work_mem: [4MB, 8MB]}
  clients: [1, 2]
repetitions: 1
warmup_runs: 1
cooldown: 3s
order: sequential
`

func TestExecuteAll(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st}
	r, events := newRunner(st, env)
	p := mustPlan(t, execSpec, 1)
	out, err := r.Execute(context.Background(), p, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"open /srv/a", "load scale=1",
		"apply work_mem=4MB", "reset", "run work_mem=4MB clients=2 warm-up 1",
		"reset", "run work_mem=4MB clients=1 rep 1", "reset", "run work_mem=4MB clients=2 rep 1",
		"apply work_mem=8MB", "reset", "run work_mem=8MB clients=2 warm-up 1",
		"reset", "run work_mem=8MB clients=1 rep 1", "reset", "run work_mem=8MB clients=2 rep 1",
		"close /srv/a",
	}
	if got := strings.Join(env.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if out.Status != store.ExpDone || out.Ran != 6 || out.Failed != 0 || out.Skipped != 0 {
		t.Errorf("outcome %+v", out)
	}
	if c := r.Clock.(*fakeClock); c.sleeps != 5 || c.slept != 15*time.Second {
		t.Errorf("cool-downs: %d, %v; want 5 between 6 runs", c.sleeps, c.slept)
	}
	e, _ := st.GetExperiment(context.Background(), "exec")
	if e.Status != store.ExpDone || e.Spec != execSpec || len(e.Plan) == 0 {
		t.Errorf("experiment %+v", e)
	}
	links, _ := st.PlanLinks(context.Background(), e.ID)
	if len(links) != 6 || !links[0].Warmup || links[1].XName != "clients" || links[1].XValue != 1 || links[1].Config != "work_mem=4MB" {
		t.Errorf("links %+v", links)
	}
	// Events: begin, a start and an end per step, end; runs numbered 1..6.
	var runs []string
	for _, ev := range *events {
		if ev.Kind == EventStep && ev.Step.Kind == StepRun {
			runs = append(runs, fmt.Sprintf("%d/%d", ev.Ordinal, ev.Total))
		}
	}
	if strings.Join(runs, " ") != "1/6 2/6 3/6 4/6 5/6 6/6" || (*events)[0].Kind != EventBegin || (*events)[len(*events)-1].Status != store.ExpDone {
		t.Errorf("run events %v", runs)
	}
	// The same name again is refused (the store's rule).
	if _, err := r.Execute(context.Background(), p, false); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("second start: %v", err)
	}
}

// TestExecuteInterruptAndResume interrupts during the second counted run:
// the target is closed (settings restored) with a live context, the
// experiment is marked interrupted with exit 130, and a resume does the
// remaining runs only (the interrupted one again, its block's warm-up too).
func TestExecuteInterruptAndResume(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	env.runHook = func(ctx context.Context, req RunRequest) (string, error) {
		n++
		if n == 3 { // warm-up, rep 1, then this one
			cancel()
			return store.StatusInterrupted, errs.New(errs.KindInterrupted, "", "run interrupted")
		}
		return store.StatusOK, nil
	}
	r, _ := newRunner(st, env)
	p := mustPlan(t, execSpec, 1)
	out, err := r.Execute(ctx, p, false)
	if errs.KindOf(err) != errs.KindInterrupted || !strings.Contains(errs.HintOf(err), "--resume") {
		t.Fatalf("interrupted: %v", err)
	}
	if out.Status != store.ExpInterrupted || env.closed != 1 || env.log[len(env.log)-1] != "close /srv/a" {
		t.Errorf("outcome %+v, closed %d, log %v", out, env.closed, env.log)
	}
	if st.history[len(st.history)-1] != store.ExpInterrupted {
		t.Errorf("status history %v", st.history)
	}

	// Resume: the interrupted run (index 2) and the runs after it; the
	// first block's warm-up again, the completed rep 1 not.
	env.log, env.runHook = nil, nil
	p2 := mustPlan(t, execSpec, 1)
	out, err = r.Execute(context.Background(), p2, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"open /srv/a", "load scale=1",
		"apply work_mem=4MB", "reset", "run work_mem=4MB clients=2 warm-up 1", "reset", "run work_mem=4MB clients=2 rep 1",
		"apply work_mem=8MB", "reset", "run work_mem=8MB clients=2 warm-up 1",
		"reset", "run work_mem=8MB clients=1 rep 1", "reset", "run work_mem=8MB clients=2 rep 1",
		"close /srv/a",
	}
	if got := strings.Join(env.log, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("resumed calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if out.Skipped != 1 || out.Ran != 5 || out.Status != store.ExpDone {
		t.Errorf("resume outcome %+v", out)
	}
	links, _ := st.PlanLinks(context.Background(), out.ExperimentID)
	for _, l := range links {
		if l.Status != store.StatusOK {
			t.Errorf("link %d status %s", l.PlanIndex, l.Status)
		}
	}
	if links[1].RunID != 2 {
		t.Errorf("the completed run was redone: link %+v", links[1])
	}
	// Nothing left: a resume does nothing and says done.
	env.log = nil
	out, err = r.Execute(context.Background(), mustPlan(t, execSpec, 1), true)
	if err != nil || len(env.log) != 0 || out.Status != store.ExpDone || out.Skipped != 4 {
		t.Errorf("resume of a done experiment: %+v %v %v", out, err, env.log)
	}
	// A changed file is refused.
	_, err = r.Execute(context.Background(), mustPlan(t, strings.Replace(execSpec, "clients: [1, 2]", "clients: [1, 2, 4]", 1), 1), true)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), "changed since it started") {
		t.Errorf("resume with another matrix: %v", err)
	}
	// An unknown experiment cannot be resumed.
	_, err = r.Execute(context.Background(), mustPlan(t, strings.Replace(execSpec, "name: exec", "name: other", 1), 1), true)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "without --resume") {
		t.Errorf("resume of an unknown experiment: %v", err)
	}
}

func TestExecuteFailures(t *testing.T) {
	// A stored run with errors over the threshold: carry on, exit with its kind.
	st := newMemStore()
	env := &fakeEnv{st: st, runHook: func(_ context.Context, req RunRequest) (string, error) {
		if req.Index == 1 {
			return store.StatusErrors, errs.New(errs.KindRunErrors, "", "too many errors")
		}
		return store.StatusOK, nil
	}}
	r, _ := newRunner(st, env)
	out, err := r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if errs.KindOf(err) != errs.KindRunErrors || out.Ran != 6 || out.Status != store.ExpDone {
		t.Errorf("errors over threshold: %+v %v", out, err)
	}

	// A run that stores nothing stops the experiment: link saved as failed.
	st = newMemStore()
	env = &fakeEnv{st: st, runHook: func(_ context.Context, req RunRequest) (string, error) {
		if req.Index == 1 {
			return "", errs.New(errs.KindConnect, "", "server gone")
		}
		return store.StatusOK, nil
	}}
	r, _ = newRunner(st, env)
	out, err = r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if errs.KindOf(err) != errs.KindConnect || out.Status != store.ExpFailed || out.Ran != 2 || env.closed != 1 {
		t.Errorf("failed run: %+v %v closed %d", out, err, env.closed)
	}
	links, _ := st.PlanLinks(context.Background(), out.ExperimentID)
	if len(links) != 2 || links[1].Status != store.StatusFailed || links[1].RunID != 0 {
		t.Errorf("links after a failed run: %+v", links)
	}
	// Resume redoes it.
	todo, done, err := mustPlan(t, execSpec, 1).Remaining(links)
	if err != nil || done != 0 || !todo[0] || !todo[1] || !todo[5] {
		t.Errorf("remaining after failure: %v %d %v", todo, done, err)
	}

	// A setting that cannot be applied: failed, target closed.
	st = newMemStore()
	env = &fakeEnv{st: st, failOn: "apply"}
	r, _ = newRunner(st, env)
	out, err = r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if errs.KindOf(err) != errs.KindUsage || out.Status != store.ExpFailed || env.closed != 1 || out.Ran != 0 {
		t.Errorf("apply failure: %+v %v", out, err)
	}
	// A server that does not start: failed, nothing to close.
	st = newMemStore()
	env = &fakeEnv{st: st, failOn: "open"}
	r, _ = newRunner(st, env)
	out, err = r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if errs.KindOf(err) != errs.KindConnect || out.Status != store.ExpFailed || env.closed != 0 {
		t.Errorf("open failure: %+v %v", out, err)
	}
	// A workload that cannot run yet is refused before anything happens.
	st = newMemStore()
	r, _ = newRunner(st, &fakeEnv{st: st})
	_, err = r.Execute(context.Background(), mustPlan(t, "workload: {name: oltp}\n", 1), false)
	if errs.KindOf(err) != errs.KindUsage || len(st.exps) != 0 {
		t.Errorf("not runnable: %v", err)
	}
}

func TestRemaining(t *testing.T) {
	p := mustPlan(t, execSpec, 1) // runs: w, r(1), r(2) | w, r(1), r(2)
	link := func(i int, status string) store.PlanLink {
		l := p.Link(1, i)
		l.Status = status
		return l
	}
	cases := []struct {
		name  string
		links []store.PlanLink
		want  string
		done  int
	}{
		{"nothing stored", nil, "111111", 0},
		{"first block done", []store.PlanLink{link(0, "ok"), link(1, "ok"), link(2, "errors")}, "000111", 2},
		{"interrupted counted run redoes its warm-up", []store.PlanLink{link(0, "ok"), link(1, "ok"), link(2, "interrupted")}, "101111", 1},
		{"failed check redone", []store.PlanLink{link(0, "ok"), link(1, "failed"), link(2, "ok"), link(4, "ok"), link(5, "ok")}, "110000", 3},
		{"all done", []store.PlanLink{link(1, "ok"), link(2, "ok"), link(4, "ok"), link(5, "ok")}, "000000", 4},
	}
	for _, c := range cases {
		todo, done, err := p.Remaining(c.links)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var b strings.Builder
		for _, x := range todo {
			if x {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		if b.String() != c.want || done != c.done {
			t.Errorf("%s: todo %s done %d, want %s %d", c.name, b.String(), done, c.want, c.done)
		}
	}
	bad := link(1, "ok")
	bad.Config = "work_mem=16MB"
	if _, _, err := p.Remaining([]store.PlanLink{bad}); err == nil || !strings.Contains(err.Error(), "plan entry 2") {
		t.Errorf("mismatched link: %v", err)
	}
	if _, _, err := p.Remaining([]store.PlanLink{{PlanIndex: 99}}); err == nil {
		t.Errorf("link beyond the plan accepted")
	}
}

func TestETA(t *testing.T) {
	e := newETA([]Step{{Estimate: 10 * time.Second}, {Estimate: 30 * time.Second}, {Estimate: 20 * time.Second}})
	if e.remaining(0) != time.Minute {
		t.Errorf("initial %v", e.remaining(0))
	}
	e.done(0, 10*time.Second)
	e.done(1, 60*time.Second) // twice as slow as estimated
	if got := e.remaining(2); got != 35*time.Second {
		t.Errorf("scaled remaining %v, want 20s x 70/40", got)
	}
}

func TestJoinKeepKind(t *testing.T) {
	a := errs.New(errs.KindInterrupted, "resume", "stopped")
	j := joinKeepKind(nil, a, errors.New("close failed"))
	if errs.KindOf(j) != errs.KindInterrupted || errs.HintOf(j) != "resume" || !strings.Contains(j.Error(), "close failed") || !errors.Is(j, a) {
		t.Errorf("joined: %v", j)
	}
	if joinKeepKind(nil, nil) != nil || joinKeepKind(a) != a {
		t.Errorf("trivial joins")
	}
}

// A value the server would refuse in the last configuration stops the
// experiment before its first run, naming the file line (issue 16, item 3).
func TestExecuteChecksSettingsFirst(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st, badValue: "work_mem=8MB"}
	r, _ := newRunner(st, env)
	out, err := r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if errs.KindOf(err) != errs.KindUsage || out.Ran != 0 || env.closed != 1 {
		t.Fatalf("bad value: %+v %v", out, err)
	}
	if !strings.Contains(err.Error(), ":5: matrix.settings.work_mem: 8MB") || errs.HintOf(err) != "use a smaller value" {
		t.Errorf("error does not name the line and keep the fix: %v (hint %q)", err, errs.HintOf(err))
	}
	for _, l := range env.log {
		if strings.HasPrefix(l, "apply") || strings.HasPrefix(l, "run") {
			t.Errorf("%q happened before the check refused the value", l)
		}
	}
}

// A resume that cannot start (its server refuses) leaves the experiment's
// status as it was (issue 16, item 5).
func TestResumeThatCannotStartKeepsStatus(t *testing.T) {
	st := newMemStore()
	r, _ := newRunner(st, &fakeEnv{st: st, runHook: func(ctx context.Context, req RunRequest) (string, error) {
		return store.StatusInterrupted, errs.New(errs.KindInterrupted, "", "interrupted")
	}})
	out, _ := r.Execute(context.Background(), mustPlan(t, execSpec, 1), false)
	if out.Status != store.ExpInterrupted && out.Status != store.ExpFailed {
		t.Fatalf("first attempt: %+v", out)
	}
	before := out.Status
	r, _ = newRunner(st, &fakeEnv{st: st, failOn: "open"})
	out, err := r.Execute(context.Background(), mustPlan(t, execSpec, 1), true)
	if err == nil || out.Ran != 0 {
		t.Fatalf("resume: %+v %v", out, err)
	}
	e, _ := st.GetExperiment(context.Background(), "exec")
	if e.Status != before {
		t.Errorf("a resume that could not start turned status %s into %s", before, e.Status)
	}
	// Killed -9, the experiment still says running: a resume that cannot
	// start says interrupted (nothing runs it any more).
	if err := st.SetExperimentStatus(context.Background(), e.ID, store.ExpRunning, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), mustPlan(t, execSpec, 1), true); err == nil {
		t.Fatal("resume on a server that does not open: no error")
	}
	if e, _ = st.GetExperiment(context.Background(), "exec"); e.Status != store.ExpInterrupted {
		t.Errorf("a killed experiment whose resume could not start is %s, want interrupted", e.Status)
	}
}
