package layout

import (
	"context"
	"os"
	"testing"
)

// BenchmarkProvision makes and tears down a 1 GiB loop layout per
// filesystem (go test -bench Provision ./internal/storage/layout/; root):
// what matrix.storage adds to each layout's runs.
func BenchmarkProvision(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, fs := range []string{"ext4", "xfs", "btrfs"} {
		if _, err := lookPath(Filesystems[fs]); err != nil {
			continue
		}
		b.Run(fs, func(b *testing.B) {
			work := b.TempDir()
			for i := 0; i < b.N; i++ {
				m, err := Provision(context.Background(), &Layout{Name: fs, LoopSize: 1 << 30, Filesystem: fs}, Options{WorkDir: work})
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Teardown(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
