package experiment

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const fullSpec = `name: sweep
description: a sweep
target:
  managed: {dir: /var/tmp/tb, port: 0, pg_bin: /usr/lib/postgresql/16/bin, run_as: postgres}
  database: bench
  settings: {max_wal_size: 4GB}
workload:
  name: bench
  options: {duration: 30s, warmup: 5s, scale: 2}
matrix:
  settings:
    shared_buffers: [128MB, 1GB]
    work_mem: [4MB, 64MB]
  clients: [1, 4, 2]
  script: [tpcb-like, select-only]
repetitions: 3
warmup_runs: 1
order: sequential
seed: 42
reset: template
reset_every: configuration
cooldown: 10s
baseline: {shared_buffers: 128MB, work_mem: 4MB, script: tpcb-like}
`

func mustParse(t *testing.T, src string) *Spec {
	t.Helper()
	s, err := Parse("exp.yaml", []byte(src), testCatalog(), pgSettings)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func TestParseFull(t *testing.T) {
	s := mustParse(t, fullSpec)
	if s.Name != "sweep" || s.Description != "a sweep" || s.Workload.Name != "bench" {
		t.Errorf("name %q description %q workload %v", s.Name, s.Description, s.Workload.Name)
	}
	m := s.Target.Managed
	if m == nil || m.Dir != "/var/tmp/tb" || m.Port != 0 || m.PGBin != "/usr/lib/postgresql/16/bin" || m.RunAs != "postgres" || s.Target.DSN != "" {
		t.Errorf("target: %+v %+v", s.Target, m)
	}
	if s.Target.Database != "bench" || len(s.Target.Settings) != 1 || s.Target.Settings[0] != (Setting{"max_wal_size", "4GB"}) {
		t.Errorf("target database/settings: %+v", s.Target)
	}
	if s.Options["duration"] != "30s" || s.Options["scale"] != "2" || len(s.Options) != 3 {
		t.Errorf("options %v", s.Options)
	}
	var names []string
	for _, d := range s.Matrix {
		names = append(names, d.Name+"="+strings.Join(d.Values, ","))
	}
	if got := strings.Join(names, " "); got != "shared_buffers=128MB,1GB work_mem=4MB,64MB clients=1,4,2 script=tpcb-like,select-only" {
		t.Errorf("matrix in file order: %s", got)
	}
	if s.Matrix[0].Kind != DimSetting || s.Matrix[2].Kind != DimOption || s.Matrix[0].Line != 12 {
		t.Errorf("dimension kinds/lines: %+v", s.Matrix[:3])
	}
	if s.XAxis != "clients" || s.Repetitions != 3 || s.WarmupRuns != 1 || s.Order != OrderSequential || s.Seed != 42 || !s.SeedSet ||
		s.Reset != ResetTemplate || s.ResetEvery != ResetEveryConfiguration || s.Cooldown != 10*time.Second {
		t.Errorf("top-level: %+v", s)
	}
	if len(s.Baseline) != 3 || s.Baseline[0] != (KV{"shared_buffers", "128MB"}) {
		t.Errorf("baseline %v", s.Baseline)
	}
	if s.Source != fullSpec {
		t.Errorf("source not kept")
	}
}

func TestParseDefaults(t *testing.T) {
	s := mustParse(t, "workload: {name: bench}\n")
	if s.Name != "exp" || s.Target.Managed == nil || s.Target.Managed.Dir != "" || s.Target.Database != DefaultDatabase {
		t.Errorf("defaults: name %q target %+v", s.Name, s.Target)
	}
	if s.Repetitions != 1 || s.WarmupRuns != 0 || s.Order != OrderRandom || s.SeedSet || s.Reset != ResetTemplate ||
		s.ResetEvery != ResetEveryRun || s.Cooldown != 0 || s.XAxis != "clients" {
		t.Errorf("defaults: %+v", s)
	}
	d := mustParse(t, "target: {dsn: 'host=127.0.0.1 dbname=postgres'}\nworkload: {name: bench}\nreset: none\n")
	if d.Target.Managed != nil || d.Target.DSN == "" || d.Reset != ResetNone || d.ResetEvery != "" {
		t.Errorf("dsn target: %+v reset %q/%q", d.Target, d.Reset, d.ResetEvery)
	}
	// An alias is followed; a bare value is a list of one.
	a := mustParse(t, "workload: {name: bench, options: {duration: &d 20s, warmup: *d}}\nmatrix: {clients: 8}\n")
	if a.Options["warmup"] != "20s" || len(a.Matrix) != 1 || a.Matrix[0].Values[0] != "8" {
		t.Errorf("alias / single value: %v %+v", a.Options, a.Matrix)
	}
}

// TestParseErrors checks that each mistake is reported with its line, the
// key path, and a suggestion where one helps.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"setting typo", "workload: {name: bench}\nmatrix:\n  settings:\n    shared_bufers: [1GB]\n",
			`exp.yaml:4: unknown key "shared_bufers" in matrix.settings (did you mean shared_buffers?)`},
		{"unknown setting", "workload: {name: bench}\ntarget:\n  settings: {frobnicate_level: 3}\n",
			`exp.yaml:3: unknown key "frobnicate_level" in target.settings (not a PostgreSQL setting tunebench knows; allow_unknown_settings: true skips this check)`},
		{"top-level typo", "workload: {name: bench}\nrepetitons: 3\n",
			`exp.yaml:2: unknown key "repetitons" in the file (did you mean repetitions?)`},
		{"matrix typo", "workload: {name: bench}\nmatrix:\n  client: [1, 2]\n",
			`exp.yaml:3: unknown key "client" in matrix (matrix keys are settings, data_dir and the options of bench) (did you mean clients?)`},
		{"option typo", "workload:\n  name: bench\n  options:\n    durration: 5s\n",
			`exp.yaml:4: unknown key "durration" in workload.options of bench (did you mean duration?)`},
		{"unknown workload", "workload: {name: tpc}\n",
			`exp.yaml:1: unknown workload "tpc"; experiments run bench, oltp`},
		{"workload typo", "workload:\n  name: olpt\n",
			`exp.yaml:2: unknown workload "olpt" (did you mean oltp?); experiments run bench, oltp`},
		{"no workload", "name: x\n", `exp.yaml: no workload`},
		{"restart timeout", "workload: {name: bench}\ntarget:\n  dsn: host=db1\n  restart_command: ssh db1 restart\n  restart_timeout: 90\n",
			`exp.yaml:5: target.restart_timeout is how long the restart command may take, a duration like 10m, not "90"`},
		{"restart timeout alone", "workload: {name: bench}\ntarget:\n  dsn: host=db1\n  restart_timeout: 10m\n",
			`exp.yaml:4: target.restart_timeout bounds target.restart_command: give the command too, or drop the timeout`},
		{"host metrics source", "workload: {name: bench}\ntarget:\n  host_metrics: sqll\n",
			`exp.yaml:3: target.host_metrics "sqll" is not a source (give auto, local, sql, none, or the http:// URL`},
		{"host metrics container", "workload: {name: bench}\ntarget:\n  host_metrics: {container_metrics: http://n1:8080/metrics}\n",
			`exp.yaml:3: container_metrics and container go together`},
		{"host metrics key", "workload: {name: bench}\ntarget:\n  host_metrics: {sorce: sql}\n",
			`exp.yaml:3: unknown key "sorce" in target.host_metrics (did you mean source?)`},
		{"negative duration", "workload:\n  name: bench\n  options: {duration: -5s}\n",
			`exp.yaml:3: duration must not be negative (-5s)`},
		{"bare number duration", "workload:\n  name: bench\n  options: {duration: 60}\n",
			`exp.yaml:3: duration must be a duration with a unit, like 60s, not a bare number`},
		{"zero repetitions", "workload: {name: bench}\nrepetitions: 0\n",
			`exp.yaml:2: repetitions must be 1 or more (each configuration and x value runs this many times), not 0`},
		{"negative warmup runs", "workload: {name: bench}\nwarmup_runs: -1\n", `exp.yaml:2: warmup_runs must be 0 or more, not -1`},
		{"vusers below 1", "workload: {name: oltp}\nmatrix:\n  vusers: [8, 0]\n", `exp.yaml:3: vusers must be at least 1, not 0`},
		{"unknown isolation", "workload: {name: oltp}\nmatrix:\n  isolation: [read-committed, serialisable]\n",
			`exp.yaml:3: isolation must be one of read-committed, repeatable-read, serializable, not "serialisable" (did you mean serializable?)`},
		{"bad bool", "workload: {name: oltp}\nmatrix:\n  all_warehouses: [no]\n", `exp.yaml:3: all_warehouses must be true or false, not "no"`},
		{"governed setting", "target:\n  settings:\n    default_transaction_isolation: serializable\nworkload: {name: oltp}\n",
			`exp.yaml:3: target.settings.default_transaction_isolation would be overridden: the workload sets it in every session it opens, from isolation: give isolation instead`},
		{"governed setting in the matrix", "workload: {name: oltp}\nmatrix:\n  settings:\n    default_transaction_isolation: [serializable]\n",
			`exp.yaml:4: matrix.settings.default_transaction_isolation would be overridden`},
		{"negative cooldown", "workload: {name: bench}\ncooldown: -1s\n", `exp.yaml:2: cooldown must not be negative`},
		{"bad order", "workload: {name: bench}\norder: randm\n", `exp.yaml:2: order must be one of random, sequential, rounds, not "randm" (did you mean random?)`},
		{"snapshot", "workload: {name: bench}\nreset: snapshot\n", `exp.yaml:2: reset: snapshot (data-directory snapshots) is not available yet`},
		{"reset_every with none", "workload: {name: bench}\nreset: none\nreset_every: run\n", `exp.yaml:3: reset_every has no meaning with reset: none`},
		{"duplicate key", "workload: {name: bench}\nseed: 1\nseed: 2\n", `exp.yaml:3: key "seed" appears twice in the file (first on line 2)`},
		{"duplicate value", "workload: {name: bench}\nmatrix:\n  clients: [1, 2, 1]\n", `exp.yaml:3: matrix.clients lists "1" twice`},
		{"empty list", "workload: {name: bench}\nmatrix:\n  clients: []\n", `exp.yaml:3: matrix.clients is an empty list`},
		{"syntax", "workload: {name: bench}\nmatrix:\n  clients: [1, 2\n", `exp.yaml:3: YAML syntax: did not find expected ',' or ']'`},
		{"indentation", "workload:\n  name: bench\nmatrix:\n  clients: [1]\n settings: {}\n", `exp.yaml:5: YAML syntax: did not find expected key`},
		{"colon", "workload: {name: bench}\nseed: 1: 2\n", `exp.yaml:2: YAML syntax: mapping values are not allowed in this context`},
		{"tab", "workload:\n\tname: bench\n", `a tab in the indentation?`},
		{"empty file", "", `exp.yaml: the file is empty`},
		{"two documents", "workload: {name: bench}\n---\nname: b\n", `exp.yaml:2: a second YAML document (---) in the file`},
		{"not a mapping", "- a\n- b\n", `exp.yaml:1: the file must be a mapping (key: value lines), not a list`},
		{"password in dsn", "target: {dsn: 'host=127.0.0.1 password=secret'}\nworkload: {name: bench}\n",
			`exp.yaml:1: target.dsn must not contain a password`},
		{"password in url", "target:\n  dsn: postgres://u:pw@127.0.0.1/db\nworkload: {name: bench}\n", `exp.yaml:2: target.dsn must not contain a password`},
		{"managed and dsn", "target:\n  managed: {dir: /x}\n  dsn: host=127.0.0.1\nworkload: {name: bench}\n", `exp.yaml:3: target has both managed and dsn; keep one`},
		{"settings under managed", "target:\n  managed:\n    settings: {work_mem: 4MB}\nworkload: {name: bench}\n",
			`exp.yaml:3: settings belong to the target, not to target.managed: move them to target.settings`},
		{"bad port", "target:\n  managed: {port: 80}\nworkload: {name: bench}\n", `exp.yaml:2: target.managed.port must be 0 (pick a free one) or 1024-65535, not "80"`},
		{"data_dir with dsn", "target: {dsn: host=127.0.0.1}\nworkload: {name: bench}\nmatrix:\n  data_dir: [/a, /b]\n",
			`exp.yaml:4: matrix.data_dir needs a managed target`},
		{"data_dir with dir", "target: {managed: {dir: /x}}\nworkload: {name: bench}\nmatrix:\n  data_dir: [/a, /b]\n",
			`exp.yaml:4: matrix.data_dir and target.managed.dir both given`},
		{"option twice", "workload: {name: bench, options: {clients: 2}}\nmatrix:\n  clients: [1, 2]\n",
			`exp.yaml:3: clients is in workload.options and in the matrix; keep it in one place`},
		{"setting twice", "target: {settings: {work_mem: 4MB}}\nworkload: {name: bench}\nmatrix:\n  settings: {work_mem: [8MB]}\n",
			`exp.yaml:4: work_mem is in target.settings and in matrix.settings; keep it in one place`},
		{"managed setting", "workload: {name: bench}\nmatrix:\n  settings: {port: [5432]}\n", `exp.yaml:3: port in matrix.settings is managed by tunebench`},
		{"bad setting name", "workload: {name: bench}\nmatrix:\n  settings: {Work-Mem: [1MB]}\n", `exp.yaml:3: "Work-Mem" in matrix.settings is not a setting name`},
		{"setting list value", "workload: {name: bench}\ntarget: {settings: {work_mem: [1MB]}}\n", `exp.yaml:2: target.settings.work_mem must be a single value, not a list`},
		{"baseline key", "workload: {name: bench}\nmatrix:\n  settings: {work_mem: [1MB, 2MB]}\nbaseline: {work_mme: 1MB}\n",
			`exp.yaml:4: baseline key "work_mme" is not in the matrix (did you mean work_mem?)`},
		{"baseline value", "workload: {name: bench}\nmatrix:\n  settings: {work_mem: [1MB, 2MB]}\nbaseline:\n  work_mem: 3MB\n",
			`exp.yaml:5: baseline work_mem=3MB is not one of the matrix values (1MB, 2MB)`},
		{"baseline x axis", "workload: {name: bench}\nmatrix:\n  clients: [1, 2]\nbaseline: {clients: 1}\n",
			`exp.yaml:4: baseline names clients, the x axis`},
		{"x axis not numeric", "workload: {name: bench}\nx_axis: script\n", `exp.yaml:2: x_axis script is not numeric`},
		{"x axis load option", "workload: {name: bench}\nx_axis: scale\n", `exp.yaml:2: x_axis scale is a load option`},
		{"x axis unknown", "workload: {name: bench}\nx_axis: rates\n", `exp.yaml:2: x_axis "rates" is not an option of bench (did you mean rate?)`},
		{"merge key", "workload: {name: bench}\nbase: &b {seed: 1}\n", `unknown key "base"`},
		{"bad name", "name: 'a b'\nworkload: {name: bench}\n", `exp.yaml:1: name "a b": use letters`},
		{"database", "workload: {name: bench}\ntarget: {database: Bench-DB}\n", `exp.yaml:2: target.database "Bench-DB"`},
		{"seed", "workload: {name: bench}\nseed: abc\n", `exp.yaml:2: seed must be an integer`},
		{"null value", "workload: {name: bench}\ncooldown:\n", `exp.yaml:2: cooldown has no value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("exp.yaml", []byte(c.src), testCatalog(), pgSettings)
			if err == nil {
				t.Fatalf("no error; want %q", c.want)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Errorf("error is %T, want *SpecError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

func TestParseReportsEveryProblemInLineOrder(t *testing.T) {
	src := `workload:
  name: bench
  options: {duration: -1s}
repetitions: 0
matrix:
  settings:
    shared_bufers: [1GB]
cooldwn: 5s
`
	_, err := Parse("exp.yaml", []byte(src), testCatalog(), pgSettings)
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("got %v", err)
	}
	if len(se.Lines) != 4 || se.Lines[0] != 3 || se.Lines[1] != 4 || se.Lines[2] != 7 || se.Lines[3] != 8 {
		t.Errorf("lines %v:\n%v", se.Lines, err)
	}
	if strings.Count(err.Error(), "\n") != 3 {
		t.Errorf("one problem per line:\n%v", err)
	}
}

func TestParseAllowUnknownSettings(t *testing.T) {
	src := "allow_unknown_settings: true\nworkload: {name: bench}\nmatrix:\n  settings: {brand_new_setting: [a, b]}\n"
	s := mustParse(t, src)
	if s.Matrix[0].Name != "brand_new_setting" {
		t.Errorf("matrix %+v", s.Matrix)
	}
	// Extension settings (with a dot) are never checked; names are lowered.
	s = mustParse(t, "workload: {name: bench}\nmatrix:\n  settings: {pg_stat_statements.Max: [1000], Work_Mem: [4MB]}\n")
	if s.Matrix[0].Name != "pg_stat_statements.max" || s.Matrix[1].Name != "work_mem" {
		t.Errorf("matrix %+v", s.Matrix)
	}
}

// TestParseRebasesPaths: an option that names files (Option.Rebase) gets
// the experiment file's directory in the options, the matrix and the
// baseline; the others are left as written.
func TestParseRebasesPaths(t *testing.T) {
	cat := testCatalog()
	cat["bench"].Options = append(cat["bench"].Options, Option{Name: "file", Kind: KindString,
		Rebase: func(text, dir string) string { return dir + "/" + text }})
	src := "workload: {name: bench, options: {script: select-only}}\nmatrix: {file: [a.sql, b.sql]}\nbaseline: {file: a.sql}\n"
	s, err := Parse("studies/exp.yaml", []byte(src), cat, pgSettings)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Matrix[0].Values; len(got) != 2 || got[0] != "studies/a.sql" || got[1] != "studies/b.sql" {
		t.Errorf("matrix values %q", got)
	}
	if s.Options["script"] != "select-only" {
		t.Errorf("an option without Rebase changed: %q", s.Options["script"])
	}
	s, err = Parse("studies/exp.yaml", []byte("workload: {name: bench, options: {file: c.sql}}\n"), cat, pgSettings)
	if err != nil || s.Options["file"] != "studies/c.sql" {
		t.Errorf("workload option %q, %v", s.Options["file"], err)
	}
}

// target.host_metrics: a source, or a mapping of source, disk and
// container, as the run flags.
func TestParseHostMetrics(t *testing.T) {
	s := mustParse(t, "workload: {name: bench}\ntarget:\n  dsn: host=db1\n  host_metrics: sql\n")
	if s.Target.HostMetrics.Source != "sql" {
		t.Errorf("scalar: %+v", s.Target.HostMetrics)
	}
	s = mustParse(t, "workload: {name: bench}\ntarget:\n  dsn: host=db1\n  host_metrics: {source: 'http://db1:9100/metrics', disk: nvme0n1, container_metrics: 'http://db1:8080/metrics', container: pg}\n")
	hm := s.Target.HostMetrics
	if hm.Source != "http://db1:9100/metrics" || hm.Disk != "nvme0n1" || hm.ContainerURL != "http://db1:8080/metrics" || hm.Container != "pg" {
		t.Errorf("mapping: %+v", hm)
	}
}
