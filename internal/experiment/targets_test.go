package experiment

import (
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb"
	"github.com/tunebench/tunebench/internal/target/pg"
)

// engines is an experiment file that compares four named targets on two
// engines (bench is a workload of both dialects).
const engines = `name: engines
targets:
  pg-default: {managed: {engine: postgres}}
  pg-tuned: {managed: {engine: postgres}, settings: {shared_buffers: 512MB, synchronous_commit: "off"}}
  maria-default: {managed: {engine: mariadb}}
  maria-tuned: {managed: {engine: mariadb}, settings: {innodb_buffer_pool_size: 512M, innodb_flush_log_at_trx_commit: 2}}
workload: {name: bench, options: {duration: 10s}}
matrix:
  target: [pg-tuned, pg-default, maria-default, maria-tuned]
  clients: [4, 8]
order: sequential
baseline: {target: pg-default}
`

var bothDrivers = WithDrivers([]target.Driver{mariadb.Driver{}, pg.Driver{}})

func parseEngines(src string) (*Spec, error) {
	cat := testCatalog()
	cat["bench"].Dialects = []string{"postgres", "mariadb"}
	cat["oltp"].Dialects = []string{"postgres"}
	return Parse("exp.yaml", []byte(src), cat, bothDrivers)
}

func TestParseTargets(t *testing.T) {
	s, err := parseEngines(engines)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Targets) != 4 || s.Targets[1].Name != "pg-tuned" || s.Targets[1].Engine != "postgres" || s.Targets[3].Engine != "mariadb" {
		t.Fatalf("targets %+v", s.Targets)
	}
	if d := s.Matrix[0]; d.Kind != DimTarget || strings.Join(d.Values, ",") != "pg-tuned,pg-default,maria-default,maria-tuned" {
		t.Errorf("matrix.target %+v", d)
	}
	if len(s.Target.Settings) != 0 || s.Target.Managed == nil {
		t.Errorf("the file's target takes no settings of a named target: %+v", s.Target)
	}

	// Without matrix.target every target runs, in file order, first.
	s, err = parseEngines(strings.Replace(engines, "  target: [pg-tuned, pg-default, maria-default, maria-tuned]\n", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Matrix[0]; d.Kind != DimTarget || strings.Join(d.Values, ",") != "pg-default,pg-tuned,maria-default,maria-tuned" {
		t.Errorf("the implicit matrix.target %+v", d)
	}
}

func TestParseTargetsErrors(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"target and targets", "targets:", "target: {managed: {}}\ntargets:", "exp.yaml:3: target and targets both given"},
		{"unknown name", "[pg-tuned, pg-default,", "[pg-tuned, pg-defualt,", `exp.yaml:9: matrix.target: no target "pg-defualt" in targets: (did you mean pg-default?); the file's targets are pg-default, pg-tuned, maria-default, maria-tuned`},
		{"a setting of the other engine", "shared_buffers: 512MB", "innodb_log_file_size: 1G", `exp.yaml:4: unknown key "innodb_log_file_size" in targets.pg-tuned.settings (not a PostgreSQL setting tunebench knows`},
		{"matrix settings on two engines", "  clients: [4, 8]", "  clients: [4, 8]\n  settings: {work_mem: [4MB]}", "exp.yaml:11: matrix.settings.work_mem: server settings are engine-specific, and matrix.target compares postgres and mariadb; put them in targets.<name>.settings"},
		{"kernel in a target", "maria-default: {managed: {engine: mariadb}}", "maria-default: {managed: {engine: mariadb}, kernel: {vm.swappiness: 1}}", "exp.yaml:5: targets.maria-default.kernel: kernel settings are this machine's"},
		{"two databases", "maria-default: {managed: {engine: mariadb}}", "maria-default: {managed: {engine: mariadb}, database: other}", "targets.maria-default.database is other and targets.pg-tuned.database tunebench_exp"},
		{"data_dir on two servers", "  clients: [4, 8]", "  clients: [4, 8]\n  data_dir: [/a, /b]", "exp.yaml:11: matrix.data_dir with targets on 2 servers"},
		{"baseline not a target", "baseline: {target: pg-default}", "baseline: {target: pg}", "baseline target=pg is not one of the matrix values"},
	} {
		_, err := parseEngines(strings.Replace(engines, c.from, c.to, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant it to contain %q", c.name, err, c.want)
		}
	}
}

func TestParseMatrixTargetWithoutTargets(t *testing.T) {
	_, err := parseEngines("name: x\ntarget: {managed: {}}\nworkload: {name: bench}\nmatrix: {target: [a]}\n")
	if err == nil || !strings.Contains(err.Error(), "exp.yaml:4: matrix.target lists named targets, and the file has no targets:") {
		t.Errorf("error %v", err)
	}
}

func TestPlanTargets(t *testing.T) {
	s, err := parseEngines(engines)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets) != 4 || p.Targets[0].Server != "pg-tuned" || p.Targets[1].Server != "pg-tuned" || p.Targets[2].Server != "maria-default" || p.Targets[3].Server != "maria-default" {
		t.Fatalf("targets and their servers %+v", p.Targets)
	}
	if p.Baseline != "target=pg-default" || len(p.Configs) != 4 {
		t.Errorf("baseline %q, %d configurations", p.Baseline, len(p.Configs))
	}
	c := p.Configs[0]
	if c.Target != "pg-tuned" || c.DataDir != TargetPrefix+"pg-tuned" || settingsText(c.Settings) != "shared_buffers=512MB synchronous_commit=off" {
		t.Errorf("configuration of pg-tuned %+v", c)
	}
	if p.Configs[1].DataDir != TargetPrefix+"pg-tuned" || p.Configs[3].DataDir != TargetPrefix+"maria-default" {
		t.Errorf("the groups: %q %q", p.Configs[1].DataDir, p.Configs[3].DataDir)
	}
	for _, r := range p.Runs {
		if r.Target != p.Configs[r.Config].Target {
			t.Errorf("run %d: target %q, its configuration's %q", r.Index, r.Target, p.Configs[r.Config].Target)
		}
	}

	// One server per engine, opened once; one load each; pg-tuned's
	// settings put back before pg-default runs on the same server.
	var steps []string
	for _, st := range p.Schedule(nil) {
		if st.Kind != StepRun && st.Kind != StepReset {
			steps = append(steps, p.DescribeStep(st))
		}
	}
	want := []string{
		"start the server of targets pg-tuned, pg-default (managed postgres, in a temporary directory)",
		"load bench scale=1 into the template database tunebench_exp_template",
		"apply shared_buffers=512MB synchronous_commit=off (restart)",
		"restore the settings of target pg-tuned (restart)",
		"restore the settings and stop the server",
		"start the server of targets maria-default, maria-tuned (managed mariadb, in a temporary directory)",
		"load bench scale=1 into the template database tunebench_exp_template",
		"apply innodb_buffer_pool_size=512M innodb_flush_log_at_trx_commit=2 (reload)",
		"restore the settings and stop the server",
	}
	if strings.Join(steps, "\n") != strings.Join(want, "\n") {
		t.Errorf("schedule:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	if e := p.EstimateFor(nil); e.Servers != 2 || e.Loads != 2 || e.Restarts != 2 || e.Reloads != 1 {
		t.Errorf("estimate %+v", e)
	}

	// Random order keeps each server's runs together, and each target's.
	s.Order = OrderRandom
	p, err = NewPlan(s, 7)
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, r := range p.Runs {
		if len(seq) == 0 || seq[len(seq)-1] != r.Target {
			seq = append(seq, r.Target)
		}
	}
	if len(seq) != 4 {
		t.Errorf("random order splits a target's runs: %v", seq)
	}
	servers := 0
	for _, st := range p.Schedule(nil) {
		if st.Kind == StepOpen {
			servers++
		}
	}
	if servers != 2 {
		t.Errorf("random order opens %d servers, want 2", servers)
	}
}

func TestPlanTargetsRefusals(t *testing.T) {
	// A workload that does not speak an engine, before anything starts.
	s, err := parseEngines(strings.Replace(strings.Replace(engines, "name: bench, options: {duration: 10s}", "name: oltp", 1), "clients: [4, 8]", "vusers: [4, 8]", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(s, 1)
	if err == nil || !strings.Contains(err.Error(), "exp.yaml:5: workload oltp does not run on mariadb in this build (targets.maria-default); it runs on postgres: remove maria-default from matrix.target") {
		t.Errorf("error %v", err)
	}

	// One server for every target (same engine and directory): no
	// group per target, and matrix.settings is fine with one engine.
	one := `name: one
targets:
  a: {managed: {dir: /var/tmp/x}}
  b: {managed: {dir: /var/tmp/x}, settings: {work_mem: 64MB}}
workload: {name: bench}
matrix:
  settings: {shared_buffers: [128MB, 1GB]}
`
	s, err = parseEngines(one)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Configs {
		if c.DataDir != "/var/tmp/x" {
			t.Errorf("configuration %s: group %q", c.Label, c.DataDir)
		}
	}
	if got := p.Configs[len(p.Configs)-1]; got.Label != "target=b shared_buffers=1GB" || settingsText(got.Settings) != "work_mem=64MB shared_buffers=1GB" {
		t.Errorf("last configuration %+v", got)
	}
}

// A file with one target plans as it did: no targets in the plan, and
// the same fingerprint (stored experiments resume).
func TestPlanOneTargetUnchanged(t *testing.T) {
	p := mustPlan(t, fullSpec, 1)
	if len(p.Targets) != 0 || p.Configs[0].Target != "" || p.Runs[0].Target != "" {
		t.Errorf("targets in a one-target plan: %+v %+v", p.Targets, p.Configs[0])
	}
	b, _ := p.JSON()
	if strings.Contains(string(b), `"targets"`) || !strings.Contains(string(b), `"target":"managed"`) {
		t.Errorf("plan JSON: %s", b[:200])
	}
}
