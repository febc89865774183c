package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/store"
)

// hookSpec has two configurations of two runs each (no warm-up), so a
// skipped block and a skipped run can be told apart.
func hookSpec(hooks string) string {
	return `name: exec
target: {managed: {dir: /srv/a}}
workload: {name: bench, options: {duration: 2s, scale: 1}}
matrix:
  settings: {work_mem: [4MB, 8MB]}
  clients: [1, 2]
order: sequential
hooks:
` + hooks
}

func TestHooksParse(t *testing.T) {
	p := mustPlan(t, hookSpec(`  before_run: echo one
  after_run: [echo a, {run: echo b, timeout: 2s}]
`), 1)
	if len(p.Hooks) != 3 || p.Hooks[2].Command != "echo b" || p.Hooks[2].Timeout != 2 || p.Hooks[0].Timeout != DefaultHookTimeout.Seconds() {
		t.Errorf("hooks %+v", p.Hooks)
	}
	for _, c := range []struct{ hooks, want string }{
		{"  before_runs: echo\n", `unknown key "before_runs" in hooks (did you mean before_run?)`},
		{"  before_run: {run: echo, timeout: soon}\n", "hooks.before_run.timeout must be a duration"},
		{"  before_run: {timeout: 1s}\n", "hooks.before_run has no command"},
		{"  before_run: {run: echo, when: always}\n", `unknown key "when" in hooks.before_run`},
		{"  after_run: []\n", "hooks.after_run is an empty list"},
	} {
		_, err := Parse("exp.yaml", []byte(hookSpec(c.hooks)), testCatalog(), pgSettings)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.hooks, err, c.want)
		}
	}
}

// TestHooksOrderAndVariables: the hooks run at their points, in order,
// with the variables that say where they are, and are stored.
func TestHooksOrderAndVariables(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	st := newMemStore()
	env := &fakeEnv{st: st}
	r, _ := newRunner(st, env)
	echo := func(what string) string { return `echo "` + what + `" >> ` + log }
	p := mustPlan(t, hookSpec(`  before_experiment: '`+echo("BE $TUNEBENCH_EXPERIMENT")+`'
  before_config: '`+echo("BC $TUNEBENCH_CONFIG_INDEX $TUNEBENCH_VALUE_WORK_MEM")+`'
  before_run: '`+echo("BR $TUNEBENCH_RUN $TUNEBENCH_X $TUNEBENCH_REPETITION")+`; echo to-stderr >&2'
  after_run: '`+echo("AR $TUNEBENCH_RUN $TUNEBENCH_RUN_ID $TUNEBENCH_RUN_STATUS")+`'
  after_experiment: '`+echo("AE")+`'
`), 1)
	out, err := r.Execute(context.Background(), p, false)
	if err != nil || out.Status != store.ExpDone {
		t.Fatalf("%+v %v", out, err)
	}
	b, _ := os.ReadFile(log)
	want := `BE exec
BC 1 4MB
BR 1 1 1
AR 1 1 ok
BR 2 2 1
AR 2 2 ok
BC 2 8MB
BR 3 1 1
AR 3 3 ok
BR 4 2 1
AR 4 4 ok
AE
`
	if string(b) != want {
		t.Errorf("hooks ran:\n%s\nwant:\n%s", b, want)
	}
	if len(st.hooks) != 12 {
		t.Fatalf("%d hooks stored", len(st.hooks))
	}
	br := st.hooks[2]
	if br.Point != HookBeforeRun || br.PlanIndex != 0 || br.RunID != 1 || br.Config != "work_mem=4MB" || br.ExitCode != 0 ||
		!strings.Contains(br.Output, "to-stderr") || br.ExperimentID == 0 {
		t.Errorf("before_run's record: %+v", br)
	}
	if be := st.hooks[0]; be.PlanIndex != -1 || be.Config != "" || be.RunID != 0 {
		t.Errorf("before_experiment's record: %+v", be)
	}
}

// TestHooksFailurePolicy: a failed before_run skips its run, a failed
// before_config (here: timed out) its configuration's runs, a failed
// after_run is a reason on its run; the experiment ends failed (to be
// resumed) with the runs' exit code.
func TestHooksFailurePolicy(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st}
	r, events := newRunner(st, env)
	p := mustPlan(t, hookSpec(`  before_config: {run: 'if [ "$TUNEBENCH_CONFIG_INDEX" = 2 ]; then sleep 10; fi', timeout: 300ms}
  before_run: 'if [ "$TUNEBENCH_RUN" = 2 ]; then echo no disk >&2; exit 3; fi'
  after_run: 'test "$TUNEBENCH_RUN" != 1'
`), 1)
	t0 := time.Now()
	out, err := r.Execute(context.Background(), p, false)
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("the timeout did not stop the hook: %s", took)
	}
	if out.Ran != 1 || out.HookSkipped != 3 || out.Status != store.ExpFailed {
		t.Errorf("outcome %+v", out)
	}
	if errs.KindOf(err) != errs.KindRunErrors || !strings.Contains(err.Error(), "run 1: hook after_run") {
		t.Errorf("error %v (kind %v)", err, errs.KindOf(err))
	}
	links := st.links[out.ExperimentID]
	if links[0].Status != store.StatusErrors || links[1].Status != store.StatusSkipped || links[2].Status != store.StatusSkipped || links[3].Status != store.StatusSkipped {
		t.Errorf("links %+v", links)
	}
	if rs := st.reasons[links[0].RunID]; len(rs) != 1 || !strings.HasPrefix(rs[0], "after_run_hook: hook after_run `test \"$TUNEBENCH_RUN\" != 1` failed: exit status 1") {
		t.Errorf("run 1's reasons %q", rs)
	}
	var skipped []string
	for _, e := range *events {
		if e.SkippedBy != "" {
			skipped = append(skipped, e.SkippedBy)
		}
	}
	if len(skipped) != 3 || !strings.Contains(skipped[0], "exit status 3: no disk") || !strings.Contains(skipped[1], "timed out after 300ms") {
		t.Errorf("skipped: %q", skipped)
	}
	var timedOut, br2 *store.HookRecord
	for i := range st.hooks {
		h := &st.hooks[i]
		if h.TimedOut {
			timedOut = h
		}
		if h.Point == HookBeforeRun && h.PlanIndex == 1 {
			br2 = h
		}
	}
	if timedOut == nil || timedOut.Point != HookBeforeConfig || timedOut.ExitCode != -1 || timedOut.ElapsedS > 3 {
		t.Errorf("timed out hook %+v", timedOut)
	}
	if br2 == nil || br2.ExitCode != 3 || br2.RunID != 0 || !strings.Contains(br2.Output, "no disk") {
		t.Errorf("the failed before_run's record %+v", br2)
	}
	// Resume does the skipped runs again.
	todo, done, err := p.Remaining(linkList(links))
	if err != nil || done != 1 || !todo[1] || !todo[2] || !todo[3] {
		t.Errorf("remaining %v %d %v", todo, done, err)
	}
}

func linkList(m map[int]store.PlanLink) []store.PlanLink {
	var out []store.PlanLink
	for _, l := range m {
		out = append(out, l)
	}
	return out
}

// TestHookBeforeExperimentFails: nothing is opened or run.
func TestHookBeforeExperimentFails(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st}
	r, _ := newRunner(st, env)
	p := mustPlan(t, hookSpec("  before_experiment: 'echo cannot restore; false'\n"), 1)
	out, err := r.Execute(context.Background(), p, false)
	if err == nil || !strings.Contains(err.Error(), "hook before_experiment `echo cannot restore; false` failed: exit status 1: cannot restore") ||
		out.Ran != 0 || len(env.log) != 0 || out.Status != store.ExpFailed {
		t.Errorf("%+v %v %v", out, err, env.log)
	}
}

func TestCappedOutput(t *testing.T) {
	c := &capped{max: 10}
	c.Write([]byte("abc"))
	c.Write([]byte("defghijklmnop"))
	c.Write([]byte("XYZ"))
	if got := c.String(); got != "abcde\n[... 9 bytes cut ...]\nopXYZ" {
		t.Errorf("%q", got)
	}
}

// TestHookBackgroundChild: a hook that leaves a process in the background
// holding its output succeeds with its exit status, and says so.
func TestHookBackgroundChild(t *testing.T) {
	old := hookWaitDelay
	hookWaitDelay = 200 * time.Millisecond
	defer func() { hookWaitDelay = old }()
	rec := RunHookCommand(context.Background(), Hook{Point: HookBeforeRun, Command: "sleep 3 & echo started", Timeout: 10},
		[]string{"PATH=/usr/bin:/bin"})
	if !rec.OK() || rec.ElapsedS > 2 || !strings.Contains(rec.Output, "started") || !strings.Contains(rec.Output, "kept its output open") {
		t.Errorf("%+v", rec)
	}
}

// TestHookFailedBeforeConfigSkipsTheRest: the hooks after a failed
// before_config of the same block are not run.
func TestHookFailedBeforeConfigSkipsTheRest(t *testing.T) {
	st := newMemStore()
	env := &fakeEnv{st: st}
	r, _ := newRunner(st, env)
	p := mustPlan(t, hookSpec("  before_config: ['test \"$TUNEBENCH_CONFIG_INDEX\" = 2', 'echo second']\n"), 1)
	out, _ := r.Execute(context.Background(), p, false)
	if out.HookSkipped != 2 || out.Ran != 2 {
		t.Errorf("%+v", out)
	}
	var cmds []string
	for _, h := range st.hooks {
		cmds = append(cmds, h.Config+": "+h.Command)
	}
	want := []string{`work_mem=4MB: test "$TUNEBENCH_CONFIG_INDEX" = 2`, `work_mem=8MB: test "$TUNEBENCH_CONFIG_INDEX" = 2`, "work_mem=8MB: echo second"}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("hooks run:\n%s", strings.Join(cmds, "\n"))
	}
}

func TestKernelSpec(t *testing.T) {
	base := `name: k
workload: {name: bench, options: {duration: 2s}}
`
	p := mustPlan(t, base+`matrix:
  kernel:
    kernel.numa_balancing: [0, 1]
    transparent_hugepage.enabled: [never, always]
    queue.scheduler: [none, mq-deadline]
    queue.nr_requests: [64]
baseline: {kernel.numa_balancing: 1, transparent_hugepage.enabled: always, queue.scheduler: none}
order: sequential
`, 1)
	if !strings.Contains(p.Baseline, "kernel.numa_balancing=1 transparent_hugepage=always queue.scheduler=none") {
		t.Errorf("baseline %q", p.Baseline)
	}
	// A new scheduler resets nr_requests: the queue is set again.
	var kernelSteps []string
	for _, s := range p.Schedule(nil) {
		if s.Kind == StepKernel {
			kernelSteps = append(kernelSteps, settingsText(s.Kernel))
		}
	}
	if len(kernelSteps) < 2 || kernelSteps[1] != "queue.scheduler=mq-deadline queue.nr_requests=64" {
		t.Errorf("kernel steps %q", kernelSteps)
	}
	for _, c := range []struct{ src, want string }{
		{"matrix: {kernel: {vm.nr_hugepages: [0, 512]}}\n", "vm.nr_hugepages cannot vary in matrix.kernel"},
		{"matrix: {kernel: {queue.nr_request: [64]}}\n", "did you mean queue.nr_requests?"},
		{"matrix: {kernel: {transparent_hugepage: [never], transparent_hugepage.enabled: [always]}}\n", "transparent_hugepage is given twice"},
		{"target: {kernel: {vm.swappiness: 1}}\nmatrix: {kernel: {vm.swappiness: [10]}}\n", "vm.swappiness is in target.kernel and in matrix.kernel"},
		{"target: {dsn: host=db1, kernel: {queue.nr_requests: 64}}\n", "block queue settings need a managed target"},
	} {
		_, err := Parse("exp.yaml", []byte(base+c.src), testCatalog(), pgSettings)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}
