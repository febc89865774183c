package store

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/errs"
)

// A store on a full filesystem says so (issue 16, item 17: it said "check
// that the file is a tunebench results store"). The test mounts a 64 KiB
// tmpfs (root only) and fills it; it is unmounted whatever happens.
func TestOpenOnFullFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	fill, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break
		}
	}
	fill.Close()
	st, err := Open(context.Background(), filepath.Join(dir, "results.db"))
	if err == nil {
		st.Close()
		t.Fatal("a store opened on a full filesystem")
	}
	if !strings.Contains(err.Error(), "filesystem is full") || !strings.Contains(errs.HintOf(err), "free space") {
		t.Fatalf("error %q, hint %q; want the full filesystem named", err, errs.HintOf(err))
	}
}
