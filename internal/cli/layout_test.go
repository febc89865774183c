package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `storage layout check` validates a layouts file without touching
// anything; --dry-run prints the commands; problems exit 2 with the line.
func TestStorageLayoutCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(`layouts:
  ext4-noatime: {loop: 512MiB, filesystem: ext4, mount: [noatime], readahead: 128KiB}
  xfs-wal: {loop: 320MiB, filesystem: xfs, wal: {loop: 64MiB, filesystem: ext4}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.must(0, "storage", "layout", "check", good, "--dry-run", "--work-dir", "/w")
	for _, want := range []string{"ext4-noatime: ext4 on a 512.0 MiB loop file, mount noatime, readahead 128.0 KiB",
		"$ mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/loopN", "$ mount -t xfs /dev/loopN /w/xfs-wal.mnt",
		"wal: ext4 on a 64.0 MiB loop file", "2 layout(s) in " + good + " are valid"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat("/w"); err == nil {
		t.Errorf("a dry run touched /w")
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("layouts:\n  a: {loop: 1GiB, filesystem: ext4, mount: [noatme]}\n  b: {loop: 1GiB, filesystem: zfs}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.must(2, "storage", "layout", "check", bad)
	if !strings.Contains(r.stderr, "bad.yaml:2: layout a: mount option \"noatme\" is not one ext4 takes; did you mean noatime?") ||
		!strings.Contains(r.stderr, "bad.yaml:3: layout b: unknown filesystem \"zfs\"") {
		t.Errorf("bad layouts:\n%s", r)
	}
	dev := filepath.Join(dir, "dev.yaml")
	if err := os.WriteFile(dev, []byte("layouts:\n  n: {filesystem: ext4, devices: [/dev/null]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.must(2, "storage", "layout", "check", dev)
	if !strings.Contains(r.stdout, "REFUSED: /dev/null is not a block device") {
		t.Errorf("a character device:\n%s", r)
	}
	h.must(0, "fsblog", "layout", "check", good) // every directory workload has it
}

// TestDryRunRefusesWhatTheRunRefuses: devices a run refuses (here two
// regular files) make `experiment run --dry-run` fail as the run would,
// with every problem and nothing touched, and `storage layout check
// --dry-run` counts each problem once.
func TestDryRunRefusesWhatTheRunRefuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	layouts := fmt.Sprintf("layouts:\n  one: {devices: [%s], filesystem: ext4}\n  two: {devices: [%s], filesystem: ext4}\n", a, b)
	path := writeExperiment(t, "name: dry\ntarget: {managed: {}}\nworkload:\n  name: tpcb\n  options: {scale: 1, duration: 1s}\n"+layouts+"matrix:\n  storage: [one, two]\n")
	r := h.must(2, "experiment", "run", path, "--dry-run", "--allow-destroy")
	if !strings.Contains(r.stdout, "storage=one") || !strings.Contains(r.stderr, "cannot run experiment dry as planned (nothing was started)") ||
		!strings.Contains(r.stderr, a+" is not a block device") || !strings.Contains(r.stderr, b+" is not a block device") {
		t.Errorf("the dry run of refused devices:\n%s", r)
	}
	for _, f := range []string{a, b} {
		if got, _ := os.ReadFile(f); string(got) != "keep me" {
			t.Errorf("%s was touched: %q", f, got)
		}
	}
	file := filepath.Join(dir, "layouts.yaml")
	if err := os.WriteFile(file, []byte(layouts), 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.must(2, "storage", "layout", "check", file, "--dry-run")
	if !strings.Contains(r.stderr, "2 problem(s) in "+file) {
		t.Errorf("layout check counts:\n%s", r)
	}
}

// TestDryRunShowsRestartCommand: the plan of a remote target shows the
// restart command it will run, at each restart and at the restore.
func TestDryRunShowsRestartCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := writeExperiment(t, `name: rc
target:
  dsn: host=127.0.0.1 port=5432 dbname=postgres
  restart_command: ssh db1 sudo systemctl restart postgresql
  restart_timeout: 10m
workload:
  name: tpcb
  options: {scale: 1, duration: 1s}
matrix:
  settings:
    shared_buffers: [128MB, 256MB]
`)
	r := h.must(0, "experiment", "run", path, "--dry-run")
	for _, want := range []string{"restart command: ssh db1 sudo systemctl restart postgresql (at most 10m0s",
		"(restart: ssh db1 sudo systemctl restart postgresql)", "restore the settings (a setting that needs it: restart: ssh db1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, r)
		}
	}
}

// TestNoDatabaseExperiment: an experiment of a workload that uses no
// database (storage, fsblog) makes no benchmark database, template, load
// or reset (issue 41 item 6).
func TestNoDatabaseExperiment(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, f := range []string{"../../examples/readahead-fio.yaml", "../../examples/fsblog-cache-blown.yaml"} {
		r := h.must(0, "experiment", "run", f, "--dry-run")
		if !strings.Contains(r.stdout, "uses no database)") || !strings.Contains(r.stdout, "reset: none (no data in a database)") ||
			strings.Contains(r.stdout, "template") || strings.Contains(r.stdout, "-- load ") || strings.Contains(r.stdout, "recreate") {
			t.Errorf("%s:\n%s", f, r)
		}
	}
}
