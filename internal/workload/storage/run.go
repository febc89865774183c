package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/storage/fio"
	"github.com/tunebench/tunebench/internal/store"
	"github.com/tunebench/tunebench/internal/workload"
)

// params are the parameters of one storage run; stored with the run.
type params struct {
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
}

// storageRun is one validated storage run before fio starts.
type storageRun struct {
	env     *workload.RunEnv
	p       params
	tests   []fio.Test
	target  fio.Target
	opts    fio.JobOptions
	jobText string // the user's job file, when given
}

// NewRun validates the run: errors are usage errors (nothing has run yet).
func (Workload) NewRun(ctx context.Context, env *workload.RunEnv) (workload.Run, error) {
	o := env.Options
	r := &storageRun{env: env}
	p := params{Dir: o.String("dir"), Size: o.String("size"), BlockSize: o.String("block_size"), Jobs: int(o.Int("jobs")),
		IODepth: int(o.Int("iodepth")), Runtime: o.Duration("runtime"), Direct: o.Bool("direct"), Tests: o.List("tests"),
		IOEngine: o.String("ioengine"), DropCaches: o.Bool("drop_caches"), JobFile: o.String("job_file"), AllowDestroy: o.Bool("allow_destroy")}
	abs, err := workload.Dir(env, p.Dir, "storage", "fio's files")
	if err != nil {
		return nil, err
	}
	p.Dir = abs
	if r.target, err = fio.Inspect(abs); err != nil {
		return nil, errs.Usage("create the directory first, or choose an existing one", "--dir %s: %v", abs, err)
	}
	if p.JobFile == "" {
		if r.tests, err = fio.ParseTests(p.Tests); err != nil {
			return nil, errs.Usage("tests are "+strings.Join(fio.TestNames(), ", "), "--tests: %v", err)
		}
		p.Tests = nil
		for _, tt := range r.tests {
			p.Tests = append(p.Tests, tt.Name)
		}
	} else {
		p.Tests = nil
	}
	writes := false
	for _, tt := range r.tests {
		writes = writes || tt.Writes()
	}
	t := r.target
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
	r.p = p
	if p.JobFile != "" {
		b, err := os.ReadFile(p.JobFile)
		if err != nil {
			return nil, errs.Usage("give a readable fio job file", "--job-file: %v", err)
		}
		r.jobText = string(b)
		if len(fio.JobNames(r.jobText)) == 0 {
			return nil, errs.Usage("a job file needs at least one [job] section", "--job-file %s has no jobs", p.JobFile)
		}
		for _, tp := range fio.JobFileTargets(r.jobText) {
			dev := strings.HasPrefix(filepath.Clean(tp), "/dev/")
			if ti, err := fio.Inspect(tp); err == nil && ti.Device {
				dev = true
			}
			if dev && !p.AllowDestroy {
				return nil, errs.Usage("add --allow-destroy only if every byte on it may be overwritten",
					"--job-file %s names the device %s: fio would destroy its contents", p.JobFile, tp)
			}
		}
		return r, nil
	}
	size, err := fio.ParseSize(p.Size)
	if err != nil {
		return nil, errs.Usage("--size takes e.g. 64M, 4G", "--size: %v", err)
	}
	bs, err := fio.ParseSize(p.BlockSize)
	if err != nil {
		return nil, errs.Usage("--block-size takes e.g. 4k, 8k, 1M", "--block-size: %v", err)
	}
	r.opts = fio.JobOptions{Target: abs, Device: t.Device, TotalSize: size, BlockSize: bs, Jobs: p.Jobs, IODepth: p.IODepth,
		Runtime: p.Runtime, Direct: p.Direct, IOEngine: "psync"}
	if p.IOEngine != "" {
		r.opts.IOEngine = p.IOEngine
	}
	if err := r.opts.Validate(); err != nil {
		return nil, errs.Usage("see tunebench storage --help", "%v", err)
	}
	if bs%512 != 0 && p.Direct {
		return nil, errs.Usage("direct I/O needs a block size that is a multiple of 512 (better: of 4k)", "--block-size %d with --direct", bs)
	}
	return r, nil
}

// Describe: the run prints its own header once fio is found.
func (r *storageRun) Describe() string { return "" }

// Variant is the tests run, or the job file.
func (r *storageRun) Variant() string {
	if r.p.JobFile != "" {
		return "job-file:" + filepath.Base(r.p.JobFile)
	}
	return strings.Join(r.p.Tests, ",")
}

func (r *storageRun) Params() any { return r.p }

// findFio locates fio through the run's environment: $TUNEBENCH_FIO, else
// PATH (the process's when the environment has none at all).
func (r *storageRun) findFio(ctx context.Context) (*fio.Binary, error) {
	getenv := r.env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var path string
	ok := false
	if r.env.LookupEnv != nil {
		path, ok = r.env.LookupEnv("PATH")
	}
	if !ok {
		if p, err := exec.LookPath("fio"); err == nil {
			path = filepath.Dir(p)
		}
	}
	return fio.Find(ctx, getenv(EnvFio), path)
}

// Measure runs fio once per test (or once on the job file), with progress
// lines, and returns the summary (also when interrupted or failed part-way).
func (r *storageRun) Measure(ctx context.Context) (*workload.Measured, error) {
	p, note := r.p, r.env.Note
	bin, err := r.findFio(ctx)
	if err != nil {
		return nil, err
	}
	if fio.MajorVersion(bin.Version) < 3 {
		note("warning: %s is older than fio 3; its JSON output may lack the fields tunebench reads", bin.Version)
	}
	x := &Summary{Dir: p.Dir, Device: r.target.Device, FioVersion: bin.Version, Direct: p.Direct,
		DropCaches: DropCaches{Requested: p.DropCaches}}
	if p.JobFile == "" {
		if p.IOEngine == "" {
			r.opts.IOEngine, x.IOEngineNote = bin.ChooseEngine(ctx)
		} else {
			x.IOEngineNote = "chosen with --ioengine"
		}
		r.p.IOEngine = r.opts.IOEngine
		x.IOEngine, x.BlockBytes, x.SizeBytes = r.opts.IOEngine, r.opts.BlockSize, r.opts.PerJobSize()*int64(r.opts.Jobs)
		x.Jobs, x.IODepth, x.RuntimeS = r.opts.Jobs, r.opts.IODepth, r.opts.Runtime.Seconds()
	}

	// Where fio runs: a new directory under --dir (the data files and the
	// job and output files), or a temporary one for a device.
	base := p.Dir
	if r.target.Device {
		base = ""
	}
	workDir, err := os.MkdirTemp(base, "tunebench-fio-")
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "give a --dir you can write to", "cannot create the test directory under %s", p.Dir)
	}
	defer os.RemoveAll(workDir)
	if !r.target.Device {
		r.opts.Target = workDir
		if p.JobFile == "" {
			need := r.opts.PerJobSize() * int64(r.opts.Jobs)
			if free, err := fio.CheckSpace(workDir, need); errors.Is(err, fio.ErrNoSpace) {
				return nil, errs.Usage("lower --size", "the data set (%s) does not fit in the %s free under %s",
					fio.FormatSize(need), results.Human(float64(free))+"B", p.Dir)
			}
		}
	}
	if p.JobFile != "" {
		x.JobFilePath, x.JobFile = p.JobFile, r.jobText
		path := filepath.Join(workDir, "job.fio")
		if err := os.WriteFile(path, []byte(r.jobText), 0o600); err != nil {
			return nil, err
		}
		if err := bin.CheckJobFile(ctx, path); err != nil {
			return nil, errs.Usage("fix the job file (fio's message above)", "%v", err)
		}
	}

	// Page cache: drop before each test when asked and possible.
	dropPath := ""
	if r.env.Getenv != nil {
		dropPath = r.env.Getenv(EnvDropCachesFile)
	}
	if dropPath == "" {
		dropPath = fio.DropCachesPath
	}
	canDrop := false
	if p.DropCaches {
		var why string
		canDrop, why = fio.CanDropCaches(dropPath, os.Geteuid())
		if !canDrop {
			x.DropCaches.Note = why
			note("storage: caches will NOT be dropped before the tests: %s", why)
		}
	}

	env := envinfo.Take(ctx, envinfo.Options{DataDir: p.Dir, Version: r.env.Version})
	fsDesc := ""
	if env.DataDir != nil {
		fsDesc = fmt.Sprintf(", %s (%s)", env.DataDir.FSType, env.DataDir.Options)
	}
	sum := &results.Summary{SchemaVersion: results.SchemaVersion, StartedAt: time.Now().UTC(), Extra: x}
	if p.JobFile == "" {
		mode := "buffered"
		if p.Direct {
			mode = "direct I/O"
		}
		note("storage: %s, ioengine %s (%s), %s, %s blocks, %d job(s) x %s, %s per test, %d test(s) in %s%s",
			bin.Version, r.opts.IOEngine, x.IOEngineNote, mode, fio.FormatSize(r.opts.BlockSize), r.opts.Jobs,
			fio.FormatSize(r.opts.PerJobSize()), r.opts.Runtime, len(r.tests), r.opts.Target, fsDesc)
	} else {
		note("storage: %s, job file %s (%d job section(s)), running in %s%s", bin.Version, p.JobFile, len(fio.JobNames(r.jobText)), workDir, fsDesc)
	}

	var runErr error
	drop := func() bool {
		if !canDrop {
			return false
		}
		if err := fio.DropCaches(dropPath); err != nil {
			x.DropCaches.Note = err.Error()
			note("storage: dropping caches failed: %v", err)
			return false
		}
		return true
	}
	record := func(name string, res *fio.RunResult, dropped bool, jobText string) {
		if res == nil || res.Output == nil {
			return
		}
		for _, fr := range res.Output.Results() {
			if p.JobFile == "" {
				fr.Name = name // group_reporting: one result, named after the test
			}
			x.Tests = append(x.Tests, Test{Result: fr, JobFile: jobText, CachesDropped: dropped, ElapsedS: res.Elapsed.Seconds(), Interrupted: res.Interrupted})
			note("  %s", testLine(x.Tests[len(x.Tests)-1]))
		}
	}
	if p.JobFile == "" {
		for i, tt := range r.tests {
			jobText, err := fio.JobFile(tt, r.opts)
			if err != nil {
				return nil, errs.Usage("see tunebench storage --help", "%v", err)
			}
			dropped := drop()
			extra := ""
			if i == 0 && !r.target.Device {
				extra = fmt.Sprintf(" (fio first lays out %s of test files)", fio.FormatSize(r.opts.PerJobSize()*int64(r.opts.Jobs)))
			}
			note("[%d/%d] %s: %s for %s%s", i+1, len(r.tests), tt.Name, tt.Doc, r.opts.Runtime, extra)
			res, err := bin.Run(ctx, jobText, workDir, tt.Name)
			record(tt.Name, res, dropped, jobText)
			if err != nil {
				runErr = fioError(err, res, p.Direct)
				break
			}
			if res.Interrupted || ctx.Err() != nil {
				break
			}
		}
	} else {
		dropped := drop()
		note("[1/1] %s", p.JobFile)
		res, err := bin.RunFile(ctx, filepath.Join(workDir, "job.fio"), filepath.Join(workDir, "job.json"), workDir)
		record("", res, dropped, "")
		if err != nil {
			runErr = fioError(err, res, p.Direct)
		}
	}
	x.DropCaches.Done = p.DropCaches && canDrop && x.DropCaches.Note == ""
	x.IOPS = x.totalIOPS()
	sum.EndedAt = time.Now().UTC()
	sum.Interrupted = ctx.Err() != nil
	switch {
	case sum.Interrupted:
		sum.Status = store.StatusInterrupted
	case runErr != nil:
		sum.Status = store.StatusFailed
		x.Error = runErr.Error()
	default:
		sum.Status = store.StatusOK
		for _, t := range x.Tests {
			if t.Error != 0 {
				sum.Status = store.StatusErrors
			}
		}
	}
	if len(x.Tests) == 0 && runErr != nil {
		return nil, runErr // nothing measured: nothing to store
	}
	m := &workload.Measured{Summary: sum, Env: env}
	m.Exit = func(id int64) error {
		switch {
		case sum.Interrupted:
			return errs.New(errs.KindInterrupted, "", "storage run interrupted; partial result saved as run %d (status interrupted)", id)
		case runErr != nil:
			return runErr
		case sum.Status == store.StatusErrors:
			return errs.New(errs.KindRunErrors, "see fio's error numbers in the stored run", "fio reported job errors in run %d", id)
		}
		return nil
	}
	return m, nil
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
