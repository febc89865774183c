package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestReadOnlyProcSysRefused: a container's /proc/sys is mounted
// read-only; the same here with a read-only bind mount of a fake tree.
// The value is refused before anything is written, saying why.
func TestReadOnlyProcSysRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		if testutil.InCI() {
			t.Fatal("needs root (a bind mount)")
		}
		t.Skip("needs root (a bind mount)")
	}
	m := fakeMachine(t)
	dir := filepath.Join(m.Root, "proc", "sys")
	if out, err := exec.Command("mount", "--bind", "-o", "ro", dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	_, err := m.Resolve([]Setting{{Key: "vm.dirty_ratio", Value: "10"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "is on a read-only filesystem (a container?)") || !strings.Contains(errs.HintOf(err), "privileged container") {
		t.Errorf("read-only /proc/sys: %v (hint %q)", err, errs.HintOf(err))
	}
}
