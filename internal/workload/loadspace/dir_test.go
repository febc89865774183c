package loadspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// dirTarget is a target that only knows its data directory.
type dirTarget struct {
	target.Target
	dir string
}

func (d dirTarget) LocalDataDir(context.Context) (string, string) { return d.dir, "" }

// TestDirLoad: on a 100 MiB tmpfs, a load estimated beyond the free space
// with the reserve is refused with the fix, a smaller one and --force pass;
// the guard cancels the load's context when the reserve is reached and
// Error says so; a target that does not know its directory checks nothing.
func TestDirLoad(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting needs root, and CI runs as root")
		}
		t.Skip("mounting needs root")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=100m", "tbspace", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	ctx := context.Background()

	l := &DirLoad{Target: dirTarget{dir: dir}, What: "tpcc 2 warehouses", Smaller: "fewer --warehouses"}
	err := l.Check(ctx, 80<<20)
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "not enough space for tpcc 2 warehouses") ||
		!strings.Contains(errs.HintOf(err), "fewer --warehouses") || !strings.Contains(errs.HintOf(err), "--force") {
		t.Errorf("80 MiB into 100 MiB with a 32 MiB reserve: %v (hint %q)", err, errs.HintOf(err))
	}
	if err := l.Check(ctx, 40<<20); err != nil {
		t.Errorf("40 MiB: %v", err)
	}
	if err := (&DirLoad{Target: dirTarget{dir: dir}, Force: true}).Check(ctx, 1<<30); err != nil {
		t.Errorf("--force: %v", err)
	}
	if err := (&DirLoad{Target: dirTarget{}}).Check(ctx, 1<<40); err != nil {
		t.Errorf("unknown directory: %v", err)
	}
	var nilLoad *DirLoad
	if err := nilLoad.Check(ctx, 1<<40); err != nil {
		t.Errorf("nil: %v", err)
	}

	gctx, stop := l.Guard(ctx)
	defer stop()
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 80<<20)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the guard did not stop the load with less than the reserve free")
	}
	err = l.Error(errors.New("context canceled"), "load again")
	if errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "tunebench stopped it") || !strings.Contains(errs.HintOf(err), "then load again") {
		t.Errorf("the guard's error: %v (hint %q)", err, errs.HintOf(err))
	}
}
