package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestExperimentEngines compares named targets on PostgreSQL and MariaDB
// in one file (targets:, matrix.target): two targets share the
// PostgreSQL server (loaded once, the tuned one's setting put back before
// the default one runs), MariaDB gets its own; every run records its
// target, engine and the engine's notes; the settings are restored on
// both servers; the report puts the engines side by side.
func TestExperimentEngines(t *testing.T) {
	t.Parallel()
	_, msrv := mariadbtest.StartMariaDB(t) // fails under CI without MariaDB
	psrv := testutil.StartServer(t)
	h := newHarness(t)
	results := tempPath(t, "results.db")
	wmBefore := showSetting(t, psrv, "postgres", "work_mem")
	ioBefore := variable(t, msrv.Dir(), "innodb_io_capacity")
	path := writeExperiment(t, fmt.Sprintf(`name: it-engines
targets:
  pg-default: {managed: {dir: %[1]s}}
  pg-tuned: {managed: {dir: %[1]s}, settings: {work_mem: 7MB}}
  maria: {managed: {engine: mariadb, dir: %[2]s}, settings: {innodb_io_capacity: 1234}}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s, clients: 2}
matrix:
  target: [pg-tuned, pg-default, maria]
order: sequential
baseline: {target: pg-default}
`, psrv.Dir(), msrv.Dir()))
	if r := h.must(0, "experiment", "run", path, "--dry-run"); !strings.Contains(r.stdout, "pg-default: managed postgres server in "+psrv.Dir()+" (the server of pg-tuned)") {
		t.Errorf("dry run:\n%s", r.stdout)
	}
	r := h.run("experiment", "run", path, "--results", results)
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	for _, want := range []string{"== start the server of targets pg-tuned, pg-default", "== restore the settings of target pg-tuned", "== start the server of target maria"} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("stderr has %q %d times, want once:\n%s", want, strings.Count(r.stderr, want), r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "== load tpcb"); n != 2 {
		t.Errorf("%d loads, want one per server", n)
	}

	_, links := expLinks(t, results, "it-engines")
	want := []struct{ target, engine, workMem string }{{"pg-tuned", "postgres", "7MB"}, {"pg-default", "postgres", wmBefore}, {"maria", "mariadb", ""}}
	if len(links) != len(want) {
		t.Fatalf("links %+v", links)
	}
	for i, l := range links {
		run := getRun(t, results, l.RunID)
		var env envinfo.Snapshot
		if err := json.Unmarshal(run.Env, &env); err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if l.Config != "target="+w.target || env.Target == nil || env.Target.Name != w.target || env.Target.Engine != w.engine || run.Status != "ok" {
			t.Errorf("run %d: link %s, target %+v, status %s", l.RunID, l.Config, env.Target, run.Status)
		}
		if len(env.Notes) != 2 || env.Notes[0].Topic != envinfo.NoteIsolation {
			t.Errorf("run %d: notes %+v", l.RunID, env.Notes)
		}
		if w.engine == "postgres" && (env.Postgres == nil || cmpOr(env.Postgres.Settings["work_mem"], wmBefore) != w.workMem) {
			t.Errorf("run %d on %s: work_mem %+v, want %s", l.RunID, w.target, env.Postgres, w.workMem)
		}
		if w.engine == "mariadb" && (env.Database == nil || env.Database.Settings["innodb_io_capacity"] != "1234") {
			t.Errorf("run %d on maria: %+v", l.RunID, env.Database)
		}
	}
	if wm, io := showSetting(t, psrv, "postgres", "work_mem"), variable(t, msrv.Dir(), "innodb_io_capacity"); wm != wmBefore || io != ioBefore {
		t.Errorf("after the experiment work_mem=%s innodb_io_capacity=%s, want %s and %s", wm, io, wmBefore, ioBefore)
	}

	report := tempPath(t, "report.html")
	h.must(0, "report", "it-engines", "--results", results, "-o", report)
	b, _ := os.ReadFile(report)
	for _, want := range []string{`id="engines"`, "PostgreSQL: pg-tuned, pg-default", "MariaDB: maria", "repeatable read", "PostgreSQL settings that are not at their defaults", "MariaDB settings that are not at their defaults", "target=maria"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if r := h.must(0, "results", "list", "--results", results); !strings.Contains(r.stdout, "tpcb-like on maria (mariadb)") {
		t.Errorf("results list:\n%s", r.stdout)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
