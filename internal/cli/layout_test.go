package cli_test

import (
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
