package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

// smallFS mounts a new ext4 filesystem of mb MiB on a loop device and
// returns its mount point (mode 0755, for the server's unprivileged user).
// The cleanup unmounts it (lazily when busy), detaches the loop device and
// removes the image, also when the test fails. Without root or the tools
// the test is skipped.
func smallFS(t *testing.T, mb int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: a loop-device filesystem needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: %s not found (e2fsprogs, util-linux)", tool)
		}
	}
	dir, remove, err := testutil.TempDir("tunebench-smallfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(mb << 20)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("skipping: loop devices are not available here: mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		loops, _ := exec.Command("losetup", "-n", "-O", "NAME", "-j", img).Output()
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s; unmounting lazily", mnt, err, out)
			_ = exec.Command("umount", "-l", mnt).Run()
		}
		for _, dev := range strings.Fields(string(loops)) {
			_ = exec.Command("losetup", "-d", dev).Run() // already gone when mount set autoclear
		}
	})
	if err := os.Chmod(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return mnt
}

// startOn starts a managed server in dir with the test configuration and
// extra settings; when the test fails, its log shows what the server did.
func startOn(t *testing.T, dir string, extra ...server.Setting) *server.Server {
	t.Helper()
	srv := testutil.StartServer(t, func(o *server.Options) {
		o.Dir = dir
		o.Config = append(testutil.TestConfig(), extra...)
	})
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(srv.LogPath())
			t.Logf("server log:\n%s", b)
		}
	})
	return srv
}

// TestDiskFullLoad reproduces issue 16, item 7 on a 100 MiB filesystem
// holding a managed server (about 45 MiB free after initdb): a load that
// does not fit is refused before it starts; with --force it runs out of
// space and says so, naming the filesystem, its free space, that the load
// is incomplete and how to go on; after that, a smaller load with --drop
// fits (the drop's CHECKPOINT frees the space and the WAL).
func TestDiskFullLoad(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 100)
	srv := startOn(t, filepath.Join(mnt, "srv"))
	h := newHarness(t)
	load := func(args ...string) []string {
		return append([]string{"load", "tpcb", "--server-dir", srv.Dir(), "--load-workers", "1"}, args...)
	}

	// (b) The estimate of scale 3 (47 MiB of tables and indexes and as much
	// WAL) is more than the filesystem has: refused, nothing changed.
	r := h.must(errs.ExitEnvironment, load("--scale", "3")...)
	for _, want := range []string{"not enough space for tpcb scale 3", "filesystem on " + mnt, "free", "max_wal_size", "fix: free space on " + mnt, "--force"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stderr, "loading tpcb") && strings.Contains(r.stderr, "SQLSTATE") {
		t.Errorf("the refused load ran:\n%s", r)
	}

	// (a) With --force it runs out of space.
	r = h.must(errs.ExitEnvironment, load("--scale", "3", "--force")...)
	for _, want := range []string{"disk full on " + mnt, "free)", "the tpcb scale 3 load is incomplete", "fix: free space on " + mnt, "--drop", "smaller --scale"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("disk-full error lacks %q:\n%s", want, r)
		}
	}

	// (c) A smaller load with --drop fits.
	r = h.must(0, load("--scale", "1", "--drop")...)
	if !strings.Contains(r.stdout, "done in") {
		t.Errorf("the smaller load printed no summary:\n%s", r)
	}
}

// TestDiskFullLoadResume: the loads that resume say so when they run out
// of space (tpcc with --resume, tpch by the same command), and the resume
// itself checks the space it still needs. With wal_level minimal their
// COPY FREEZE writes no WAL, so the data is what fills the disk (a WAL
// write that fails stops the server instead: PANIC, then crash recovery,
// whose timing would make the test flaky).
func TestDiskFullLoadResume(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 100)
	srv := startOn(t, filepath.Join(mnt, "srv"), server.Setting{Name: "wal_level", Value: "minimal"}, server.Setting{Name: "max_wal_senders", Value: "0"})
	h := newHarness(t)
	conn := testutil.Connect(t, srv)
	load := func(w, db string, args ...string) []string {
		return append([]string{"load", w, "--server-dir", srv.Dir(), "-d", db, "--load-workers", "1"}, args...)
	}
	expect := func(r result, wants ...string) {
		t.Helper()
		t.Logf("%s", r)
		for _, w := range wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("lacks %q:\n%s", w, r)
			}
		}
	}

	// One warehouse (118 MB with its indexes) does not fit.
	cc := testutil.CreateDB(t, srv)
	expect(h.must(errs.ExitEnvironment, load("tpcc", cc, "--warehouses", "1")...), "not enough space for tpcc 1 warehouse", "--force")
	expect(h.must(errs.ExitEnvironment, load("tpcc", cc, "--warehouses", "1", "--force")...),
		"disk full on "+mnt, "the tpcc 1 warehouse load is incomplete", "fix: free space on "+mnt, "tunebench load tpcc --resume", "--drop")
	// The resume needs what is not in yet: still too much.
	expect(h.must(errs.ExitEnvironment, load("tpcc", cc, "--resume")...), "not enough space for tpcc", "filesystem on "+mnt)
	if _, err := conn.Exec(t.Context(), "drop database "+cc+" with (force)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "checkpoint"); err != nil {
		t.Fatal(err)
	}

	ch := testutil.CreateDB(t, srv)
	expect(h.must(errs.ExitEnvironment, load("tpch", ch, "--scale", "0.1", "--force")...),
		"disk full on "+mnt, "the tpch scale 0.1 load is incomplete", "`tunebench load tpch --scale 0.1` again to resume", "--drop")
	if r := h.must(0, load("tpch", ch, "--scale", "0.01", "--drop")...); !strings.Contains(r.stdout, "loaded tpch scale 0.01") {
		t.Errorf("the smaller tpch load printed no summary:\n%s", r)
	}
}
