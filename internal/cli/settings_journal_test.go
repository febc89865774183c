package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestRunSettingsNeverOutliveTheRun: issue 16, items 1-3. A --set the
// machine cannot hold is refused before anything changes; one the server
// cannot start with is undone in its files and the server started again;
// the settings of a run killed -9 are restored by the next run, and by
// server stop / start.
func TestRunSettingsNeverOutliveTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := testutil.StartServer(t)
	db := loadedDB(h, srv)
	dir := srv.Dir()
	run := func(code int, extra ...string) result {
		return h.must(code, append([]string{"run", "tpcb", "--server-dir", dir, "-d", db, "-T", "1s",
			"--results", tempPath(t, "r.db")}, extra...)...)
	}
	autoConf := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "data", "postgresql.auto.conf"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	journal := func() []server.Applied {
		o, err := server.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return o.AppliedSettings()
	}

	if server.MachineMemory() > 0 {
		r := run(2, "--set", "shared_buffers=1TB")
		if !strings.Contains(r.stderr, "more than this machine's") || strings.Contains(autoConf(), "shared_buffers") {
			t.Errorf("shared_buffers=1TB:\n%s\nauto.conf:\n%s", r, autoConf())
		}
	}

	r := run(2, "--set", "shared_preload_libraries=tunebench_no_such_library")
	if !strings.Contains(r.stderr, "undid the change and started it again") {
		t.Errorf("a value the server cannot start with:\n%s", r)
	}
	if strings.Contains(autoConf(), "tunebench_no_such_library") || len(journal()) != 0 {
		t.Errorf("left behind: auto.conf\n%s\njournal %+v", autoConf(), journal())
	}
	h.must(0, "server", "stop", "--dir", dir)
	h.must(0, "server", "start", "--dir", dir)

	// A run killed -9 after its --set: the journal names a dead holder.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "64MB"}}); err != nil {
		t.Fatal(err)
	}
	testutil.SetHolder(t, dir, "work_mem", testutil.DeadPID(t))
	r = run(0)
	if !strings.Contains(r.stderr, "restoring work_mem, left changed by a tunebench process that ended without restoring them") {
		t.Errorf("the next run does not say what it restored:\n%s", r)
	}
	if got := showSetting(t, srv, db, "work_mem"); got == "64MB" || len(journal()) != 0 {
		t.Errorf("after the next run work_mem = %s, journal %+v", got, journal())
	}

	// ... and server stop, then start, restore them too.
	if _, err := srv.Apply(ctx, []server.Setting{{Name: "work_mem", Value: "65MB"}}); err != nil {
		t.Fatal(err)
	}
	testutil.SetHolder(t, dir, "work_mem", testutil.DeadPID(t))
	h.must(0, "server", "stop", "--dir", dir)
	h.must(0, "server", "start", "--dir", dir)
	if got := showSetting(t, srv, db, "work_mem"); got == "65MB" || strings.Contains(autoConf(), "65MB") {
		t.Errorf("after server stop and start work_mem = %s", got)
	}

	// An experiment whose last configuration the machine cannot hold stops
	// before its first run, naming the line (item 3).
	if server.MachineMemory() > 0 {
		path := writeExperiment(t, fmt.Sprintf(`name: too-big
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s}
matrix:
  settings:
    shared_buffers:
      - 128MB
      - 1TB
order: sequential
`, dir))
		results := tempPath(t, "exp.db")
		r := h.must(2, "experiment", "run", path, "--results", results)
		if !strings.Contains(r.stderr, "exp.yaml:11: matrix.settings.shared_buffers: 1TB") || !strings.Contains(r.stderr, "more than this machine's") ||
			strings.Contains(r.stderr, "run 1/") {
			t.Errorf("experiment with shared_buffers 1TB:\n%s", r)
		}
	}

	// A run's own --set is gone from the journal when it ends.
	run(0, "--set", "work_mem=66MB")
	if got := showSetting(t, srv, db, "work_mem"); got == "66MB" || len(journal()) != 0 {
		t.Errorf("after a run with --set work_mem = %s, journal %+v", got, journal())
	}
}
