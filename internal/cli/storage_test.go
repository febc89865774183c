package cli_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/testutil"
)

// storageJSON is the storage summary as documented in docs/storage.md,
// decoded separately from the product's own struct on purpose.
type storageJSON struct {
	RunID        int64   `json:"run_id"`
	Workload     string  `json:"workload"`
	Status       string  `json:"status"`
	Dir          string  `json:"dir"`
	FioVersion   string  `json:"fio_version"`
	IOEngine     string  `json:"ioengine"`
	IOEngineNote string  `json:"ioengine_note"`
	Direct       bool    `json:"direct"`
	BlockBytes   int64   `json:"block_size_bytes"`
	SizeBytes    int64   `json:"size_bytes"`
	Jobs         int     `json:"jobs"`
	RuntimeS     float64 `json:"runtime_s"`
	DropCaches   struct {
		Requested bool   `json:"requested"`
		Done      bool   `json:"done"`
		Note      string `json:"note"`
	} `json:"drop_caches"`
	JobFilePath string `json:"job_file_path"`
	JobFile     string `json:"job_file"`
	Tests       []struct {
		Name          string   `json:"name"`
		Read          *dirJSON `json:"read"`
		Write         *dirJSON `json:"write"`
		JobFile       string   `json:"job_file"`
		CachesDropped bool     `json:"caches_dropped"`
		Interrupted   bool     `json:"interrupted"`
	} `json:"tests"`
	Interrupted bool `json:"interrupted"`
}

type dirJSON struct {
	BWBytes  float64 `json:"bw_bytes"`
	MBs      float64 `json:"mb_s"`
	IOPS     float64 `json:"iops"`
	IOBytes  int64   `json:"io_bytes"`
	IOs      int64   `json:"ios"`
	RuntimeS float64 `json:"runtime_s"`
	Clat     struct {
		Mean, P50, P95, P99, Max float64
		P999                     float64 `json:"p99_9"`
	} `json:"clat_ms"`
}

// needFio returns a harness whose environment has the process's PATH, or
// skips when fio is not installed (fails in CI, which installs it).
func needFio(t *testing.T) *harness {
	t.Helper()
	if _, err := exec.LookPath("fio"); err != nil {
		if testutil.InCI() {
			t.Fatalf("fio is required in CI: %v", err)
		}
		t.Skipf("skipping: fio not installed (apt-get install fio)")
	}
	h := newHarness(t)
	h.env["PATH"] = os.Getenv("PATH")
	return h
}

func readStorageJSON(t *testing.T, path string) storageJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--json file: %v", err)
	}
	var s storageJSON
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, b)
	}
	return s
}

// noLeftovers checks that tunebench removed its directories under dir.
func noLeftovers(t *testing.T, dir, prefix string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			t.Errorf("%s left behind in %s", e.Name(), dir)
		}
	}
}

// checkDirJSON checks one direction's figures for sanity.
func checkDirJSON(t *testing.T, what string, d *dirJSON, bs float64) {
	t.Helper()
	if d == nil {
		t.Errorf("%s: missing", what)
		return
	}
	if d.MBs <= 0 || d.IOPS <= 0 || d.IOs <= 0 || d.IOBytes <= 0 || d.RuntimeS <= 0 {
		t.Errorf("%s: non-positive figures %+v", what, d)
	}
	if got := d.BWBytes / d.IOPS; math.Abs(got-bs) > bs*0.02 {
		t.Errorf("%s: bw/iops = %.0f bytes, want the block size %.0f", what, got, bs)
	}
	if math.Abs(d.MBs-d.BWBytes/1e6) > 1e-6*d.MBs {
		t.Errorf("%s: mb_s %v vs bw_bytes %v", what, d.MBs, d.BWBytes)
	}
	if int64(bs)*d.IOs != d.IOBytes {
		t.Errorf("%s: %d ios x %.0f != %d bytes", what, d.IOs, bs, d.IOBytes)
	}
	c := d.Clat
	if !(c.Mean > 0 && c.P50 > 0 && c.P50 <= c.P95 && c.P95 <= c.P99 && c.P99 <= c.P999 && c.P999 <= c.Max*1.016) {
		t.Errorf("%s: completion latency not sane: %+v", what, c)
	}
}

// TestStorageRun runs the five standard tests for 2 s each on a small data
// set and checks the figures, the store and the clean-up.
func TestStorageRun(t *testing.T) {
	t.Parallel()
	h := needFio(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "storage.json")
	r := h.must(0, "storage", "--dir", dir, "--size", "64M", "--jobs", "2", "--runtime", "2s", "--results", results, "--json", jsonPath)
	for _, want := range []string{"read MB/s", "write IOPS", "seq-read", "rand-write", "rw-mix", "stored as run"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, r)
		}
	}
	for _, want := range []string{"[1/5] seq-read", "[5/5] rw-mix", "ioengine "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr has no %q:\n%s", want, r)
		}
	}
	s := readStorageJSON(t, jsonPath)
	if s.Workload != "storage" || s.Status != "ok" || s.Interrupted || !strings.HasPrefix(s.FioVersion, "fio-") {
		t.Errorf("summary header: %+v", s)
	}
	if s.IOEngine != "libaio" && s.IOEngine != "psync" || s.IOEngineNote == "" {
		t.Errorf("ioengine %q (%q)", s.IOEngine, s.IOEngineNote)
	}
	if s.BlockBytes != 8192 || s.SizeBytes != 64<<20 || s.Jobs != 2 || s.DropCaches.Requested {
		t.Errorf("parameters in summary: %+v", s)
	}
	want := []string{"seq-read", "seq-write", "rand-read", "rand-write", "rw-mix"}
	if len(s.Tests) != len(want) {
		t.Fatalf("want %d tests, got %d", len(want), len(s.Tests))
	}
	for i, tst := range s.Tests {
		if tst.Name != want[i] {
			t.Errorf("test %d is %q, want %q", i, tst.Name, want[i])
		}
		if !strings.Contains(tst.JobFile, "["+want[i]+"]") || !strings.Contains(tst.JobFile, "runtime=2\n") {
			t.Errorf("%s: job file not stored:\n%s", tst.Name, tst.JobFile)
		}
		reads := strings.Contains(tst.Name, "read") || tst.Name == "rw-mix"
		writes := strings.Contains(tst.Name, "write") || tst.Name == "rw-mix"
		if reads {
			checkDirJSON(t, tst.Name+" read", tst.Read, 8192)
		} else if tst.Read != nil {
			t.Errorf("%s: reads %+v", tst.Name, tst.Read)
		}
		if writes {
			checkDirJSON(t, tst.Name+" write", tst.Write, 8192)
		} else if tst.Write != nil {
			t.Errorf("%s: writes %+v", tst.Name, tst.Write)
		}
		if tst.Read != nil && (tst.Read.RuntimeS < 1.5 || tst.Read.RuntimeS > 4) {
			t.Errorf("%s: read runtime %v s, want about 2", tst.Name, tst.Read.RuntimeS)
		}
	}
	if mix := s.Tests[4]; mix.Read != nil && mix.Write != nil {
		if share := float64(mix.Read.IOs) / float64(mix.Read.IOs+mix.Write.IOs); share < 0.4 || share > 0.6 {
			t.Errorf("rw-mix read share %.2f, want about 0.5", share)
		}
	}
	noLeftovers(t, dir, "tunebench-fio-")

	runs := listRuns(t, results)
	if len(runs) != 1 {
		t.Fatalf("want one stored run, got %d", len(runs))
	}
	run := getRun(t, results, runs[0].ID)
	if run.Workload != "storage" || run.Variant != "seq-read,seq-write,rand-read,rand-write,rw-mix" || run.Status != store.StatusOK {
		t.Errorf("stored run: %s %s %s", run.Workload, run.Variant, run.Status)
	}
	var stored storageJSON
	if err := json.Unmarshal(run.Summary, &stored); err != nil || stored.RunID != run.ID || len(stored.Tests) != 5 {
		t.Errorf("stored summary: %v run_id %d tests %d", err, stored.RunID, len(stored.Tests))
	}
	var env struct {
		DataDir *struct {
			FSType  string `json:"fs_type"`
			Options string `json:"options"`
		} `json:"data_dir"`
	}
	if err := json.Unmarshal(run.Env, &env); err != nil || env.DataDir == nil || env.DataDir.FSType == "" || env.DataDir.Options == "" {
		t.Errorf("environment lacks the filesystem of --dir: %s", run.Env)
	}
	var params map[string]any
	if err := json.Unmarshal(run.Params, &params); err != nil || params["size"] != "64M" || params["ioengine"] != s.IOEngine {
		t.Errorf("params: %v %s", err, run.Params)
	}
	if run.EndedAt.Sub(run.StartedAt) < 10*time.Second {
		t.Errorf("run lasted %v, want at least 5 x 2 s", run.EndedAt.Sub(run.StartedAt))
	}
}

// A missing fio gives the environment error (exit 6) naming the install command.
func TestStorageMissingFio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	h := newHarness(t)
	h.env["PATH"] = t.TempDir() // no fio there
	r := h.must(6, "storage", "--dir", dir, "--results", results)
	if !strings.Contains(r.stderr, "fio not found") || !strings.Contains(r.stderr, "apt-get install fio") {
		t.Errorf("error does not name the install command:\n%s", r)
	}
	h.env["TUNEBENCH_FIO"] = filepath.Join(dir, "no-fio-here")
	r = h.must(6, "storage", "--dir", dir, "--results", results)
	if !strings.Contains(r.stderr, "apt-get install fio") {
		t.Errorf("TUNEBENCH_FIO to a missing file:\n%s", r)
	}
	if runs := listRuns(t, results); len(runs) != 0 {
		t.Errorf("runs stored without fio: %+v", runs)
	}
	noLeftovers(t, dir, "tunebench-fio-")
}

// Devices are refused without --allow-destroy, before fio is even looked for.
func TestStorageRefusesDevice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	results := tempPath(t, "results.db")
	r := h.must(2, "storage", "--dir", "/dev/null", "--results", results)
	if !strings.Contains(r.stderr, "--allow-destroy") || !strings.Contains(r.stderr, "device") {
		t.Errorf("device refusal:\n%s", r)
	}
	job := tempPath(t, "dev.fio")
	os.WriteFile(job, []byte("[global]\nsize=1G\n[x]\nrw=write\nfilename=/dev/sdq\n"), 0o600)
	r = h.must(2, "storage", "--dir", t.TempDir(), "--job-file", job, "--results", results)
	if !strings.Contains(r.stderr, "/dev/sdq") || !strings.Contains(r.stderr, "--allow-destroy") {
		t.Errorf("job file naming a device:\n%s", r)
	}
}

func TestStorageBadUsage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	job := tempPath(t, "j.fio")
	os.WriteFile(job, []byte("[x]\nrw=read\nsize=1M\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"storage"}, "--dir"},
		{[]string{"storage", "--dir", filepath.Join(dir, "nope")}, "create the directory"},
		{[]string{"storage", "--dir", dir, "--tests", "seq-reed"}, "unknown test"},
		{[]string{"storage", "--dir", dir, "--tests", "seq-read", "--job-file", job}, "not both"},
		{[]string{"storage", "--dir", dir, "--runtime", "1500ms"}, "whole seconds"},
		{[]string{"storage", "--dir", dir, "--size", "lots"}, "--size"},
		{[]string{"storage", "--dir", dir, "--jobs", "0"}, "jobs"},
		{[]string{"storage", "--dir", job}, "not a directory"},
	} {
		r := h.must(2, append(c.args, "--results", results)...)
		if !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "fix:") {
			t.Errorf("want %q and a fix:\n%s", c.want, r)
		}
	}
	if runs := listRuns(t, results); len(runs) != 0 {
		t.Errorf("runs stored after usage errors: %+v", runs)
	}
}

// --drop-caches writes "3" before each test when it can, and says and
// records it when it cannot. TUNEBENCH_DROP_CACHES_FILE stands in for
// /proc/sys/vm/drop_caches so the test does not empty the machine's cache.
func TestStorageDropCaches(t *testing.T) {
	t.Parallel()
	h := needFio(t)
	if os.Geteuid() != 0 {
		t.Skip("the can-drop path needs root; the not-root path is tested in internal/storage/fio")
	}
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	stand := tempPath(t, "drop_caches")
	os.WriteFile(stand, nil, 0o600)
	h.env["TUNEBENCH_DROP_CACHES_FILE"] = stand
	jsonPath := tempPath(t, "s.json")
	h.must(0, "storage", "--dir", dir, "--size", "16M", "--jobs", "1", "--runtime", "1s", "--tests", "rand-read,seq-write",
		"--drop-caches", "--results", results, "--json", jsonPath)
	if b, _ := os.ReadFile(stand); string(b) != "3\n" {
		t.Errorf("drop_caches stand-in holds %q, want \"3\\n\"", b)
	}
	s := readStorageJSON(t, jsonPath)
	if !s.DropCaches.Requested || !s.DropCaches.Done || len(s.Tests) != 2 || !s.Tests[0].CachesDropped || !s.Tests[1].CachesDropped {
		t.Errorf("drop caches not recorded: %+v", s)
	}

	h.env["TUNEBENCH_DROP_CACHES_FILE"] = filepath.Join(dir, "missing", "drop_caches")
	r := h.must(0, "storage", "--dir", dir, "--size", "16M", "--jobs", "1", "--runtime", "1s", "--tests", "rand-read",
		"--drop-caches", "--results", results, "--json", jsonPath)
	if !strings.Contains(r.stderr, "caches will NOT be dropped") || !strings.Contains(r.stdout, "caches were NOT dropped") {
		t.Errorf("not said that caches were not dropped:\n%s", r)
	}
	s = readStorageJSON(t, jsonPath)
	if !s.DropCaches.Requested || s.DropCaches.Done || s.DropCaches.Note == "" || s.Tests[0].CachesDropped {
		t.Errorf("not-dropped not recorded: %+v", s.DropCaches)
	}
}

// A user's job file: every job reported, files under the new directory,
// removed at the end.
func TestStorageJobFile(t *testing.T) {
	t.Parallel()
	h := needFio(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	job := tempPath(t, "mine.fio")
	os.WriteFile(job, []byte("[global]\nioengine=psync\nbs=4k\nsize=8M\nruntime=1\ntime_based=1\n[randreader]\nrw=randread\n[writer]\nrw=write\nbs=16k\n"), 0o600)
	jsonPath := tempPath(t, "s.json")
	r := h.must(0, "storage", "--dir", dir, "--job-file", job, "--results", results, "--json", jsonPath)
	s := readStorageJSON(t, jsonPath)
	if len(s.Tests) != 2 || s.Tests[0].Name != "randreader" || s.Tests[1].Name != "writer" || s.JobFilePath != job || !strings.Contains(s.JobFile, "[writer]") {
		t.Fatalf("job file summary: %+v\n%s", s, r)
	}
	checkDirJSON(t, "randreader", s.Tests[0].Read, 4096)
	checkDirJSON(t, "writer", s.Tests[1].Write, 16384)
	runs := listRuns(t, results)
	if len(runs) != 1 || runs[0].Variant != "job-file:mine.fio" {
		t.Errorf("stored: %+v", runs)
	}
	noLeftovers(t, dir, "tunebench-fio-")

	bad := tempPath(t, "bad.fio")
	os.WriteFile(bad, []byte("[x]\nrw=sideways\n"), 0o600)
	r = h.must(2, "storage", "--dir", dir, "--job-file", bad, "--results", results)
	if !strings.Contains(r.stderr, "parse-only") {
		t.Errorf("bad job file:\n%s", r)
	}
}

// Ctrl-C during a test: fio stops, the partial test is kept, the run is
// stored as interrupted, the data files are removed, exit 130.
func TestStorageInterrupt(t *testing.T) {
	t.Parallel()
	h := needFio(t)
	dir := t.TempDir()
	results := tempPath(t, "results.db")
	jsonPath := tempPath(t, "s.json")
	sig := make(chan os.Signal, 2)
	rn := h.start(sig, "storage", "--dir", dir, "--size", "32M", "--jobs", "1", "--runtime", "30s", "--tests", "rand-read,seq-write",
		"--results", results, "--json", jsonPath)
	rn.waitStderr(t, "[1/2] rand-read", 30*time.Second)
	time.Sleep(2 * time.Second)
	sig <- os.Interrupt
	t0 := time.Now()
	r := rn.wait(t, 60*time.Second)
	if took := time.Since(t0); took > 15*time.Second {
		t.Errorf("took %v to stop after the interrupt", took)
	}
	if r.code != 130 {
		t.Fatalf("want exit 130:\n%s", r)
	}
	s := readStorageJSON(t, jsonPath)
	if !s.Interrupted || s.Status != "interrupted" || len(s.Tests) != 1 || !s.Tests[0].Interrupted || s.Tests[0].Read == nil || s.Tests[0].Read.IOs == 0 {
		t.Errorf("interrupted summary: %+v", s)
	}
	runs := listRuns(t, results)
	if len(runs) != 1 || runs[0].Status != store.StatusInterrupted {
		t.Errorf("stored: %+v", runs)
	}
	noLeftovers(t, dir, "tunebench-fio-")
}
