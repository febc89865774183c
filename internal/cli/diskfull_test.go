package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/machine"
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

// TestDiskFullLoad (issue 16 item 7, issue 42 item 1) on a 300 MiB
// filesystem holding a managed server: a load that does not fit is
// refused before it starts; with --force it is stopped while the server
// still has room for its WAL (loadspace.Reserve) and says so, naming the
// filesystem, its free space, that the load is incomplete and how to go
// on; the server then survives a crash (an immediate stop and its crash
// recovery), which a load that took the last of the space made
// impossible; after it, a load whose tables do not fit beside the WAL
// segments pg_wal keeps is refused naming them, and a smaller one fits.
func TestDiskFullLoad(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 300)
	srv := startOn(t, filepath.Join(mnt, "srv"))
	h := newHarness(t)
	load := func(args ...string) []string {
		return append([]string{"load", "tpcb", "--server-dir", srv.Dir(), "--load-workers", "2"}, args...)
	}

	// (b) The estimate of scale 20 is more than the filesystem has:
	// refused, nothing changed.
	r := h.must(errs.ExitEnvironment, load("--scale", "20")...)
	for _, want := range []string{"not enough space for tpcb scale 20", "filesystem on " + mnt, "free", "max_wal_size", "fix: free space on " + mnt, "--force"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stderr, "loading tpcb") && strings.Contains(r.stderr, "SQLSTATE") {
		t.Errorf("the refused load ran:\n%s", r)
	}

	// (a) With --force it is stopped before the disk is full.
	r = h.must(errs.ExitEnvironment, load("--scale", "20", "--force")...)
	for _, want := range []string{"the tpcb scale 20 load is incomplete: tunebench stopped it with", "free on " + mnt, "keeping 32.0 MiB for the server's WAL", "fix: free space on " + mnt, "--drop", "smaller --scale"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the stopped load's error lacks %q:\n%s", want, r)
		}
	}
	if free, ok := machine.FreeBytes(mnt); !ok || free < 16<<20 {
		t.Errorf("%d bytes free after the stopped load, less than a WAL segment", free)
	}
	// The server can go through a crash recovery.
	if err := srv.Restart(t.Context(), "immediate"); err != nil {
		t.Fatalf("the server does not come back from a crash after the stopped load: %v", err)
	}

	// (c) A smaller load with --drop: the drop's CHECKPOINT frees the
	// tables, but pg_wal keeps the segments the failed load's checkpoints
	// recycled; a load whose tables do not fit beside them says so, and
	// one that fits reuses them for its WAL.
	r = h.must(errs.ExitEnvironment, load("--scale", "8", "--drop")...)
	if !strings.Contains(r.stderr, "WAL segments an earlier load's checkpoints recycled") {
		t.Errorf("the refusal does not name the recycled WAL:\n%s", r)
	}
	r = h.must(0, load("--scale", "4", "--drop")...)
	if !strings.Contains(r.stdout, "done in") {
		t.Errorf("the smaller load printed no summary:\n%s", r)
	}
}

// TestDiskFullLoadResume: the loads that resume say so when they are
// stopped for lack of space (tpcc with --resume, tpch by the same
// command), and the resume
// itself checks the space it still needs. With wal_level minimal their
// COPY FREEZE writes no WAL, so the data is what fills the disk (a WAL
// write that fails stops the server instead: PANIC, then crash recovery,
// whose timing would make the test flaky).
func TestDiskFullLoadResume(t *testing.T) {
	t.Parallel()
	mnt := smallFS(t, 160)
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
		"the tpcc 1 warehouse load is incomplete: tunebench stopped it with", "free on "+mnt, "fix: free space on "+mnt, "tunebench load tpcc --resume", "--drop")
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
		"the tpch scale 0.1 load is incomplete: tunebench stopped it with", "free on "+mnt, "`tunebench load tpch --scale 0.1` again to resume", "--drop")
	if r := h.must(0, load("tpch", ch, "--scale", "0.01", "--drop")...); !strings.Contains(r.stdout, "loaded tpch scale 0.01") {
		t.Errorf("the smaller tpch load printed no summary:\n%s", r)
	}
}
