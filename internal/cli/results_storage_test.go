package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
)

// `results show` names the device under the data directory, its scheduler
// and readahead, queue and filesystem features (snapshot version 2), in the
// words of the report's environment table; a snapshot without them (version
// 1, as TestOldStore replays) prints no such lines.
func TestResultsShowNamesTheDevice(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.db")
	st := openStore(t, path)
	env := `{"version":2,"host":{"hostname":"lab"},"data_dir":{"path":"/mnt/tb/data","mount_point":"/mnt/tb","fs_type":"xfs",
"source":"/dev/loop3","device":"7:3","options":"rw,noatime","super_options":"rw,inode64",
"block_device":{"name":"loop3","maj_min":"7:3","kind":"loop","size_bytes":314572800,"backing_file":"/var/tmp/tb/xfs.img","direct_io":true,
 "queue":{"scheduler":"none","read_ahead_kb":128,"read_ahead_sectors":256,"rotational":true,"nr_requests":128,"max_sectors_kb":1280,
  "logical_block_size":512,"physical_block_size":512,"write_cache":"write back","discard_max_bytes":4294966784},
 "lower":[{"name":"nvme0n1","maj_min":"259:0","kind":"disk","model":"Samsung SSD 980 1TB","size_bytes":1000204886016,
  "queue":{"scheduler":"none","read_ahead_kb":128,"read_ahead_sectors":256,"rotational":false,"nr_requests":1023,"max_sectors_kb":128,
   "logical_block_size":512,"physical_block_size":512,"write_cache":"write back","discard_max_bytes":2199023255040}}]},
"fs_features":{"source":"xfs_info /mnt/tb","features":["crc","finobt","reflink"],"block_size":4096,"details":{"inode_size":"512","log":"internal"}}},
"driver":{},"taken_at":"2026-01-01T00:00:00Z"}`
	oldEnv := `{"host":{"hostname":"lab"},"data_dir":{"path":"/srv/data","mount_point":"/","fs_type":"ext4","source":"/dev/vda","device":"254:0"},"driver":{}}`
	sum := `{"workload":"storage","status":"ok","dir":"/mnt/tb/data","tests":[]}`
	for _, e := range []string{env, oldEnv} {
		_, err := st.SaveRun(context.Background(), &store.Run{Workload: "storage", Variant: "standard", Status: store.StatusOK,
			StartedAt: time.Unix(1700000000, 0), EndedAt: time.Unix(1700000060, 0), Summary: json.RawMessage(sum), Env: json.RawMessage(e)})
		if err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t)
	r := h.must(0, "results", "show", "1", "--results", path)
	want := `storage under /mnt/tb/data (xfs on /mnt/tb):
  device: loop (file /var/tmp/tb/xfs.img, direct I/O, 300.0 MiB) on nvme0n1 (Samsung SSD 980 1TB, 931.5 GiB, non-rotational)
  scheduler, readahead: loop none, readahead 128 KiB (256 sectors); nvme0n1 none, readahead 128 KiB (256 sectors)
  queue: loop: nr_requests 128, max_sectors_kb 1280, block 512/512 (logical/physical), write back cache, discard; nvme0n1: nr_requests 1023, max_sectors_kb 128, block 512/512 (logical/physical), write back cache, discard
  filesystem features: block 4096; crc finobt reflink; inode_size 512, log internal
`
	if !strings.Contains(r.stdout, want) {
		t.Errorf("results show 1 lacks\n%s\n%s", want, r.stdout)
	}
	if !strings.Contains(r.stdout, `"block_device": {`) {
		t.Errorf("the environment's JSON lacks the block device:\n%s", r.stdout)
	}
	r = h.must(0, "results", "show", "2", "--results", path)
	if strings.Contains(r.stdout, "storage under") || !strings.Contains(r.stdout, "environment:") {
		t.Errorf("a version 1 snapshot:\n%s", r.stdout)
	}
}
