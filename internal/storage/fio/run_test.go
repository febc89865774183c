package fio

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/testutil"
)

// realFio finds the installed fio or skips (fails in CI, which installs it).
func realFio(t *testing.T) *Binary {
	t.Helper()
	b, err := Find(context.Background(), os.Getenv("TUNEBENCH_FIO"), os.Getenv("PATH"))
	if err != nil {
		if testutil.InCI() {
			t.Fatalf("fio is required in CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return b
}

func TestFindMissing(t *testing.T) {
	empty := t.TempDir()
	_, err := Find(context.Background(), "", empty)
	if errs.KindOf(err) != errs.KindEnvironment || errs.ExitCode(err) != 6 {
		t.Fatalf("missing fio: got %v (kind %v)", err, errs.KindOf(err))
	}
	if !strings.Contains(errs.HintOf(err), "apt-get install fio") {
		t.Errorf("hint %q does not name the install command", errs.HintOf(err))
	}
	if _, err := Find(context.Background(), filepath.Join(empty, "fio"), ""); errs.KindOf(err) != errs.KindEnvironment {
		t.Errorf("explicit missing path: got %v", err)
	}
	// An executable that is not fio.
	fake := filepath.Join(empty, "fio")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(context.Background(), "", empty); errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "does not look like fio") {
		t.Errorf("fake fio: got %v", err)
	}
}

func TestDropCachesChecks(t *testing.T) {
	if ok, why := CanDropCaches(DropCachesPath, 1000); ok || !strings.Contains(why, "not root") {
		t.Errorf("non-root: %v %q", ok, why)
	}
	if ok, why := CanDropCaches(filepath.Join(t.TempDir(), "no", "such"), 0); ok || why == "" {
		t.Errorf("unwritable: %v %q", ok, why)
	}
	// A stand-in file receives exactly what the kernel file would.
	f := filepath.Join(t.TempDir(), "drop_caches")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, why := CanDropCaches(f, 0); !ok {
		t.Fatalf("writable stand-in: %q", why)
	}
	if err := DropCaches(f); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != "3\n" {
		t.Errorf("wrote %q, want \"3\\n\"", b)
	}
}

func TestInspect(t *testing.T) {
	d, err := Inspect(t.TempDir())
	if err != nil || !d.IsDir || d.Device {
		t.Errorf("dir: %+v %v", d, err)
	}
	n, err := Inspect("/dev/null")
	if err != nil || !n.Device || n.Block || n.IsDir {
		t.Errorf("/dev/null: %+v %v", n, err)
	}
	if _, err := Inspect(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Errorf("missing path: want an error")
	}
}

// Every generated job file must be accepted by the real fio.
func TestGeneratedJobFilesParse(t *testing.T) {
	b := realFio(t)
	ctx := context.Background()
	eng, why := b.ChooseEngine(ctx)
	if eng != "libaio" && eng != "psync" || why == "" {
		t.Errorf("engine %q (%q)", eng, why)
	}
	dir := t.TempDir()
	for _, direct := range []bool{false, true} {
		for _, tst := range StandardTests() {
			o := JobOptions{Target: dir, TotalSize: 16 << 20, BlockSize: 8192, Jobs: 2, IODepth: 4, Runtime: 5 * time.Second, Direct: direct, IOEngine: eng}
			jf, err := JobFile(tst, o)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, tst.Name+".fio")
			if err := os.WriteFile(p, []byte(jf), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := b.CheckJobFile(ctx, p); err != nil {
				t.Errorf("%s direct=%v: %v\n%s", tst.Name, direct, err, jf)
			}
		}
	}
	bad := filepath.Join(dir, "bad.fio")
	os.WriteFile(bad, []byte("[x]\nrw=sideways\n"), 0o600)
	if err := b.CheckJobFile(ctx, bad); err == nil {
		t.Errorf("a bad job file passed --parse-only")
	}
}

// A one-second real run of the mixed test, then an interrupted one.
func TestRunShort(t *testing.T) {
	b := realFio(t)
	ctx := context.Background()
	eng, _ := b.ChooseEngine(ctx)
	dir := t.TempDir()
	o := JobOptions{Target: dir, TotalSize: 8 << 20, BlockSize: 8192, Jobs: 2, IODepth: 1, Runtime: time.Second, IOEngine: eng}
	jf, err := JobFile(StandardTests()[4], o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(ctx, jf, dir, "rw-mix")
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Stderr)
	}
	rs := res.Output.Results()
	if len(rs) != 1 || rs[0].Name != "rw-mix" || rs[0].Read == nil || rs[0].Write == nil {
		t.Fatalf("results %+v", rs)
	}
	if rs[0].Read.IOPS <= 0 || rs[0].Write.IOPS <= 0 || rs[0].Read.ClatMs.P99 <= 0 {
		t.Errorf("figures %+v %+v", rs[0].Read, rs[0].Write)
	}
	if res.Output.Version != b.Version {
		t.Errorf("output version %q, binary %q", res.Output.Version, b.Version)
	}
	for _, f := range []string{"tunebench-fio.0", "tunebench-fio.1", "rw-mix.fio", "rw-mix.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("expected %s: %v", f, err)
		}
	}

	// Interrupted: fio gets SIGINT and still writes its JSON.
	o.Runtime = 30 * time.Second
	jf, _ = JobFile(StandardTests()[2], o)
	ictx, cancel := context.WithCancel(ctx)
	time.AfterFunc(1500*time.Millisecond, cancel)
	t0 := time.Now()
	res, err = b.Run(ictx, jf, dir, "rand-read")
	if err != nil {
		t.Fatalf("interrupted run: %v", err)
	}
	if took := time.Since(t0); took > 15*time.Second {
		t.Errorf("fio took %v to stop after SIGINT", took)
	}
	if !res.Interrupted || res.Output == nil {
		t.Fatalf("interrupted %v output %v\n%s", res.Interrupted, res.Output != nil, res.Raw)
	}
	if r := res.Output.Results()[0]; r.Read == nil || r.Read.RuntimeS > 10 || r.Read.IOs == 0 {
		t.Errorf("partial result %+v", r.Read)
	}
}

// A job fio rejects gives an error carrying fio's message.
func TestRunFailure(t *testing.T) {
	b := realFio(t)
	dir := t.TempDir()
	_, err := b.Run(context.Background(), "[x]\nrw=read\nsize=1M\nfilename="+filepath.Join(dir, "missing", "f")+"\nreadonly=1\n", dir, "x")
	if err == nil || !strings.Contains(err.Error(), "fio failed") {
		t.Fatalf("want fio failed, got %v", err)
	}
	if _, err := exec.LookPath("true"); err == nil {
		if _, err := Find(context.Background(), "/bin/true", ""); err == nil {
			t.Errorf("/bin/true accepted as fio")
		}
	}
}
