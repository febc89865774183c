package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestExperimentFilesystemWorkloads runs fsblog (and storage, when fio is
// installed) as experiment workloads on a DSN target: every run is stored
// with its link and its own summary.
func TestExperimentFilesystemWorkloads(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := pg.Server(t)
	results := tempPath(t, "results.db")
	cases := []struct{ name, workload, options, matrix string }{
		{"it-fsblog", "fsblog", "{iterations: 2, interval: 1s, writers: 1, commenters: 1, rewriters: 1}", "readers: [2, 4]"},
	}
	if _, err := exec.LookPath("fio"); err == nil || testutil.InCI() {
		cases = append(cases, struct{ name, workload, options, matrix string }{
			"it-storage", "storage", "{size: 16M, runtime: 1s, tests: 'seq-read,rand-write'}", "jobs: [1, 2]"})
	}
	for _, c := range cases {
		db := strings.ReplaceAll(testutil.CreateDB(t, srv), "t_", "f_")
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
		dir := t.TempDir()
		body := fmt.Sprintf(`name: %s
target:
  dsn: %q
  database: %s
workload:
  name: %s
  options: %s
matrix:
  dir: [%q]
  %s
order: sequential
`, c.name, srv.DSN(), db, c.workload, c.options, dir, c.matrix)
		path := writeExperiment(t, body)
		r := h.run("experiment", "run", path, "--results", results)
		if r.code != 0 {
			t.Fatalf("%s: want exit 0:\n%s", c.name, r)
		}
		_, links := expLinks(t, results, c.name)
		if len(links) != 2 {
			t.Fatalf("%s: links %+v", c.name, links)
		}
		for _, l := range links {
			if l.Status != store.StatusOK || l.RunID == 0 {
				t.Errorf("%s: link %+v", c.name, l)
				continue
			}
			run := getRun(t, results, l.RunID)
			if run.Workload != c.workload || !strings.Contains(string(run.Summary), `"workload":"`+c.workload+`"`) {
				t.Errorf("%s: run %d is %s: %s", c.name, l.RunID, run.Workload, run.Summary)
			}
		}
		// The workloads clean up after themselves.
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: %d entries left in %s", c.name, len(ents), dir)
		}
	}
}
