package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/storage/fio"
	"github.com/tunebench/tunebench/internal/store"
)

// Environment variables the storage command reads (through State).
const (
	// envFio names the fio binary to use instead of searching PATH.
	envFio = "TUNEBENCH_FIO"
	// envDropCachesFile replaces /proc/sys/vm/drop_caches (tests).
	envDropCachesFile = "TUNEBENCH_DROP_CACHES_FILE"
)

// storageParams are the parameters of one storage run; stored with the run.
type storageParams struct {
	Dir          string        `json:"dir"`
	Size         string        `json:"size"`       // as given, total over the jobs
	BlockSize    string        `json:"block_size"` // as given
	Jobs         int           `json:"jobs"`
	IODepth      int           `json:"iodepth"`
	Runtime      time.Duration `json:"runtime_ns"` // per test
	Direct       bool          `json:"direct"`
	Tests        []string      `json:"tests"`
	IOEngine     string        `json:"ioengine"` // "" chooses libaio when available, else psync
	DropCaches   bool          `json:"drop_caches"`
	JobFile      string        `json:"job_file,omitempty"` // the user's job file instead of the standard tests
	AllowDestroy bool          `json:"allow_destroy"`
	Experiment   string        `json:"experiment,omitempty"`
}

func defaultStorageParams() storageParams {
	return storageParams{Size: "4G", BlockSize: "8k", Jobs: 4, IODepth: 1, Runtime: 60 * time.Second}
}

// storageSummary is what --json writes and the store keeps (docs/storage.md).
type storageSummary struct {
	RunID        int64         `json:"run_id"`
	Workload     string        `json:"workload"`
	Status       string        `json:"status"`
	StartedAt    time.Time     `json:"started_at"`
	EndedAt      time.Time     `json:"ended_at"`
	Dir          string        `json:"dir"`
	Device       bool          `json:"device,omitempty"`
	FioVersion   string        `json:"fio_version"`
	IOEngine     string        `json:"ioengine,omitempty"`
	IOEngineNote string        `json:"ioengine_note,omitempty"`
	Direct       bool          `json:"direct"`
	BlockBytes   int64         `json:"block_size_bytes,omitempty"`
	SizeBytes    int64         `json:"size_bytes,omitempty"`
	Jobs         int           `json:"jobs,omitempty"`
	IODepth      int           `json:"iodepth,omitempty"`
	RuntimeS     float64       `json:"runtime_s,omitempty"`
	DropCaches   dropCaches    `json:"drop_caches"`
	JobFilePath  string        `json:"job_file_path,omitempty"`
	JobFile      string        `json:"job_file,omitempty"`
	Tests        []storageTest `json:"tests"`
	Interrupted  bool          `json:"interrupted"`
	Error        string        `json:"error,omitempty"`
}

// dropCaches records whether the page cache was dropped before each test.
type dropCaches struct {
	Requested bool   `json:"requested"`
	Done      bool   `json:"done"`
	Note      string `json:"note,omitempty"` // why not, when requested and not done
}

// storageTest is one test (or one job of a user's job file).
type storageTest struct {
	fio.Result
	JobFile       string  `json:"job_file,omitempty"` // the generated job file
	CachesDropped bool    `json:"caches_dropped"`
	ElapsedS      float64 `json:"elapsed_s"` // wall time of the fio process (file layout included)
	Interrupted   bool    `json:"interrupted,omitempty"`
}

func newStorageCmd(s *State) *cobra.Command {
	var rf resultsFlag
	var jsonPath string
	p := defaultStorageParams()
	cmd := &cobra.Command{
		Use:   "storage --dir D [--size 4G] [--block-size 8k] [--jobs N] [--runtime 60s] [--direct] [--tests ...]",
		Short: "Storage baseline with fio: sequential/random read and write, 50/50 mix",
		Long: `Runs fio (which must be installed) with generated job files for five standard
tests, one fio process per test, reads fio's JSON output and stores per test the
bandwidth, IOPS and completion latency (mean, p50, p95, p99, p99.9, max) of reads
and writes, with the fio version and the job files:

  seq-read    rw=read          rand-read   rw=randread
  seq-write   rw=write         rand-write  rw=randwrite
  rw-mix      rw=randrw, rwmixread=50

The data set (--size, split evenly between the --jobs jobs) goes into a new
directory under --dir, laid out by fio before the first test, shared by all tests
and removed at the end. ioengine is libaio when fio can load it, else psync.
Without --direct, I/O goes through the page cache: reads of a data set smaller
than memory measure the cache. --drop-caches drops the page cache before each
test (sync; echo 3 > /proc/sys/vm/drop_caches), which needs root; when it cannot,
tunebench says so and records it.

--job-file F runs your own fio job file instead (one fio process, every job
reported; relative file names land in the new directory under --dir).

A block device as --dir (or in a job file) is refused unless --allow-destroy:
fio writes to it directly and destroys its contents. See docs/storage.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("tests") && p.JobFile != "" {
				return errs.Usage("give --tests or --job-file, not both", "--tests and --job-file both given")
			}
			return runStored(cmd, s, &rf, jsonPath, func(ctx context.Context, st *store.Store) (any, error) {
				sum, err := runStorage(ctx, s, st, p, nil)
				if sum == nil {
					return nil, err
				}
				return sum, err
			})
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.StringVar(&p.Dir, "dir", "", "directory on the filesystem to test (required); a block device only with --allow-destroy")
	f.StringVar(&p.Size, "size", p.Size, "data set size in total, split evenly between the jobs (k, M, G, T: powers of 1024)")
	f.StringVar(&p.BlockSize, "block-size", p.BlockSize, "bytes per I/O (fio bs=)")
	f.IntVar(&p.Jobs, "jobs", p.Jobs, "concurrent fio jobs (numjobs=), one file each")
	f.IntVar(&p.IODepth, "iodepth", p.IODepth, "I/Os in flight per job (fio iodepth=; only asynchronous engines like libaio with --direct use it)")
	f.DurationVar(&p.Runtime, "runtime", p.Runtime, "measured time per test (whole seconds)")
	f.BoolVar(&p.Direct, "direct", false, "direct I/O (O_DIRECT): bypass the page cache")
	f.StringSliceVar(&p.Tests, "tests", nil, "tests to run, comma-separated, in this order (default all: "+strings.Join(fio.TestNames(), ",")+")")
	f.StringVar(&p.IOEngine, "ioengine", "", "fio ioengine (default libaio when available, else psync)")
	f.BoolVar(&p.DropCaches, "drop-caches", false, "drop the page cache before each test (needs root)")
	f.StringVar(&p.JobFile, "job-file", "", "run this fio job file instead of the standard tests")
	f.BoolVar(&p.AllowDestroy, "allow-destroy", false, "allow a block device as the target: its contents are destroyed")
	f.StringVar(&p.Experiment, "experiment", "", "experiment name to file the run under")
	f.StringVar(&jsonPath, "json", "", "write the summary as JSON to this file (see docs/storage.md)")
	return cmd
}

// storagePlan is a validated storage run before fio starts.
type storagePlan struct {
	tests   []fio.Test
	target  fio.Target
	opts    fio.JobOptions
	jobText string // the user's job file, when given
}

// plan validates p; errors are usage errors (nothing has run yet).
func (p *storageParams) plan() (*storagePlan, error) {
	pl := &storagePlan{}
	if p.Dir == "" {
		return nil, errs.Usage("give --dir D: a directory on the filesystem to test", "no --dir")
	}
	abs, err := filepath.Abs(p.Dir)
	if err != nil {
		return nil, errs.Usage("give a valid --dir", "--dir %s: %v", p.Dir, err)
	}
	p.Dir = abs
	t, err := fio.Inspect(abs)
	if err != nil {
		return nil, errs.Usage("create the directory first, or choose an existing one", "--dir %s: %v", abs, err)
	}
	pl.target = t
	var tests []fio.Test
	if p.JobFile == "" {
		if tests, err = fio.ParseTests(p.Tests); err != nil {
			return nil, errs.Usage("tests are "+strings.Join(fio.TestNames(), ", "), "--tests: %v", err)
		}
		p.Tests = nil
		for _, tt := range tests {
			p.Tests = append(p.Tests, tt.Name)
		}
	}
	pl.tests = tests
	writes := false
	for _, tt := range tests {
		writes = writes || tt.Writes()
	}
	switch {
	case t.Device && !p.AllowDestroy:
		return nil, errs.Usage("add --allow-destroy only if every byte on it may be overwritten; otherwise give a directory",
			"%s is a device: fio would do its I/O on it directly and destroy its contents", abs)
	case t.Device && t.Mounted && (writes || p.JobFile != ""):
		return nil, errs.Usage("unmount it first, or give a directory on that filesystem as --dir",
			"%s holds a mounted filesystem: writing to the device would corrupt it", abs)
	case !t.Device && !t.IsDir:
		return nil, errs.Usage("give a directory (or a block device with --allow-destroy)", "--dir %s is not a directory", abs)
	}
	if p.JobFile != "" {
		b, err := os.ReadFile(p.JobFile)
		if err != nil {
			return nil, errs.Usage("give a readable fio job file", "--job-file: %v", err)
		}
		pl.jobText = string(b)
		if len(fio.JobNames(pl.jobText)) == 0 {
			return nil, errs.Usage("a job file needs at least one [job] section", "--job-file %s has no jobs", p.JobFile)
		}
		for _, tp := range fio.JobFileTargets(pl.jobText) {
			dev := strings.HasPrefix(filepath.Clean(tp), "/dev/")
			if ti, err := fio.Inspect(tp); err == nil && ti.Device {
				dev = true
			}
			if dev && !p.AllowDestroy {
				return nil, errs.Usage("add --allow-destroy only if every byte on it may be overwritten",
					"--job-file %s names the device %s: fio would destroy its contents", p.JobFile, tp)
			}
		}
		return pl, nil
	}
	size, err := fio.ParseSize(p.Size)
	if err != nil {
		return nil, errs.Usage("--size takes e.g. 64M, 4G", "--size: %v", err)
	}
	bs, err := fio.ParseSize(p.BlockSize)
	if err != nil {
		return nil, errs.Usage("--block-size takes e.g. 4k, 8k, 1M", "--block-size: %v", err)
	}
	pl.opts = fio.JobOptions{Target: abs, Device: t.Device, TotalSize: size, BlockSize: bs, Jobs: p.Jobs, IODepth: p.IODepth,
		Runtime: p.Runtime, Direct: p.Direct, IOEngine: "psync"}
	if p.IOEngine != "" {
		pl.opts.IOEngine = p.IOEngine
	}
	if err := pl.opts.Validate(); err != nil {
		return nil, errs.Usage("see tunebench storage --help", "%v", err)
	}
	if bs%512 != 0 && p.Direct {
		return nil, errs.Usage("direct I/O needs a block size that is a multiple of 512 (better: of 4k)", "--block-size %d with --direct", bs)
	}
	return pl, nil
}

// findFio locates fio through the State's environment: $TUNEBENCH_FIO,
// else PATH (the process's PATH when the State has none at all).
func findFio(ctx context.Context, s *State) (*fio.Binary, error) {
	path, ok := s.LookupEnv("PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	return fio.Find(ctx, s.Getenv(envFio), path)
}

// runStorage runs the storage baseline described by p, stores it (with
// link, when the run belongs to an experiment's plan, in the same
// transaction) and prints progress on stderr and the result table on
// stdout. It returns the summary (also when interrupted or failed part-way,
// then with an error that carries the exit code).
func runStorage(ctx context.Context, s *State, st *store.Store, p storageParams, link *store.PlanLink) (*storageSummary, error) {
	pl, err := p.plan()
	if err != nil {
		return nil, err
	}
	bin, err := findFio(ctx, s)
	if err != nil {
		return nil, err
	}
	if fio.MajorVersion(bin.Version) < 3 {
		s.eprintf("warning: %s is older than fio 3; its JSON output may lack the fields tunebench reads\n", bin.Version)
	}
	sum := &storageSummary{Workload: "storage", Dir: p.Dir, Device: pl.target.Device, FioVersion: bin.Version, Direct: p.Direct,
		DropCaches: dropCaches{Requested: p.DropCaches}}
	if p.JobFile == "" {
		if p.IOEngine == "" {
			pl.opts.IOEngine, sum.IOEngineNote = bin.ChooseEngine(ctx)
		} else {
			sum.IOEngineNote = "chosen with --ioengine"
		}
		p.IOEngine = pl.opts.IOEngine
		sum.IOEngine, sum.BlockBytes, sum.SizeBytes = pl.opts.IOEngine, pl.opts.BlockSize, pl.opts.PerJobSize()*int64(pl.opts.Jobs)
		sum.Jobs, sum.IODepth, sum.RuntimeS = pl.opts.Jobs, pl.opts.IODepth, pl.opts.Runtime.Seconds()
	}

	// Where fio runs: a new directory under --dir (the data files and the
	// job and output files), or a temporary one for a device.
	base := p.Dir
	if pl.target.Device {
		base = ""
	}
	workDir, err := os.MkdirTemp(base, "tunebench-fio-")
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give a --dir you can write to", "cannot create the test directory under %s", p.Dir)
	}
	defer os.RemoveAll(workDir)
	if !pl.target.Device {
		pl.opts.Target = workDir
		if p.JobFile == "" {
			if free, err := fio.CheckSpace(workDir, pl.opts.PerJobSize()*int64(pl.opts.Jobs)); errors.Is(err, fio.ErrNoSpace) {
				return nil, errs.Usage("lower --size", "the data set (%s) does not fit in the %s free under %s",
					fio.FormatSize(pl.opts.PerJobSize()*int64(pl.opts.Jobs)), human(float64(free))+"B", p.Dir)
			}
		}
	}
	if p.JobFile != "" {
		sum.JobFilePath, sum.JobFile = p.JobFile, pl.jobText
		path := filepath.Join(workDir, "job.fio")
		if err := os.WriteFile(path, []byte(pl.jobText), 0o600); err != nil {
			return nil, err
		}
		if err := bin.CheckJobFile(ctx, path); err != nil {
			return nil, errs.Usage("fix the job file (fio's message above)", "%v", err)
		}
	}

	// Page cache: drop before each test when asked and possible.
	dropPath := s.Getenv(envDropCachesFile)
	if dropPath == "" {
		dropPath = fio.DropCachesPath
	}
	canDrop := false
	if p.DropCaches {
		var why string
		canDrop, why = fio.CanDropCaches(dropPath, os.Geteuid())
		if !canDrop {
			sum.DropCaches.Note = why
			s.eprintf("storage: caches will NOT be dropped before the tests: %s\n", why)
		}
	}

	env := envinfo.Take(ctx, envinfo.Options{DataDir: p.Dir, Version: Version})
	fsDesc := ""
	if env.DataDir != nil {
		fsDesc = fmt.Sprintf(", %s (%s)", env.DataDir.FSType, env.DataDir.Options)
	}
	started := time.Now()
	sum.StartedAt = started.UTC()
	if p.JobFile == "" {
		mode := "buffered"
		if p.Direct {
			mode = "direct I/O"
		}
		s.eprintf("storage: %s, ioengine %s (%s), %s, %s blocks, %d job(s) x %s, %s per test, %d test(s) in %s%s\n",
			bin.Version, pl.opts.IOEngine, sum.IOEngineNote, mode, fio.FormatSize(pl.opts.BlockSize), pl.opts.Jobs,
			fio.FormatSize(pl.opts.PerJobSize()), pl.opts.Runtime, len(pl.tests), pl.opts.Target, fsDesc)
	} else {
		s.eprintf("storage: %s, job file %s (%d job section(s)), running in %s%s\n", bin.Version, p.JobFile, len(fio.JobNames(pl.jobText)), workDir, fsDesc)
	}

	var runErr error
	drop := func() bool {
		if !canDrop {
			return false
		}
		if err := fio.DropCaches(dropPath); err != nil {
			sum.DropCaches.Note = err.Error()
			s.eprintf("storage: dropping caches failed: %v\n", err)
			return false
		}
		return true
	}
	record := func(name string, res *fio.RunResult, dropped bool, jobText string) {
		if res == nil || res.Output == nil {
			return
		}
		for _, r := range res.Output.Results() {
			if p.JobFile == "" {
				r.Name = name // group_reporting: one result, named after the test
			}
			sum.Tests = append(sum.Tests, storageTest{Result: r, JobFile: jobText, CachesDropped: dropped, ElapsedS: res.Elapsed.Seconds(), Interrupted: res.Interrupted})
			s.eprintf("  %s\n", storageLine(sum.Tests[len(sum.Tests)-1]))
		}
	}
	if p.JobFile == "" {
		for i, tt := range pl.tests {
			jobText, err := fio.JobFile(tt, pl.opts)
			if err != nil {
				return nil, errs.Usage("see tunebench storage --help", "%v", err)
			}
			dropped := drop()
			note := ""
			if i == 0 && !pl.target.Device {
				note = fmt.Sprintf(" (fio first lays out %s of test files)", fio.FormatSize(pl.opts.PerJobSize()*int64(pl.opts.Jobs)))
			}
			s.eprintf("[%d/%d] %s: %s for %s%s\n", i+1, len(pl.tests), tt.Name, tt.Doc, pl.opts.Runtime, note)
			res, err := bin.Run(ctx, jobText, workDir, tt.Name)
			record(tt.Name, res, dropped, jobText)
			if err != nil {
				runErr = fioError(err, res, p.Direct)
				break
			}
			if res.Interrupted {
				break
			}
			if err := ctx.Err(); err != nil {
				break
			}
		}
	} else {
		dropped := drop()
		s.eprintf("[1/1] %s\n", p.JobFile)
		res, err := bin.RunFile(ctx, filepath.Join(workDir, "job.fio"), filepath.Join(workDir, "job.json"), workDir)
		record("", res, dropped, "")
		if err != nil {
			runErr = fioError(err, res, p.Direct)
		}
	}
	sum.DropCaches.Done = p.DropCaches && canDrop && sum.DropCaches.Note == ""
	ended := time.Now()
	sum.EndedAt = ended.UTC()
	sum.Interrupted = ctx.Err() != nil
	switch {
	case sum.Interrupted:
		sum.Status = store.StatusInterrupted
	case runErr != nil:
		sum.Status = store.StatusFailed
		sum.Error = runErr.Error()
	default:
		sum.Status = store.StatusOK
		for _, t := range sum.Tests {
			if t.Error != 0 {
				sum.Status = store.StatusErrors
			}
		}
	}
	if len(sum.Tests) == 0 && runErr != nil {
		return nil, runErr // nothing measured: nothing to store
	}

	bg, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	variant := strings.Join(p.Tests, ",")
	if p.JobFile != "" {
		variant = "job-file:" + filepath.Base(p.JobFile)
	}
	id, err := saveStorageRun(bg, st, p, variant, env, sum, started, ended, link)
	if err != nil {
		return sum, err
	}
	s.printf("\n")
	printStorageTable(s, sum)
	if p.DropCaches && !sum.DropCaches.Done {
		s.printf("caches were NOT dropped: %s\n", sum.DropCaches.Note)
	}
	s.printf("stored as run %d in %s\n", id, st.Path())
	switch {
	case sum.Interrupted:
		return sum, errs.New(errs.KindInterrupted, "", "storage run interrupted; partial result saved as run %d (status interrupted)", id)
	case runErr != nil:
		return sum, runErr
	case sum.Status == store.StatusErrors:
		return sum, errs.New(errs.KindRunErrors, "see fio's error numbers in the stored run", "fio reported job errors in run %d", id)
	}
	return sum, nil
}

// fioError classifies a failed fio run; the hint points at the likely fix.
func fioError(err error, res *fio.RunResult, direct bool) error {
	stderr := ""
	if res != nil {
		stderr = res.Stderr
	}
	hint := "see fio's message; the job file is stored with the run"
	if direct && (strings.Contains(stderr, "direct=1") || strings.Contains(stderr, "O_DIRECT")) {
		hint = "this filesystem does not support direct I/O (tmpfs does not): run without --direct"
	}
	if strings.Contains(stderr, "No space left") {
		hint = "lower --size or free space under --dir"
	}
	return errs.Wrap(errs.KindInternal, err, hint, "fio run failed")
}

// saveStorageRun writes the run in one transaction.
func saveStorageRun(ctx context.Context, st *store.Store, p storageParams, variant string, env *envinfo.Snapshot, sum *storageSummary, started, ended time.Time, link *store.PlanLink) (int64, error) {
	pj, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	ej, err := json.Marshal(env)
	if err != nil {
		return 0, err
	}
	r := &store.Run{Experiment: p.Experiment, Workload: "storage", Variant: variant, Status: sum.Status,
		StartedAt: started, EndedAt: ended, Params: pj, Env: ej, Link: link}
	return st.SaveRunWithSummary(ctx, r, func(id int64) (json.RawMessage, error) {
		sum.RunID = id
		return json.Marshal(sum)
	})
}

// storageLine is a test's one-line result (progress and brief results).
func storageLine(t storageTest) string {
	var parts []string
	for _, d := range []struct {
		name string
		d    *fio.Direction
	}{{"read", t.Read}, {"write", t.Write}} {
		if d.d != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f MB/s, %.0f IOPS, p99 %s ms", d.name, d.d.MBps, d.d.IOPS, fmtMs(d.d.ClatMs.P99)))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no I/O")
	}
	extra := ""
	if t.Interrupted {
		extra = " (interrupted)"
	}
	if t.Error != 0 {
		extra += fmt.Sprintf(" (fio error %d)", t.Error)
	}
	return fmt.Sprintf("%s: %s%s", t.Name, strings.Join(parts, "; "), extra)
}

// printStorageTable prints the tuning-guide table: rows = tests.
func printStorageTable(s *State, sum *storageSummary) {
	tb := newTable(s)
	tb.row("test", "read MB/s", "read IOPS", "read p99 ms", "write MB/s", "write IOPS", "write p99 ms")
	cells := func(d *fio.Direction) []string {
		if d == nil {
			return []string{"-", "-", "-"}
		}
		return []string{fmt.Sprintf("%.1f", d.MBps), fmt.Sprintf("%.0f", d.IOPS), fmtMs(d.ClatMs.P99)}
	}
	for _, t := range sum.Tests {
		name := t.Name
		if t.Interrupted {
			name += "*"
		}
		tb.row(append(append([]string{name}, cells(t.Read)...), cells(t.Write)...)...)
	}
	tb.flush()
	how := "buffered"
	if sum.Direct {
		how = "direct I/O"
	}
	if sum.JobFilePath == "" {
		s.printf("%s, ioengine %s, %s, %s blocks, %d job(s), iodepth %d; MB/s = 10^6 bytes/s; p99 = completion latency (fio clat)\n",
			sum.FioVersion, sum.IOEngine, how, fio.FormatSize(sum.BlockBytes), sum.Jobs, sum.IODepth)
	} else {
		s.printf("%s, job file %s; MB/s = 10^6 bytes/s; p99 = completion latency (fio clat)\n", sum.FioVersion, sum.JobFilePath)
	}
	for _, t := range sum.Tests {
		if t.Interrupted {
			s.printf("* interrupted: figures over the part that ran\n")
			break
		}
	}
}

// fmtMs shows milliseconds with at least three significant digits and at
// least three decimals (page-cache latencies are a few microseconds).
func fmtMs(v float64) string {
	dec := 3
	if v > 0 && v < 0.1 {
		dec = min(2-int(math.Floor(math.Log10(v))), 6)
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// storedStorage decodes a stored storage summary; nil when raw is not one.
// With storageOneLine and showStoredStorage it lets `results list/show`
// present storage runs (they print tpcb's columns today).
func storedStorage(raw json.RawMessage) *storageSummary {
	var sum storageSummary
	if json.Unmarshal(raw, &sum) != nil || sum.Workload != "storage" {
		return nil
	}
	return &sum
}

// storageOneLine is a stored storage run's one-line result, "" when raw is
// not a storage summary.
func storageOneLine(raw json.RawMessage) string {
	sum := storedStorage(raw)
	if sum == nil {
		return ""
	}
	var parts []string
	for _, t := range sum.Tests {
		d := t.Read
		if d == nil {
			d = t.Write
		}
		if d != nil {
			parts = append(parts, fmt.Sprintf("%s %.0f IOPS", t.Name, d.IOPS))
		}
	}
	return strings.Join(parts, ", ")
}

// showStoredStorage prints a stored storage run's table; false when raw is
// not a storage summary.
func showStoredStorage(s *State, raw json.RawMessage) bool {
	sum := storedStorage(raw)
	if sum == nil {
		return false
	}
	printStorageTable(s, sum)
	return true
}
