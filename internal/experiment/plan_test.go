package experiment

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustPlan(t *testing.T, src string, seed int64) *Plan {
	t.Helper()
	p, err := NewPlan(mustParse(t, src), seed)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

// runList renders runs compactly: "label x=N rN" or "label x=N wN".
func runList(p *Plan) []string {
	var out []string
	for _, r := range p.Runs {
		kind := "r"
		if r.Warmup {
			kind = "w"
		}
		out = append(out, fmt.Sprintf("%s x=%s %s%d", r.Label, p.FormatX(r.X), kind, r.Repetition))
	}
	return out
}

func TestExpandSequential(t *testing.T) {
	p := mustPlan(t, `workload: {name: bench, options: {duration: 10s}}
matrix:
  settings: {work_mem: [4MB, 64MB]}
  script: [tpcb-like, select-only]
  clients: [4, 1]
repetitions: 2
order: sequential
`, 1)
	if len(p.Configs) != 4 || p.Counted() != 16 || len(p.Runs) != 16 {
		t.Fatalf("%d configs, %d runs", len(p.Configs), len(p.Runs))
	}
	var labels []string
	for _, c := range p.Configs {
		labels = append(labels, c.Label)
	}
	want := "work_mem=4MB script=tpcb-like|work_mem=4MB script=select-only|work_mem=64MB script=tpcb-like|work_mem=64MB script=select-only"
	if got := strings.Join(labels, "|"); got != want {
		t.Errorf("labels (first matrix key slowest):\n got %s\nwant %s", got, want)
	}
	c := p.Configs[1]
	if c.Options["script"] != "select-only" || c.Options["duration"] != "10s" || c.Load["scale"] != "1" || c.Options.Has("clients") ||
		len(c.Settings) != 1 || c.Settings[0] != (Setting{"work_mem", "4MB"}) || len(c.Values) != 2 {
		t.Errorf("config 1: %+v", c)
	}
	if p.XAxis != "clients" || len(p.XValues) != 2 || p.XValues[0] != 4 {
		t.Errorf("x axis %s %v", p.XAxis, p.XValues)
	}
	got := runList(p)
	wantFirst := []string{"work_mem=4MB script=tpcb-like x=1 r1", "work_mem=4MB script=tpcb-like x=1 r2",
		"work_mem=4MB script=tpcb-like x=4 r1", "work_mem=4MB script=tpcb-like x=4 r2", "work_mem=4MB script=select-only x=1 r1"}
	for i, w := range wantFirst {
		if got[i] != w {
			t.Errorf("run %d: %s, want %s", i, got[i], w)
		}
	}
	if o := p.RunOptions(2); o["clients"] != "4" || o["script"] != "tpcb-like" {
		t.Errorf("run options %v", o)
	}
	if !p.Configs[0].Baseline || p.Baseline != p.Configs[0].Label {
		t.Errorf("default baseline is the first configuration: %q", p.Baseline)
	}
	// Every run has its own, stable, non-zero seed.
	seen := map[int64]bool{}
	for i, r := range p.Runs {
		if r.Seed == 0 || seen[r.Seed] || r.Index != i {
			t.Errorf("run %d: seed %d index %d", i, r.Seed, r.Index)
		}
		seen[r.Seed] = true
	}
}

func TestNoMatrix(t *testing.T) {
	p := mustPlan(t, "workload: {name: bench, options: {clients: 3}}\n", 1)
	if len(p.Configs) != 1 || p.Configs[0].Label != DefaultLabel || len(p.Runs) != 1 || p.Runs[0].X != 3 || p.RunOptions(0)["clients"] != "3" {
		t.Errorf("plan %+v runs %+v", p.Configs, p.Runs)
	}
	p = mustPlan(t, "workload: {name: bench}\n", 1)
	if p.Runs[0].X != 1 {
		t.Errorf("x from the option default: %v", p.Runs[0].X)
	}
}

const randomSpec = `workload: {name: bench, options: {duration: 10s}}
matrix:
  settings:
    shared_buffers: [128MB, 1GB, 2GB]
    work_mem: [4MB, 64MB]
  clients: [1, 2, 4]
repetitions: 2
warmup_runs: 1
`

func TestRandomOrderIsSeeded(t *testing.T) {
	a := runList(mustPlan(t, randomSpec, 7))
	b := runList(mustPlan(t, randomSpec, 7))
	c := runList(mustPlan(t, randomSpec, 8))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("same seed, different orders")
	}
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Errorf("different seeds, same order")
	}
	// The seed in the file wins over the one passed in.
	d := runList(mustPlan(t, randomSpec+"seed: 7\n", 99))
	if strings.Join(a, "\n") != strings.Join(d, "\n") {
		t.Errorf("seed from the file not used")
	}
	// Sequential order would be x ascending inside each block; random is not (for some block).
	p := mustPlan(t, randomSpec, 7)
	if len(p.Runs) != 6*(3*2+1) {
		t.Fatalf("%d runs", len(p.Runs))
	}
}

// TestRandomOrderRestartsOnlyWhenNeeded checks the grouping: shared_buffers
// (needs a restart) changes only when its group changes, so the schedule has
// one restart per shared_buffers value, while configurations and runs are
// still shuffled.
func TestRandomOrderRestartsOnlyWhenNeeded(t *testing.T) {
	shuffledSomewhere := false
	for seed := int64(1); seed <= 20; seed++ {
		p := mustPlan(t, randomSpec, seed)
		restarts, reloads := 0, 0
		for _, s := range p.Schedule(nil) {
			if s.Kind == StepApply {
				if s.Restart {
					restarts++
				} else {
					reloads++
				}
			}
		}
		if restarts != 3 {
			t.Errorf("seed %d: %d restarts, want 3 (one per shared_buffers value)", seed, restarts)
		}
		if restarts+reloads != 6 {
			t.Errorf("seed %d: %d applies, want 6 (one per configuration)", seed, restarts+reloads)
		}
		// Blocks: a warm-up at the largest x first, then the 6 runs of one configuration.
		for b := 0; b < 6; b++ {
			runs := p.Runs[b*7 : b*7+7]
			if !runs[0].Warmup || runs[0].X != 4 || runs[0].Repetition != 1 {
				t.Errorf("seed %d block %d starts with %+v, want the warm-up at clients=4", seed, b, runs[0])
			}
			for _, r := range runs {
				if r.Block != b || r.Config != runs[0].Config {
					t.Errorf("seed %d: block %d mixes configurations", seed, b)
				}
			}
			if !(runs[1].X <= runs[2].X && runs[2].X <= runs[3].X && runs[3].X <= runs[4].X && runs[4].X <= runs[5].X && runs[5].X <= runs[6].X) {
				shuffledSomewhere = true
			}
		}
	}
	if !shuffledSomewhere {
		t.Errorf("runs within blocks never shuffled")
	}
}

func TestRoundsOrder(t *testing.T) {
	src := `workload: {name: bench, options: {duration: 10s}}
matrix:
  settings: {work_mem: [4MB, 64MB, 1GB]}
  clients: [1, 2]
repetitions: 3
order: rounds
`
	p := mustPlan(t, src, 3)
	if len(p.Runs) != 18 {
		t.Fatalf("%d runs", len(p.Runs))
	}
	// Round k (runs 6k..6k+5) holds repetition k+1 of every configuration and x value.
	for round := 0; round < 3; round++ {
		seen := map[string]bool{}
		for _, r := range p.Runs[round*6 : round*6+6] {
			if r.Repetition != round+1 {
				t.Errorf("round %d has repetition %d", round+1, r.Repetition)
			}
			seen[fmt.Sprintf("%d/%v", r.Config, r.X)] = true
		}
		if len(seen) != 6 {
			t.Errorf("round %d covers %d of 6 configuration/x pairs", round+1, len(seen))
		}
	}
	if p.Runs[len(p.Runs)-1].Block != 8 {
		t.Errorf("blocks: %d, want 9 (3 configurations x 3 rounds)", p.Runs[len(p.Runs)-1].Block+1)
	}
}

func TestDataDirsAndLoadsAreContiguous(t *testing.T) {
	src := `workload: {name: bench, options: {duration: 5s}}
matrix:
  data_dir: [/a, /b]
  scale: [1, 5]
  settings: {work_mem: [4MB, 64MB]}
  clients: [1, 2]
`
	for seed := int64(1); seed < 10; seed++ {
		p := mustPlan(t, src, seed)
		var dirs, loads []string
		for _, r := range p.Runs {
			c := p.Configs[r.Config]
			if len(dirs) == 0 || dirs[len(dirs)-1] != c.DataDir {
				dirs = append(dirs, c.DataDir)
			}
			k := c.DataDir + " " + c.Load["scale"]
			if len(loads) == 0 || loads[len(loads)-1] != k {
				loads = append(loads, k)
			}
		}
		if len(dirs) != 2 || len(loads) != 4 {
			t.Errorf("seed %d: data dirs in order %v, loads %v: each must be one contiguous stretch", seed, dirs, loads)
		}
		steps := p.Schedule(nil)
		count := map[StepKind]int{}
		for _, s := range steps {
			count[s.Kind]++
		}
		if count[StepOpen] != 2 || count[StepClose] != 2 || count[StepLoad] != 4 || count[StepRun] != 16 || count[StepReset] != 16 {
			t.Errorf("seed %d: steps %v", seed, count)
		}
		if steps[0].Kind != StepOpen || steps[len(steps)-1].Kind != StepClose {
			t.Errorf("schedule must open first and close last")
		}
	}
}

func TestBaselineAndChecks(t *testing.T) {
	src := `workload: {name: bench}
matrix:
  settings: {shared_buffers: [128MB, 1GB], work_mem: [4MB, 64MB]}
baseline: {shared_buffers: 1GB, work_mem: 4MB}
`
	p := mustPlan(t, src, 1)
	if p.Baseline != "shared_buffers=1GB work_mem=4MB" || !p.Configs[2].Baseline || p.Configs[0].Baseline {
		t.Errorf("baseline %q", p.Baseline)
	}
	_, err := NewPlan(mustParse(t, "workload: {name: bench}\nmatrix:\n  settings: {shared_buffers: [128MB, 1GB], work_mem: [4MB, 64MB]}\nbaseline: {work_mem: 4MB}\n"), 1)
	if err == nil || !strings.Contains(err.Error(), "exp.yaml:4: baseline matches 2 configurations; add shared_buffers to pick one") {
		t.Errorf("partial baseline: %v", err)
	}
	_, err = NewPlan(mustParse(t, "workload:\n  name: bench\n  options: {transactions: 100}\nmatrix:\n  rate: [0, 100]\n"), 1)
	if err == nil || !strings.Contains(err.Error(), "exp.yaml:1: configuration rate=100: transactions cannot be combined with rate") {
		t.Errorf("cross-option check: %v", err)
	}
	// A DSN target cannot restart: settings that need one are refused up front.
	_, err = NewPlan(mustParse(t, "target: {dsn: host=127.0.0.1}\nworkload: {name: bench}\nmatrix:\n  settings:\n    shared_buffers: [128MB, 1GB]\n"), 1)
	if err == nil || !strings.Contains(err.Error(), "exp.yaml:5: shared_buffers needs a server restart") {
		t.Errorf("restart on a dsn target: %v", err)
	}
}

func TestXAxisRate(t *testing.T) {
	p := mustPlan(t, "workload: {name: bench, options: {clients: 8, duration: 5s}}\nx_axis: rate\nmatrix:\n  rate: [100, 200.5, 50]\n", 1)
	if p.XAxis != "rate" || len(p.Configs) != 1 || p.Configs[0].Options["clients"] != "8" || p.Configs[0].Options.Has("rate") {
		t.Fatalf("plan %+v", p.Configs)
	}
	xs := map[string]bool{}
	for i := range p.Runs {
		xs[p.RunOptions(i)["rate"]] = true
	}
	if !xs["100"] || !xs["200.5"] || !xs["50"] {
		t.Errorf("rate values %v", xs)
	}
}

func TestPlanJSONAndFingerprint(t *testing.T) {
	p := mustPlan(t, randomSpec, 5)
	b, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	q, err := DecodePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	if q.Fingerprint != p.Fingerprint || q.fingerprint() != p.Fingerprint || len(q.Runs) != len(p.Runs) || q.Configs[3].Label != p.Configs[3].Label {
		t.Errorf("round trip changed the plan")
	}
	for _, k := range []string{`"version":1`, `"x_axis":"clients"`, `"configurations":`, `"runs":`, `"estimate":`, `"warmup":true`, `"block":`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("plan JSON has no %s", k)
		}
	}
	// Cosmetic changes keep the fingerprint; changes to the runs do not.
	same := mustPlan(t, "description: other\ncooldown: 30s\n"+randomSpec, 5)
	if same.Fingerprint != p.Fingerprint || len(p.Differences(same)) != 0 {
		t.Errorf("description/cooldown changed the fingerprint: %v", p.Differences(same))
	}
	more := mustPlan(t, strings.Replace(randomSpec, "repetitions: 2", "repetitions: 3", 1), 5)
	if more.Fingerprint == p.Fingerprint || len(p.Differences(more)) == 0 {
		t.Errorf("more repetitions kept the fingerprint")
	}
	reseeded := mustPlan(t, randomSpec, 6)
	if d := p.Differences(reseeded); len(d) == 0 || !strings.Contains(d[0], "seed or the order") {
		t.Errorf("another seed: %v", d)
	}
	if _, err := DecodePlan([]byte(`{"version":99}`)); err == nil {
		t.Errorf("unknown plan version accepted")
	}
}

// An experiment planned by a tunebench that did not have an option yet
// resumes with a newer one while the new option stays at its default.
func TestSameRunsAsWithNewOptions(t *testing.T) {
	p := mustPlan(t, randomSpec, 5)
	if _, ok := p.Configs[0].Options["script"]; !ok {
		t.Fatal("the test needs the script option at its default in the plan")
	}
	// The stored plan of an older tunebench: no script option anywhere.
	b, _ := p.JSON()
	old, err := DecodePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range old.Configs {
		delete(old.Configs[i].Options, "script")
	}
	old.Fingerprint = old.fingerprint()
	if old.Fingerprint == p.Fingerprint {
		t.Fatal("dropping an option kept the fingerprint")
	}
	if len(old.OptionNames) == 0 || !strings.Contains(string(b), `"option_names":`) {
		t.Fatal("the plan does not store its option names")
	}
	// A plan from before option names were stored: the configurations tell.
	names := old.OptionNames
	old.OptionNames = nil
	if !p.SameRunsAs(p) || !p.SameRunsAs(old) {
		t.Errorf("a plan with a new option at its default does not resume the older plan")
	}
	// With option names stored: the names tell, not the configurations.
	old.OptionNames = nil
	for _, n := range names {
		if n != "script" {
			old.OptionNames = append(old.OptionNames, n)
		}
	}
	if !p.SameRunsAs(old) {
		t.Errorf("a plan whose stored option names lack the new one does not resume")
	}
	old.OptionNames = names // script existed: its absence is a change
	if p.SameRunsAs(old) {
		t.Errorf("a plan resumed although an option it had went missing")
	}
	old.OptionNames = nil
	// A load option is never left out (it marks the loaded database).
	loadOld, _ := DecodePlan(b)
	loadOld.OptionNames = nil
	for i := range loadOld.Configs {
		delete(loadOld.Configs[i].Load, "scale")
	}
	loadOld.Fingerprint = loadOld.fingerprint()
	if p.SameRunsAs(loadOld) {
		t.Errorf("a new load option was left out")
	}
	// Set to another value, the new option changes the runs.
	other := mustPlan(t, strings.Replace(randomSpec, "options: {duration: 10s}", "options: {duration: 10s, script: select-only}", 1), 5)
	if other.Configs[0].Options["script"] != "select-only" {
		t.Fatalf("the spec did not set the script: %v", other.Configs[0].Options)
	}
	if other.SameRunsAs(old) {
		t.Errorf("a new option away from its default resumed the older plan")
	}
	// Anything else that changed still refuses.
	more := mustPlan(t, strings.Replace(randomSpec, "repetitions: 2", "repetitions: 3", 1), 5)
	if more.SameRunsAs(old) || more.SameRunsAs(p) {
		t.Errorf("more repetitions resumed the plan")
	}
}

// TestOrderIsPinned pins one shuffled order: plans must come out the same
// from the same file and seed in every tunebench version (resume compares
// them), so a change here is a compatibility break.
func TestOrderIsPinned(t *testing.T) {
	p := mustPlan(t, "workload: {name: bench}\nmatrix:\n  settings: {work_mem: [1MB, 2MB]}\n  clients: [1, 2]\nrepetitions: 2\nseed: 42\n", 0)
	got := strings.Join(runList(p), "; ")
	want := "work_mem=1MB x=2 r2; work_mem=1MB x=2 r1; work_mem=1MB x=1 r2; work_mem=1MB x=1 r1; " +
		"work_mem=2MB x=2 r1; work_mem=2MB x=1 r2; work_mem=2MB x=1 r1; work_mem=2MB x=2 r2"
	if got != want {
		t.Errorf("order for seed 42:\n got %s\nwant %s", got, want)
	}
	if p.Runs[0].Seed != runSeed(42, 0) {
		t.Errorf("run seed")
	}
}

func TestEstimate(t *testing.T) {
	src := `workload: {name: bench, options: {duration: 10s, warmup: 2s, scale: 5}}
matrix:
  settings: {shared_buffers: [128MB, 1GB], work_mem: [4MB, 8MB]}
  clients: [1, 2]
repetitions: 2
warmup_runs: 1
cooldown: 5s
order: sequential
`
	p := mustPlan(t, src, 1)
	p.SetCosts(Costs{ServerStart: 5 * time.Second, ServerStop: 3 * time.Second, Restart: 4 * time.Second, Reload: time.Second,
		ResetFixed: 2 * time.Second, CopyBytesPS: 80e6, RunOverhead: 3 * time.Second})
	e := p.Estimate
	// 4 configurations x (2 x 2 counted + 1 warm-up) = 20 runs of 10+2+3 s.
	if e.Runs != 16 || e.RunsS != 16*15 || e.WarmupRuns != 4 || e.WarmupRunsS != 4*15 {
		t.Errorf("runs: %+v", e)
	}
	// A reset before each run: 2 s + 80 MB at 80 MB/s.
	if e.Resets != 20 || e.ResetsS != 20*3 {
		t.Errorf("resets: %+v", e)
	}
	if e.Cooldowns != 19 || e.CooldownS != 19*5 {
		t.Errorf("cooldowns: %+v", e)
	}
	// Sequential: shared_buffers 128MB (restart; work_mem with it), work_mem 8MB (reload),
	// shared_buffers 1GB + work_mem 4MB (restart), work_mem 8MB (reload).
	if e.Restarts != 2 || e.Reloads != 2 || e.SettingsS != 2*4+2*1 {
		t.Errorf("settings: %+v", e)
	}
	if e.Loads != 1 || e.LoadsS != 11 || e.Servers != 1 || e.ServersS != 8 {
		t.Errorf("loads/servers: %+v", e)
	}
	want := e.RunsS + e.WarmupRunsS + e.ResetsS + e.CooldownS + e.SettingsS + e.LoadsS + e.ServersS
	if e.TotalS != want || e.LowerBound {
		t.Errorf("total %v, want %v", e.TotalS, want)
	}
	// Runs with a transaction count make the estimate a lower bound.
	q := mustPlan(t, "workload: {name: bench, options: {transactions: 1000}}\n", 1)
	if !q.Estimate.LowerBound {
		t.Errorf("estimate with transactions is not marked as a lower bound")
	}
	// reset_every: configuration resets once per block.
	r := mustPlan(t, src+"reset_every: configuration\n", 1)
	if r.Estimate.Resets != 4 {
		t.Errorf("resets per configuration: %d", r.Estimate.Resets)
	}
	n := mustPlan(t, strings.Replace(src, "order: sequential", "order: sequential\nreset: none", 1), 1)
	if n.Estimate.Resets != 0 {
		t.Errorf("reset none: %d resets", n.Estimate.Resets)
	}
}
