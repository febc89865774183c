package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/kernel"
	"github.com/tunebench/tunebench/internal/testutil"
)

// These tests change real kernel settings of this machine; they are not
// parallel (the CLI's other tests run after them) and each checks the
// settings are back, and puts them back itself when they are not.

const (
	dirtyRatio = "/proc/sys/vm/dirty_ratio"
	thpEnabled = "/sys/kernel/mm/transparent_hugepage/enabled"
	hugePages  = "/proc/sys/vm/nr_hugepages"
)

// needKernel fails (in CI) or skips when this process cannot change
// kernel settings, and returns a guard that restores the files given and
// reports any the test left changed.
func needKernel(t *testing.T, paths ...string) {
	t.Helper()
	if err := kernel.Local().Supported(); err != nil {
		if testutil.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	for _, p := range paths {
		orig, err := kernel.Read(p)
		if err != nil {
			if testutil.InCI() {
				t.Fatal(err)
			}
			t.Skip(err)
		}
		t.Cleanup(func() {
			if v, _ := kernel.Read(p); v != orig {
				t.Errorf("%s left at %s, was %s (restored by the test)", p, v, orig)
				os.WriteFile(p, []byte(orig), 0)
			}
		})
	}
}

func readKernel(t *testing.T, p string) string {
	t.Helper()
	v, err := kernel.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// other picks a value of the list that is not cur.
func other(cur string, list ...string) string {
	for _, v := range list {
		if v != cur {
			return v
		}
	}
	return list[0]
}

// TestExperimentKernelAndHooks: vm.dirty_ratio and transparent_hugepage
// varied in a small experiment, with a hook at every point: each run
// records the values it ran with, the hooks see them and where they are,
// run in order and are stored, and everything is restored at the end.
func TestExperimentKernelAndHooks(t *testing.T) {
	needKernel(t, dirtyRatio, thpEnabled)
	h := newHarness(t)
	journal := filepath.Join(t.TempDir(), "kernel.json")
	h.env[kernel.JournalEnv] = journal
	srv := testutil.StartServer(t)
	results := tempPath(t, "results.db")
	log := filepath.Join(t.TempDir(), "hooks.log")
	dr0, thp0 := readKernel(t, dirtyRatio), readKernel(t, thpEnabled)
	d1, d2 := other(dr0, "11", "12"), other(dr0, "41", "42")
	path := writeExperiment(t, fmt.Sprintf(`name: it-kernel
target:
  managed: {dir: %[1]s}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, clients: 1}
matrix:
  kernel:
    vm.dirty_ratio: [%[2]s, %[3]s]
    transparent_hugepage: [never, madvise]
order: sequential
hooks:
  before_experiment: echo "before_experiment $TUNEBENCH_EXPERIMENT" >> %[4]s
  before_config: echo "before_config $TUNEBENCH_CONFIG_INDEX $(cat %[5]s) $TUNEBENCH_VALUE_VM_DIRTY_RATIO" >> %[4]s
  before_run:
    - echo "before_run $TUNEBENCH_RUN $PGDATABASE" >> %[4]s
    - run: '"$TUNEBENCH_PG_BIN/psql" -Atc "select count(*) from pgbench_branches"'
      timeout: 30s
  after_run: echo "after_run $TUNEBENCH_RUN $TUNEBENCH_RUN_ID $TUNEBENCH_RUN_STATUS" >> %[4]s
  after_experiment: echo "after_experiment" >> %[4]s
`, srv.Dir(), d1, d2, log, dirtyRatio))
	dry := h.must(0, "experiment", "run", path, "--dry-run")
	for _, want := range []string{"set kernel vm.dirty_ratio=" + d1 + " transparent_hugepage=never", "hook before_run: echo", "hook after_experiment"} {
		if !strings.Contains(dry.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.stdout)
		}
	}
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !strings.Contains(r.stderr, "kernel settings restored") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if dr, thp := readKernel(t, dirtyRatio), readKernel(t, thpEnabled); dr != dr0 || thp != thp0 {
		t.Errorf("after the experiment dirty_ratio=%s THP=%s, want %s %s", dr, thp, dr0, thp0)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("the kernel journal is left: %v", err)
	}

	// Every run recorded the kernel values it ran with, as its link says.
	_, links := expLinks(t, results, "it-kernel")
	if len(links) != 4 {
		t.Fatalf("links %+v", links)
	}
	for _, l := range links {
		run := getRun(t, results, l.RunID)
		var env struct {
			Kernel []struct{ Key, Value, Previous string } `json:"kernel"`
		}
		if err := json.Unmarshal(run.Env, &env); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, k := range env.Kernel {
			got[k.Key] = k.Value
			if (k.Key == "vm.dirty_ratio" && k.Previous != dr0) || (k.Key == "transparent_hugepage" && k.Previous != thp0) {
				t.Errorf("run %d: %s previous %s", l.RunID, k.Key, k.Previous)
			}
		}
		want := fmt.Sprintf("vm.dirty_ratio=%s transparent_hugepage=%s", got["vm.dirty_ratio"], got["transparent_hugepage"])
		if want != l.Config {
			t.Errorf("run %d recorded %s, its configuration is %s (env %s)", l.RunID, want, l.Config, run.Env)
		}
	}

	// The hooks ran in order, saw where they were, and were stored.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var kinds []string
	for _, l := range lines {
		kinds = append(kinds, strings.Fields(l)[0])
	}
	wantKinds := "before_experiment" + strings.Repeat(" before_config before_run after_run", 4) + " after_experiment"
	if strings.Join(kinds, " ") != wantKinds {
		t.Errorf("hook order:\n%s\nwant %s", b, wantKinds)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		switch f[0] {
		case "before_config":
			if len(f) != 4 || f[2] != f[3] {
				t.Errorf("before_config saw dirty_ratio %v (the kernel's, then the configuration's)", f)
			}
		case "before_run":
			if len(f) != 3 || f[2] != "tunebench_exp" {
				t.Errorf("before_run: %q", l)
			}
		case "after_run":
			if len(f) != 4 || f[3] != "ok" || f[2] == "0" {
				t.Errorf("after_run: %q", l)
			}
		}
	}
	show := h.must(0, "experiment", "show", "it-kernel", "--results", results, "--hooks")
	if !strings.Contains(show.stdout, "hooks: 18 ran, 0 failed") || !strings.Contains(show.stdout, "    | 1") ||
		!strings.Contains(show.stdout, "before_run of plan #1 (run ") {
		t.Errorf("show --hooks:\n%s", show.stdout)
	}

	// The report's environment table and compare show the kernel settings.
	out := tempPath(t, "r.html")
	h.must(0, "report", "it-kernel", "--results", results, "-o", out)
	if html, err := os.ReadFile(out); err != nil || !strings.Contains(string(html), "Kernel settings") || !strings.Contains(string(html), "vm.dirty_ratio="+d1) {
		t.Errorf("the report has no Kernel settings row (%v)", err)
	}
	cmp := h.must(0, "compare", fmt.Sprint(links[0].RunID), fmt.Sprint(links[2].RunID), "--results", results)
	if !strings.Contains(cmp.stdout, "kernel vm.dirty_ratio: A "+d1+", B "+d2) {
		t.Errorf("compare:\n%s", cmp.stdout)
	}
}

// TestExperimentKernelKilled: an experiment killed -9 mid-run leaves its
// kernel change; the next command restores it and says so.
func TestExperimentKernelKilled(t *testing.T) {
	needKernel(t, dirtyRatio)
	h := newHarness(t)
	journal := filepath.Join(t.TempDir(), "kernel.json")
	h.env[kernel.JournalEnv] = journal
	srv := testutil.StartServer(t)
	dr0 := readKernel(t, dirtyRatio)
	d := other(dr0, "13", "14")
	path := writeExperiment(t, fmt.Sprintf(`name: it-kernel-kill
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 60s, clients: 1}
matrix:
  kernel:
    vm.dirty_ratio: [%s]
`, srv.Dir(), d))
	sp := h.spawn("experiment", "run", path, "--results", tempPath(t, "r.db"))
	sp.waitStderr(t, "== run 1/1", 60*time.Second)
	sp.kill()
	if v := readKernel(t, dirtyRatio); v != d {
		t.Fatalf("the killed experiment's vm.dirty_ratio is %s, want %s left behind", v, d)
	}
	r := h.must(0, "results", "list", "--results", tempPath(t, "other.db"))
	if !strings.Contains(r.stderr, "restored kernel setting vm.dirty_ratio to "+dr0+" (was "+d+"), left changed by a tunebench process that ended") {
		t.Errorf("the next command does not say what it restored:\n%s", r)
	}
	if v := readKernel(t, dirtyRatio); v != dr0 {
		t.Errorf("vm.dirty_ratio %s after the next command, want %s", v, dr0)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
}

// TestExperimentKernelRefused: a key that does not exist and a value that
// does not parse are refused before anything starts.
func TestExperimentKernelRefused(t *testing.T) {
	needKernel(t, dirtyRatio)
	h := newHarness(t)
	h.env[kernel.JournalEnv] = filepath.Join(t.TempDir(), "kernel.json")
	dir := filepath.Join(t.TempDir(), "srv")
	for _, c := range []struct{ kernel, want string }{
		{"vm.no_such_setting: [1]", "kernel setting vm.no_such_setting does not exist on this machine"},
		{"vm.dirty_ratio: [10, ten]", `invalid value "ten" for vm.dirty_ratio: not an integer`},
		{"transparent_hugepage: [sometimes]", `use one of: always, madvise, never`},
		{"vm.drop_caches: [3]", "an action, not a setting"},
	} {
		path := writeExperiment(t, fmt.Sprintf(`name: it-kernel-bad
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s}
matrix:
  kernel:
    %s
`, dir, c.kernel))
		r := h.run("experiment", "run", path, "--results", tempPath(t, "r.db"))
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "nothing was started") {
			t.Errorf("%s:\n%s", c.kernel, r)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: a server directory was made", c.kernel)
		}
	}
}

// TestExperimentHugePages: huge pages reserved through target.kernel, the
// managed server started with huge_pages=on takes them, and they are
// given back.
func TestExperimentHugePages(t *testing.T) {
	needKernel(t, hugePages)
	h := newHarness(t)
	h.env[kernel.JournalEnv] = filepath.Join(t.TempDir(), "kernel.json")
	srv := testutil.StartServer(t)
	results := tempPath(t, "r.db")
	path := writeExperiment(t, fmt.Sprintf(`name: it-hugepages
target:
  managed: {dir: %s}
  settings: {huge_pages: "on", shared_buffers: 32MB}
  kernel: {vm.nr_hugepages: 96}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, clients: 1}
`, srv.Dir()))
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 0 || !strings.Contains(r.stderr, "huge pages: ") {
		t.Fatalf("want exit 0 and the huge pages checked:\n%s", r)
	}
	_, links := expLinks(t, results, "it-hugepages")
	run := getRun(t, results, links[0].RunID)
	var env struct {
		Host struct {
			HugePages int `json:"hugepages_total"`
		} `json:"host"`
		Postgres struct {
			Settings map[string]string `json:"settings"`
		} `json:"postgres"`
	}
	if err := json.Unmarshal(run.Env, &env); err != nil {
		t.Fatal(err)
	}
	if env.Host.HugePages != 96 || env.Postgres.Settings["huge_pages"] != "on" {
		t.Errorf("the run's environment: %d huge pages, huge_pages=%q", env.Host.HugePages, env.Postgres.Settings["huge_pages"])
	}
}

// TestExperimentRestoreBeforeRunExample runs examples/tpcb-restore-before-run.yaml
// at a small scale: the dump is made once, restored before every run, and
// every run starts from the loaded data (a hook added here checks
// pgbench_history is empty before each run; a run of the 2 before it
// leaves rows there).
func TestExperimentRestoreBeforeRunExample(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := testutil.StartServer(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "tpcb-restore-before-run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("/var/tmp/tunebench/restore-before-run", srv.Dir(), "scale: 10, duration: 30s", "scale: 1, duration: 1s",
		"repetitions: 3", "repetitions: 1", "clients: [4, 16]", "clients: [1, 2]").Replace(string(b))
	src += `  after_run: '"$TUNEBENCH_PG_BIN/psql" -Atc "select count(*) from pgbench_history"'
`
	src = strings.Replace(src, "    timeout: 20m\n", "    timeout: 20m\n  - 'test \"$(\"$TUNEBENCH_PG_BIN/psql\" -Atc \"select count(*) from pgbench_history\")\" = 0'\n", 1)
	src = strings.Replace(src, "  before_run:\n    run:", "  before_run:\n  - run:", 1)
	src = strings.Replace(src, "\n    timeout: 20m", "\n    timeout: 20m", 1)
	path := writeExperiment(t, src)
	results := tempPath(t, "r.db")
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s\n--- file:\n%s", r, src)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir(), "bench.dump")); !os.IsNotExist(err) {
		t.Errorf("after_experiment did not remove the dump: %v", err)
	}
	show := h.must(0, "experiment", "show", "tpcb-restore-before-run", "--results", results, "--hooks")
	// before_config once, before_run 2 x 2, after_run 2, after_experiment.
	if !strings.Contains(show.stdout, "hooks: 8 ran, 0 failed") {
		t.Errorf("show --hooks:\n%s", show.stdout)
	}
}
