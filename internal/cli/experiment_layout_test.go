package cli_test

import (
	"github.com/tunebench/tunebench/internal/machine"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/testutil"
)

// needLoopDevices skips unless this test can make loop devices and
// filesystems (root, losetup, the mkfs tools).
func needLoopDevices(t *testing.T, mkfs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("storage layouts need root (losetup, mount)")
	}
	for _, p := range append([]string{"losetup"}, mkfs...) {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
}

// leftovers lists mounts and loop devices under dir.
func leftovers(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	mounts, err := machine.MountsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		out = append(out, "mounted "+m.MountPoint)
	}
	if b, err := exec.Command("losetup", "-a").Output(); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, dir) {
				out = append(out, "attached "+line)
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestExperimentStorageLayouts: matrix.storage makes each layout on a loop
// file (xfs with its WAL on a second loop device), starts a managed server
// on it, loads, runs, records the filesystem with the run, and takes it
// all down: nothing is left mounted or attached (issue 14). The work
// directory's name has a space: the kernel's mount table writes it \040,
// and a sweep that missed it left the mount of a killed run behind
// (issue 34).
func TestExperimentStorageLayouts(t *testing.T) {
	t.Parallel()
	needLoopDevices(t, "mkfs.ext4", "mkfs.xfs")
	h := newHarness(t)
	work, remove, err := testutil.TempDir("tunebench layouts test-") // the server's user must enter
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	t.Cleanup(func() {
		if l := leftovers(t, work); l != "" {
			t.Errorf("left behind:\n%s", l)
			for _, line := range strings.Split(l, "\n") { // do not leak them to the machine
				if m, ok := strings.CutPrefix(line, "mounted "); ok {
					exec.Command("umount", "-l", m).Run()
				}
			}
			exec.Command("sh", "-c", "losetup -a | grep -F \"$1\" | cut -d: -f1 | xargs -r -n1 losetup -d", "sh", work).Run()
		}
	})
	results := tempPath(t, "results.db")
	path := writeExperiment(t, fmt.Sprintf(`name: layouts
target:
  managed: {dir: %s}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s}
layouts:
  e4: {loop: 256MiB, filesystem: ext4, mount: [noatime], readahead: 64KiB}
  xw:
    loop: 320MiB
    filesystem: xfs
    wal: {loop: 64MiB, filesystem: ext4}
matrix:
  storage: [e4, xw]
order: sequential
`, work))
	d := h.must(0, "experiment", "run", path, "--results", results, "--dry-run")
	if !strings.Contains(d.stdout, "storage=e4") || !strings.Contains(d.stdout, "storage=xw") {
		t.Errorf("dry run:\n%s", d.stdout)
	}
	r := h.must(0, "experiment", "run", path, "--results", results)
	for _, want := range []string{"make storage layout e4 and start a managed server on it", "mkfs.xfs -f -q /dev/loop",
		"layout xw.wal: mkfs.ext4"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("missing %q:\n%s", want, r.stderr)
		}
	}
	_, links := expLinks(t, results, "layouts")
	if len(links) != 2 {
		t.Fatalf("links %+v", links)
	}
	for i, fs := range []string{"ext4", "xfs"} {
		x := h.must(0, "results", "export", fmt.Sprint(links[i].RunID), "--format", "json", "--results", results)
		if !strings.Contains(x.stdout, `"fs_type": "`+fs+`"`) && !strings.Contains(x.stdout, `"fs_type":"`+fs+`"`) {
			t.Errorf("run %d on layout %s: the environment does not record %s", links[i].RunID, links[i].Config, fs)
		}
		if fs == "xfs" && !strings.Contains(strings.ReplaceAll(x.stdout, " ", ""), `"wal_dir":{`) {
			t.Errorf("the xfs run with its WAL on a layout of its own does not record the WAL filesystem")
		}
		show := h.must(0, "results", "show", fmt.Sprint(links[i].RunID), "--results", results)
		if !strings.Contains(show.stdout, "layout: ") || !strings.Contains(show.stdout, "mkfs."+fs) {
			t.Errorf("results show of run %d does not name its layout and mkfs:\n%s", links[i].RunID, show.stdout)
		}
	}
	if l := leftovers(t, work); l != "" {
		t.Errorf("after the experiment:\n%s", l)
	}
	rep := tempPath(t, "layouts.html")
	h.must(0, "report", "layouts", "-o", rep, "--results", results)
	if b, _ := os.ReadFile(rep); !strings.Contains(string(b), "Storage layout") || !strings.Contains(string(b), "xw: xfs on a 320.0 MiB loop file, mkfs.xfs -f -q; WAL xw.wal: ext4") {
		t.Errorf("the report does not show the layouts")
	}
	if entries, _ := filepath.Glob(filepath.Join(work, "*.img")); len(entries) > 0 {
		t.Errorf("loop files left: %v", entries)
	}

	// Ctrl-C in the middle of a run: the server stops, the layout is taken
	// down; --resume makes it again and finishes.
	ipath := strings.Replace(path, "exp.yaml", "exp-int.yaml", 1)
	src, _ := os.ReadFile(path)
	src = []byte(strings.Replace(strings.Replace(string(src), "name: layouts", "name: layouts-int", 1), "duration: 1s", "duration: 3s", 1))
	if err := os.WriteFile(ipath, src, 0o600); err != nil {
		t.Fatal(err)
	}
	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "experiment", "run", ipath, "--results", results)
	rn.waitStderr(t, "progress:", 90*time.Second)
	sig <- os.Interrupt
	if r := rn.wait(t, 60*time.Second); r.code != 130 {
		t.Fatalf("interrupted experiment: want exit 130:\n%s", r)
	}
	if l := leftovers(t, work); l != "" {
		t.Errorf("after an interrupt:\n%s", l)
	}
	// kill -9 in the middle of a run: the layout stays mounted, and the
	// server started on it runs on. --resume stops that server, takes the
	// layout down, makes it again and finishes.
	child := h.spawn("experiment", "run", ipath, "--results", results, "--resume")
	child.waitStderr(t, "progress:", 90*time.Second)
	child.kill()
	if l := leftovers(t, work); !strings.Contains(l, "mounted ") {
		t.Errorf("after kill -9 the layout is no longer mounted: the test does not test the sweep")
	}
	r = h.must(0, "experiment", "run", ipath, "--results", results, "--resume")
	for _, want := range []string{"process(es) an earlier run left working on", "unmounting", "make storage layout"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the resume after kill -9 did not say %q:\n%s", want, r.stderr)
		}
	}
	if l := leftovers(t, work); l != "" {
		t.Errorf("after the resume:\n%s", l)
	}
}

// The whole plan's layouts are checked before anything starts: a device
// without --allow-destroy, or a RAID layout on a kernel without md, stops
// the experiment before it is stored (issue 14).
func TestExperimentPreflight(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	results := tempPath(t, "results.db")
	path := writeExperiment(t, `name: preflight
target:
  managed: {dir: /var/tmp/tunebench/never-made}
workload:
  name: tpcb
  options: {scale: 1, duration: 1s}
layouts:
  fine: {loop: 256MiB, filesystem: ext4}
  disk: {devices: [/dev/null], filesystem: ext4}
matrix:
  storage: [fine, disk]
`)
	r := h.must(2, "experiment", "run", path, "--results", results)
	if !strings.Contains(r.stderr, "this machine cannot run experiment preflight as planned (nothing was started)") ||
		!strings.Contains(r.stderr, "layout disk would make a filesystem on /dev/null") || !strings.Contains(r.stderr, "/dev/null is not a block device") ||
		strings.Contains(r.stderr, "make storage layout") {
		t.Errorf("preflight:\n%s", r)
	}
	if _, err := os.Stat("/var/tmp/tunebench/never-made"); err == nil {
		t.Errorf("the preflight made the work directory")
	}
	if _, err := os.Stat("/proc/mdstat"); err != nil {
		raid := strings.Replace(strings.Replace(string(mustRead(t, path)), "disk: {devices: [/dev/null], filesystem: ext4}", "md: {loop: 256MiB, filesystem: ext4, raid: {level: 0, members: 2}}", 1), "[fine, disk]", "[fine, md]", 1)
		if err := os.WriteFile(path, []byte(raid), 0o600); err != nil {
			t.Fatal(err)
		}
		r = h.must(6, "experiment", "run", path, "--results", results)
		if !strings.Contains(r.stderr, "this kernel offers no md software RAID") {
			t.Errorf("RAID without md:\n%s", r)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
