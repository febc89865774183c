package pg

import (
	"context"
	"testing"

	"github.com/tunebench/tunebench/internal/machine"
)

// TestWholeDisk: through SQL a partition's whole disk is found by name
// (pg_read_file cannot follow /sys/dev/block/MAJ:MIN/..), a whole disk is
// itself, and a device diskstats lacks is "".
func TestWholeDisk(t *testing.T) {
	files := map[string]string{
		"/sys/dev/block/8:1/partition":           "1\n",
		"/sys/block/sda/sda1/partition":          "1\n",
		"/sys/dev/block/259:2/partition":         "2\n",
		"/sys/block/nvme0n1/nvme0n1p2/partition": "2\n",
	}
	var reads []string
	read := func(_ context.Context, paths []string) (map[string][]byte, error) {
		out := map[string][]byte{}
		for _, p := range paths {
			reads = append(reads, p)
			if v, ok := files[p]; ok {
				out[p] = []byte(v)
			}
		}
		return out, nil
	}
	stats := map[string]machine.DiskStat{
		"sda": {Major: 8, Minor: 0}, "sda1": {Major: 8, Minor: 1}, "sdb": {Major: 8, Minor: 16},
		"nvme0n1": {Major: 259, Minor: 0}, "nvme0n1p2": {Major: 259, Minor: 2}, "dm-0": {Major: 254, Minor: 0},
	}
	for majMin, want := range map[string]string{"8:1": "sda", "259:2": "nvme0n1", "8:16": "sdb", "254:0": "dm-0", "9:9": ""} {
		reads = nil
		if got := wholeDisk(context.Background(), read, majMin, stats); got != want {
			t.Errorf("wholeDisk(%s) = %q, want %q (read %v)", majMin, got, want, reads)
		}
	}
}
